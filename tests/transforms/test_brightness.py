"""The ``brightness`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_brightness_scales(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(backend, square_dir, [{"type": "brightness", "factor": [0.5, 0.5]}])
    assert np.abs(out - square_image * 0.5).max() <= 0.5 + 1e-6
