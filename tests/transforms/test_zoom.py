"""The ``zoom`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment
from tests.transforms.helpers import about_centre, inner, reference_warp


def test_zoom_magnifies_about_the_centre(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "zoom", "factor": [2, 2]}])
    expected = reference_warp(square_image, about_centre(np.diag([2.0, 2.0])), (64, 64))
    assert np.abs(inner(out - expected)).max() <= 1
