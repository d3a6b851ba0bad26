"""The ``center_crop`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_center_crop_takes_the_middle(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "center_crop", "size": [32, 16]}], size=[32, 16])
    assert np.array_equal(out, square_image[16:48, 24:40])
