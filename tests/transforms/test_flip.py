"""The ``flip`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import augment


@pytest.mark.parametrize(
    ("flips", "expected"),
    [
        ((1.0, 0.0), lambda a: a[:, ::-1]),
        ((0.0, 1.0), lambda a: a[::-1]),
        ((1.0, 1.0), lambda a: a[::-1, ::-1]),
    ],
)
def test_flip_mirrors(
    backend: str, square_dir: Path, square_image: np.ndarray, flips, expected
) -> None:
    out = augment(
        backend, square_dir, [{"type": "flip", "horizontal": flips[0], "vertical": flips[1]}]
    )
    assert np.array_equal(out, expected(square_image))
