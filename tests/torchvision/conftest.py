"""torchvision v2 for the tests of ``from_torchvision``, importable against the CPU torch
(:func:`tests.test_detection.torchvision_functional` declares the two ops its import needs)."""

from __future__ import annotations

from typing import Any

from tests.test_detection import torchvision_functional


def v2() -> Any:
    """``torchvision.transforms.v2``."""
    torchvision_functional()
    from torchvision.transforms import v2 as transforms

    return transforms
