"""The ``keras_center_crop`` transform: Keras' floor-centred window, and its aspect-preserving
resize where the image is smaller than the window; pixels on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.transforms.keras_center_crop import KerasCenterCrop
from tests.helpers import augment


@pytest.mark.parametrize(
    ("canvas", "size", "box"),
    [
        ((64, 64), (41, 30), (11, 17, 41, 30)),  # odd spare rows: floor(23 / 2)
        ((50, 80), (50, 80), (0, 0, 50, 80)),
        ((40, 100), (48, 32), (0, 37, 40, 26)),  # too short: the largest 48:32 window
        ((100, 40), (30, 60), (40, 0, 20, 40)),
    ],
)
def test_windows_are_keras(canvas, size, box) -> None:
    crop = KerasCenterCrop(size=size)
    found = crop.crop_box({}, Canvas(*np.array([canvas], np.float32).T), NUMPY.math)
    assert [float(np.asarray(v).item()) for v in found] == list(box)


def test_the_window_is_cut_out(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    crop = {"type": "keras_center_crop", "size": [41, 30]}
    out = augment(backend, square_dir, [crop], size=(41, 30))
    assert np.array_equal(out, square_image[11:52, 17:47])
