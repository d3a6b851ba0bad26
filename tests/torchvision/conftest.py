"""torchvision v2 for the tests of ``from_torchvision``, imported when a test asks for it."""

from __future__ import annotations

from typing import Any


def v2() -> Any:
    """``torchvision.transforms.v2``."""
    from torchvision.transforms import v2 as transforms

    return transforms
