"""Every stage's declared effect on each target kind (``effects``) is what it does: a kind it
follows has the map that moves it, and a stage that moves pixels follows or refuses boxes and
keypoints, measured on its own pixels (ARCHITECTURE: what each stage does to each target)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import daliaug
from daliaug.errors import BackendWarning
from daliaug.parity.examples import TRANSFORM_EXAMPLES
from daliaug.transforms import TRANSFORMS
from daliaug.transforms.base import (
    TARGET_KINDS,
    BatchTransform,
    GeometricTransform,
    PixelTransform,
    StageTransform,
)

STAGES = sorted(
    {name for name, cls in TRANSFORMS.items() if issubclass(cls, StageTransform)},
)


@pytest.mark.parametrize("name", STAGES)
def test_a_kind_that_follows_has_its_map(name: str) -> None:
    cls = TRANSFORMS[name]
    effects = cls.effects
    assert {f for f in ("masks", "boxes", "keypoints")} == set(TARGET_KINDS)
    if issubclass(cls, PixelTransform):
        maps = {"masks": "masks", "boxes": "points", "keypoints": "points"}
        base = PixelTransform
    else:
        assert issubclass(cls, BatchTransform)
        maps = {"masks": "targets", "boxes": "boxes", "keypoints": "boxes"}
        base = BatchTransform
    for kind, method in maps.items():
        own = getattr(cls, method) is not getattr(base, method)
        if effects.of(kind) == "follows":
            assert own, f"{name} says {kind} follow it but has no {method}"
    if issubclass(cls, BatchTransform):
        assert effects.masks != "keeps" and effects.boxes != "keeps"  # it mixes samples


def dots() -> np.ndarray:
    """Four grey 64x64 images with 49 one-pixel white dots on a grid."""
    images = np.full((4, 64, 64, 3), 90, np.uint8)
    images[:, 8:57:8, 8:57:8] = 250
    return images


def in_place(images: np.ndarray) -> float:
    """The share of the dots still at their own pixels: each the peak of its 5x5
    neighbourhood's distance from the image's median, by at least 8 grey levels."""
    mode = np.median(images.reshape(len(images), -1, 3), axis=1)[:, None, None]
    away = np.abs(images.astype(np.float32) - mode).max(axis=-1)
    kept = [
        away[:, y, x] >= max(8.0, 0.6 * away[:, y - 2 : y + 3, x - 2 : x + 3].max())
        for y in range(8, 57, 8)
        for x in range(8, 57, 8)
    ]
    return float(np.mean(kept))


PIXEL_EXAMPLES = {
    e["type"]: {**e, "probability": 1.0} if "probability" in e else e
    for e in TRANSFORM_EXAMPLES
    if issubclass(cls := TRANSFORMS[e["type"]], PixelTransform)
    and not issubclass(cls, GeometricTransform)  # policies: their geometry is the warp's
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PIXEL_EXAMPLES))
def test_a_stage_that_moves_pixels_moves_boxes_or_refuses_them(name: str) -> None:
    """A stage that keeps boxes leaves at least half of the dots where they were (an erasure
    may cover some); one that follows or refuses them moves most."""
    config = {
        "source": {"type": "arrays"},
        "image_size": [64, 64],
        "batch_size": 4,
        "shuffle": False,
        "seed": 3,
        "backend": "tf" if "cpu" in TRANSFORMS[name].dali_lacks else "cpu",
        "transforms": [PIXEL_EXAMPLES[name]],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        dataset = daliaug.make_dataset(config, x=dots(), y=np.zeros(4, np.int64))
    images = np.asarray(next(iter(dataset))[0])
    share = in_place(np.clip(images, 0, 255))
    effects = TRANSFORMS[name].effects
    if effects.boxes == "keeps" and effects.keypoints == "keeps":
        assert share >= 0.5, f"{name} keeps boxes but moved {1 - share:.0%} of the dots"
    else:
        assert share < 0.9, f"{name} moves boxes but left {share:.0%} of the dots in place"
