"""The ``equalize`` pixel stage on both engines (DALI on the CPU, TF), on photos, against Keras'
own ``Equalization`` layer applied to one image at a time (OpenCV's table, DALI's
``fn.equalize``; PIL's ``ImageOps.equalize`` rounds its table otherwise, see the docstring)."""

from __future__ import annotations

import numpy as np

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()


def keras_equalized(images: np.ndarray) -> np.ndarray:
    import keras

    layer = keras.layers.Equalization(value_range=(0, 255))
    return np.stack([np.asarray(layer(x[None].astype(np.float32)))[0] for x in images])


def test_equalize_matches_keras_per_image(engine: str) -> None:
    drawn = np.array([1, 1, 0, 1, 1, 0], np.float32)
    out = run_arrays(engine, PHOTOS, [{"type": "equalize"}], {"0.equalize": drawn})
    expected = np.where(drawn[:, None, None, None] > 0, keras_equalized(PHOTOS), PHOTOS)
    np.testing.assert_array_equal(out, expected)


def test_flat_channel_is_kept() -> None:
    flat = np.full((2, 8, 8, 3), 77, np.uint8)
    for engine in ("dali", "tf"):
        out = run_arrays(engine, flat, [{"type": "equalize"}], {"0.equalize": 1.0})
        np.testing.assert_array_equal(out, flat)


def test_equalize_draws_its_probability() -> None:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "equalize", "probability": 0.7}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert set(np.unique(rows)) == {0.0, 1.0}
    assert abs(rows.mean() - 0.7) < 0.015
