"""The ``normalize`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_normalize_mean_std_and_rescale(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]
    out = augment(backend, square_dir, [{"type": "normalize", "mean": mean, "std": std}])
    assert np.allclose(out, (square_image - mean) / std, atol=1e-4)
    scaled = augment(backend, square_dir, [], output={"rescale": 1 / 255})
    assert np.allclose(scaled, square_image / 255, atol=1e-5)
