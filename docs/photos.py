"""The photo the documentation's pictures show (matplotlib's sample photo of Grace Hopper,
shipped with matplotlib, which daliaug needs), with boxes, keypoints and a segmentation mask
placed on it by hand, as a detection sample in memory and a segmentation folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SIZE = (300, 256)
"""The photo's (height, width) in the pictures: the original's 600 x 512, halved."""
BOX_NAMES = ["face", "cap", "name tag", "ribbons"]
BOXES = np.array(
    [[150, 120, 375, 335], [175, 25, 372, 150], [78, 483, 168, 515], [322, 487, 455, 527]],
    np.float32,
)
"""Boxes (absolute ``xyxy`` on the 512 x 600 original), one per name of :data:`BOX_NAMES`."""
KEYPOINTS = np.array(
    [
        [[228, 200, 2], [318, 195, 2], [268, 262, 2]],  # the face's eyes and nose
        *[[[0, 0, 0]] * 3] * 3,  # the other boxes have none
    ],
    np.float32,
)
MASK_NAMES = ["background", "person", "flag"]
FLAG = [(0, 0), (232, 0), (192, 150), (160, 330), (60, 420), (0, 560)]
PERSON = [(20, 600), (40, 420), (150, 345), (160, 120), (180, 30), (260, 20), (370, 60)]
PERSON += [(372, 200), (350, 340), (470, 400), (512, 460), (512, 600)]
"""The mask's outlines on the 512 x 600 original: the flag, then the person over it."""


def photo() -> np.ndarray:
    """The photo, RGB uint8, :data:`SIZE`."""
    from matplotlib import cbook
    from PIL import Image

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        image = Image.open(f).convert("RGB")
    return np.asarray(image.resize(SIZE[::-1], Image.Resampling.BILINEAR))


def _scale() -> np.ndarray:
    return np.array([SIZE[1] / 512, SIZE[0] / 600], np.float32)


def detection_sample() -> tuple[np.ndarray, dict[str, Any]]:
    """The photo as a batch of one and its Keras ``bounding_boxes`` dict (``xyxy``, with
    keypoints), for ``make_dataset(config, x=..., y=...)``."""
    boxes = BOXES * np.tile(_scale(), 2)
    points = KEYPOINTS * np.array([*_scale(), 1.0], np.float32)
    targets = {
        "boxes": boxes[None],
        "labels": np.arange(len(BOXES))[None],
        "keypoints": points[None],
    }
    return photo()[None], targets


def mask() -> np.ndarray:
    """The photo's index mask (0 background, 1 person, 2 flag), :data:`SIZE`."""
    from PIL import Image, ImageDraw

    canvas = Image.new("L", (512, 600))
    draw = ImageDraw.Draw(canvas)
    draw.polygon(FLAG, fill=2)
    draw.polygon(PERSON, fill=1)
    return np.asarray(canvas.resize(SIZE[::-1], Image.Resampling.NEAREST))


def segmentation_folder(root: Path) -> dict[str, Any]:
    """The photo and its mask written under ``root`` as a segmentation source's folders; the
    source's config fields."""
    from PIL import Image

    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "masks").mkdir(parents=True, exist_ok=True)
    Image.fromarray(photo()).save(root / "images" / "hopper.jpg", quality=92)
    Image.fromarray(mask()).save(root / "masks" / "hopper.png")
    return {
        "type": "segmentation",
        "images": str(root / "images"),
        "masks": str(root / "masks"),
        "class_names": MASK_NAMES,
        "num_classes": len(MASK_NAMES),
    }


def detection_source() -> dict[str, Any]:
    """The fields of an ``arrays`` source of boxes named by :data:`BOX_NAMES`."""
    return {"type": "arrays", "boxes": True, "class_names": BOX_NAMES}
