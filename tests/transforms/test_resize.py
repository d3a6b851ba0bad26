"""The ``resize`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment, structured_image, write_image_dir


def test_resize_halves_by_averaging(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "resize", "size": 32}], size=32)
    expected = square_image.reshape(32, 2, 32, 2, 3).mean(axis=(1, 3))
    assert np.abs(out - expected).max() <= 0.5 + 1e-6


def test_shorter_side_resize_keeps_aspect(backend: str, tmp_path: Path) -> None:
    wide = structured_image(40, 80)
    root = write_image_dir(tmp_path, {"a": [wide]})
    # shorter side 20 -> 20x40; then the centre 20x20 window
    out = augment(
        backend,
        root,
        [{"type": "resize", "shorter_side": 20}, {"type": "center_crop", "size": 20}],
        size=20,
    )
    expected = wide.reshape(20, 2, 40, 2, 3).mean(axis=(1, 3))[:, 10:30]
    assert np.abs(out - expected).max() <= 0.5 + 1e-6
