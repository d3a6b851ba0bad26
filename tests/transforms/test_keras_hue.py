"""The ``keras_hue`` pixel stage on both engines (DALI's CPU pipeline and the TF engine),
checked against Keras' own ``RandomHue`` with the same hue shift, and its draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from tests.helpers import augment


def _config(**transform: object):
    return load_config(
        {
            "source": {"type": "directory", "path": "."},
            "image_size": 8,
            "transforms": [{"type": "keras_hue", **transform}],
        }
    )


@pytest.mark.parametrize("shift", [0.1, -0.25, 0.5, -0.5, 0.0])
def test_matches_keras_random_hue(
    backend: str, square_dir: Path, square_image: np.ndarray, shift: float
) -> None:
    import keras

    out = augment(
        backend, square_dir, [{"type": "keras_hue", "factor": 1.0}], params={"0.hue": shift}
    )
    layer = keras.layers.RandomHue(1.0)
    image = square_image[np.newaxis].astype(np.float32)
    expected = np.asarray(layer.transform_images(image, {"factor": np.float32([shift])}))[0]
    np.testing.assert_allclose(out, expected, atol=2e-3)


def test_draws_a_sign_and_half_the_factor() -> None:
    """Keras: ``shift = s * u / 2`` with ``s = ±1`` equally likely and ``u ~ U(factor)``; a
    number ``f`` means ``[0, f]``."""
    rows = draw_rows(_config(factor=[0.2, 0.6]).plan, np.random.default_rng(0), 20000)[:, 0]
    assert abs(np.mean(rows > 0) - 0.5) < 0.015
    assert np.abs(rows).min() >= 0.1 - 1e-6 and np.abs(rows).max() <= 0.3 + 1e-6
    assert _config(factor=0.4).transforms[0].factor == (0.0, 0.4)


@pytest.mark.parametrize("factor", [1.5, [-0.2, 0.3], [0.5, 0.2]])
def test_factor_is_bounded(factor: object) -> None:
    with pytest.raises(ConfigError, match=r"transforms\.0\.keras_hue\.factor"):
        _config(factor=factor)
