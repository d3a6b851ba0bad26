"""The ``shear`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment
from tests.transforms.helpers import about_centre, inside, reference_warp


def test_shear_moves_lower_rows_right(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "shear", "angle": [20, 20]}])
    forward = about_centre(np.array([[1, np.tan(np.deg2rad(20))], [0, 1]]))
    diff = np.abs(out - reference_warp(square_image, forward, (64, 64)))
    diff = diff[inside(forward)]
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995
