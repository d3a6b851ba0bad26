"""The ``color_degeneration`` transform does what Keras' ``RandomColorDegeneration`` does, on
both backends (DALI's CPU pipeline and the TF backend), checked against Keras' own layer, and
reads its ``factor`` as Keras' code does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.errors import ConfigError
from tests.helpers import augment


@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, -0.7])
def test_color_degeneration_is_keras(
    backend: str, square_dir: Path, square_image: np.ndarray, factor: float
) -> None:
    import keras

    transform = {"type": "color_degeneration", "factor": [factor, factor]}
    out = augment(backend, square_dir, [transform])
    layer = keras.layers.RandomColorDegeneration(factor=(factor, factor))
    expected = np.asarray(layer(square_image[None].astype(np.float32)))[0]
    np.testing.assert_allclose(out, expected, atol=1e-3)


def _factor(value: object) -> tuple[float, float]:
    transform = {"type": "color_degeneration", "factor": value}
    config = load_config({"source": {"type": "arrays"}, "image_size": 8, "transforms": [transform]})
    return config.transforms[0].factor


def test_factor_reads_like_keras() -> None:
    import keras

    assert _factor(0.3) == (-0.3, 0.3) == keras.layers.RandomColorDegeneration(0.3).factor
    assert _factor([0.2, 0.8]) == (0.2, 0.8)
    with pytest.raises(
        ConfigError, match=r"transforms\.0\.color_degeneration\.factor: factors must lie within"
    ):
        _factor(1.5)
