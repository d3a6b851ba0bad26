"""The ``keras_saturation`` pixel stage on both engines (DALI's CPU pipeline and the TF engine),
checked against Keras' own ``RandomSaturation`` with the same factor, and its draws."""

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
            "transforms": [{"type": "keras_saturation", **transform}],
        }
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("u", "saturation_range"), [(0.3, (0, 255)), (-0.6, (0, 255)), (0.9, (0, 1)), (-1.0, (0, 1))]
)
def test_matches_keras_random_saturation(
    backend: str, square_dir: Path, square_image: np.ndarray, u: float, saturation_range: tuple
) -> None:
    import keras

    k = u / (1 - u + 1e-7)
    transform = {"type": "keras_saturation", "factor": u, "saturation_range": saturation_range}
    out = augment(backend, square_dir, [transform], params={"0.saturation": k})
    layer = keras.layers.RandomSaturation(abs(u), value_range=saturation_range)
    image = square_image[np.newaxis].astype(np.float32)
    expected = np.asarray(layer.transform_images(image, {"factor": np.float32([k])}))[0]
    np.testing.assert_allclose(out, np.clip(expected, 0, 255), atol=2e-3)


@pytest.mark.slow
def test_half_keeps_the_image_and_zero_makes_it_grey(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    """As in Keras: ``u = 0.5`` scales the saturation by 1, ``u = 0`` by 0 (every channel
    becomes the pixel's maximum)."""
    same = augment(backend, square_dir, [{"type": "keras_saturation", "factor": [0.5, 0.5]}])
    np.testing.assert_allclose(same, square_image, atol=2e-3)
    grey = augment(backend, square_dir, [{"type": "keras_saturation", "factor": 0.0}])
    np.testing.assert_allclose(grey, np.repeat(square_image.max(-1, keepdims=True), 3, -1))


def test_draws_follow_keras_factor_convention() -> None:
    """A number ``f`` draws ``u ~ U(-f, f)``, and the parameter is ``u / (1 - u + 1e-7)``."""
    rows = draw_rows(_config(factor=0.5).plan, np.random.default_rng(0), 20000)[:, 0]
    u = rows / (1 + rows)  # the inverse of k = u / (1 - u)
    assert u.min() >= -0.5 - 1e-5 and u.max() <= 0.5 + 1e-5
    assert abs(u.mean()) < 0.01 and abs(u.std() - 1 / np.sqrt(12)) < 0.01


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"factor": 1.5}, "factor"),
        ({"factor": 0.2, "saturation_range": [0, 5000]}, "saturation_range"),
        ({"factor": 0.2, "saturation_range": [1, 0]}, "saturation_range"),
    ],
)
def test_fields_are_bounded(fields: dict, where: str) -> None:
    with pytest.raises(ConfigError, match=rf"transforms\.0\.keras_saturation\.{where}"):
        _config(**fields)


def test_needs_three_channels() -> None:
    with pytest.raises(ConfigError, match="needs channels: 3"):
        load_config(
            {
                "source": {"type": "directory", "path": "."},
                "image_size": 8,
                "channels": 1,
                "transforms": [{"type": "keras_saturation", "factor": 0.2}],
            }
        )
