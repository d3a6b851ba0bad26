"""The ``grayscale`` transform does what it says, on both backends (DALI's CPU pipeline and the
TF backend), checked against Keras' own ``RandomGrayscale`` layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import augment


def test_grayscale_is_keras_random_grayscale(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    import keras

    out = augment(backend, square_dir, [{"type": "grayscale", "probability": 1.0}])
    expected = keras.layers.RandomGrayscale(factor=1.0)(square_image[None].astype(np.float32))
    assert out.shape == square_image.shape
    np.testing.assert_allclose(out, np.asarray(expected)[0], atol=1e-3)


@pytest.mark.parametrize("drawn", [0.0, 1.0])
def test_grayscale_when_drawn(
    backend: str, square_dir: Path, square_image: np.ndarray, drawn: float
) -> None:
    out = augment(backend, square_dir, [{"type": "grayscale"}], params={"0.grey": drawn})
    grey = square_image @ np.array([0.2989, 0.587, 0.114])
    expected = np.repeat(grey[..., None], 3, axis=-1) if drawn else square_image
    np.testing.assert_allclose(out, expected, atol=1e-3)
