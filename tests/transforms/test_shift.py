"""The ``shift`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_shift_moves_content(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(
        backend, square_dir, [{"type": "shift", "x": [0.25, 0.25], "y": [-0.125, -0.125]}]
    )
    assert np.array_equal(out[:56, 16:], square_image[8:, :48])
    assert np.all(out[:, :16] == 0) and np.all(out[56:] == 0)
