"""The ``keras_solarization`` pixel stage on both engines (DALI's CPU pipeline and the TF
engine), checked against Keras' own ``Solarization`` with the same addition and threshold, and
its draws."""

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
            "transforms": [{"type": "keras_solarization", **transform}],
        }
    )


@pytest.mark.parametrize(("addition", "threshold"), [(0.0, 0.0), (0.0, 128.0), (70.0, 200.0)])
def test_matches_keras_solarization(
    backend: str, square_dir: Path, square_image: np.ndarray, addition: float, threshold: float
) -> None:
    import keras

    transform = {"type": "keras_solarization", "addition": [0, 255], "threshold": [0, 255]}
    params = {"0.addition": addition, "0.threshold": threshold}
    out = augment(backend, square_dir, [transform], params=params)
    pinned = {
        "additions": np.full((1, 1, 1, 1), addition, np.float32),
        "thresholds": np.full((1, 1, 1, 1), threshold, np.float32),
    }
    image = square_image[np.newaxis].astype(np.float32)
    expected = np.asarray(keras.layers.Solarization().transform_images(image, pinned))[0]
    np.testing.assert_allclose(out, expected, atol=1e-3)


def test_draws_its_ranges() -> None:
    rows = draw_rows(
        _config(addition=[10, 20], threshold=[100, 200]).plan, np.random.default_rng(0), 20000
    )
    for column, (low, high) in zip(rows.T, ((10, 20), (100, 200)), strict=True):
        assert column.min() >= low and column.max() <= high
        assert abs(column.mean() - (low + high) / 2) < 0.01 * (high - low) + 0.1


@pytest.mark.parametrize("field", ["addition", "threshold"])
def test_ranges_are_bounded(field: str) -> None:
    with pytest.raises(ConfigError, match=rf"transforms\.0\.keras_solarization\.{field}"):
        _config(**{field: [0, 300]})
