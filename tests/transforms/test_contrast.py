"""The ``contrast`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_contrast_stretches_about_mid_grey(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "contrast", "factor": [1.5, 1.5]}])
    expected = np.clip((square_image - 128.0) * 1.5 + 128.0, 0, 255)
    assert np.abs(out - expected).max() <= 0.5 + 1e-6
