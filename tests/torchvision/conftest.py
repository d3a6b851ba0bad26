"""torchvision v2 for the tests of ``from_torchvision``, importable against the CPU torch
(:func:`tests.test_detection.torchvision_functional` declares the two ops its import needs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.helpers import sample_photos
from tests.test_detection import torchvision_functional


def v2() -> Any:
    """``torchvision.transforms.v2``."""
    torchvision_functional()
    from torchvision.transforms import v2 as transforms

    return transforms


def photos(h: int = 48, w: int = 64) -> np.ndarray:
    """The sample photos, whole and their left halves, resized (bilinear) to ``h x w``:
    ``(4, h, w, 3)`` uint8."""
    from PIL import Image

    out = []
    for image in sample_photos():
        for part in (image, image[:, : image.shape[1] // 2]):
            small = Image.fromarray(part).resize((w, h), Image.Resampling.BILINEAR)
            out.append(np.asarray(small))
    return np.stack(out)
