"""The ``posterize`` pixel stage on both engines (DALI on the CPU, TF), on photos, against PIL's
``ImageOps.posterize`` (torchvision's ``RandomPosterize``) and Keras' ``RandomPosterization``."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageOps

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()


@pytest.mark.parametrize("bits", [1, 4, 8])
def test_posterize_matches_pil(engine: str, bits: int) -> None:
    drawn = np.array([1, 0, 1, 1, 0, 1], np.float32)
    t = {"type": "posterize", "bits": bits}
    out = run_arrays(engine, PHOTOS, [t], {"0.posterize": drawn})
    pil = np.stack([np.asarray(ImageOps.posterize(Image.fromarray(x), bits)) for x in PHOTOS])
    expected = np.where(drawn[:, None, None, None] > 0, pil, PHOTOS)
    np.testing.assert_array_equal(out, expected)


def test_posterize_matches_keras() -> None:
    import keras

    layer = keras.layers.RandomPosterization(factor=(3, 3), value_range=(0, 255))
    keras_out = np.asarray(layer(PHOTOS.astype(np.float32), training=True))
    out = run_arrays("tf", PHOTOS, [{"type": "posterize", "bits": 3}], {"0.posterize": 1.0})
    np.testing.assert_allclose(out, keras_out, atol=1e-4)


def test_posterize_draws_its_probability() -> None:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "posterize", "bits": 2, "probability": 0.3}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert set(np.unique(rows)) == {0.0, 1.0}
    assert abs(rows.mean() - 0.3) < 0.015
