"""The ``keras_resize`` transform: Keras' ``Resizing`` with ``crop_to_aspect_ratio`` (the
largest centred window of the target's aspect) or ``pad_to_aspect_ratio`` (padded with the
fill); windows checked by hand, pixels on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.transforms.keras_resize import KerasResize
from tests.helpers import augment


@pytest.mark.parametrize(
    ("aspect", "canvas", "size", "box"),
    [
        ("crop", (64, 64), (32, 16), (0, 16, 64, 32)),
        ("crop", (375, 500), (224, 224), (0, 62, 375, 375)),
        ("pad", (64, 64), (32, 16), (-32, 0, 128, 64)),
        ("pad", (375, 500), (224, 224), (-62, 0, 499, 500)),  # Keras pads 62 on each side
    ],
)
def test_windows_are_keras(aspect: str, canvas, size, box) -> None:
    resize = KerasResize(size=size, aspect=aspect)
    found = resize.crop_box({}, Canvas(*np.array([canvas], np.float32).T), NUMPY.math)
    assert [float(np.asarray(v).item()) for v in found] == list(box)


def test_crop_keeps_the_middle_and_pad_fills_the_sides(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    crop = augment(backend, square_dir, [{"type": "keras_resize", "size": 64, "aspect": "crop"}])
    assert np.array_equal(crop, square_image)
    pad = {"type": "keras_resize", "size": [32, 64], "aspect": "pad", "fill": 9}
    out = augment(backend, square_dir, [pad], size=(32, 64))
    assert np.all(out[:, :15] == 9) and np.all(out[:, -15:] == 9)
    assert np.abs(out[:, 18:-18].mean() - square_image[:, 8:-8].mean()) < 3
