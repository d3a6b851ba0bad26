"""The ``invert`` transform does what it says, on both backends (DALI's CPU pipeline and the
TF backend), checked against PIL's ``ImageOps.invert``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from tests.helpers import augment


@pytest.mark.parametrize("drawn", [0.0, 1.0])
def test_invert_when_drawn(
    backend: str, square_dir: Path, square_image: np.ndarray, drawn: float
) -> None:
    out = augment(backend, square_dir, [{"type": "invert"}], params={"0.invert": drawn})
    inverted = np.asarray(ImageOps.invert(Image.fromarray(square_image)))
    np.testing.assert_allclose(out, inverted if drawn else square_image, atol=1e-3)


def test_invert_always(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(backend, square_dir, [{"type": "invert", "probability": 1.0}])
    np.testing.assert_allclose(out, 255.0 - square_image, atol=1e-3)
