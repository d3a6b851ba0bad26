"""The ``saturation`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_saturation_zero_is_luma_grey(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "saturation", "factor": [0, 0]}])
    luma = square_image @ np.array([0.299, 0.587, 0.114])
    assert np.abs(out - luma[..., None]).max() <= 0.5 + 1e-6
