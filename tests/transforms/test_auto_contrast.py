"""The ``auto_contrast`` pixel stage on both engines (DALI on the CPU, TF), on photos, against
PIL's ``ImageOps.autocontrast`` (torchvision's ``RandomAutocontrast``; PIL truncates to
``uint8``, daliaug does not) and Keras' ``AutoContrast``."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageOps

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()


def test_auto_contrast_matches_pil(engine: str) -> None:
    drawn = np.array([1, 0, 1, 1, 1, 0], np.float32)
    out = run_arrays(engine, PHOTOS, [{"type": "auto_contrast"}], {"0.auto_contrast": drawn})
    pil = np.stack([np.asarray(ImageOps.autocontrast(Image.fromarray(x))) for x in PHOTOS])
    on = drawn > 0
    np.testing.assert_array_equal(out[~on], PHOTOS[~on])
    gap = out[on] - pil[on]  # PIL truncates x * scale + offset to uint8
    assert gap.min() >= -1e-3 and gap.max() <= 1.0 + 1e-3
    lows, highs = out[on].min(axis=(1, 2)), out[on].max(axis=(1, 2))
    assert lows.max() == 0 and highs.min() >= 255 - 1e-4  # (max - min) * (255 / (max - min))


def test_auto_contrast_matches_keras() -> None:
    import keras

    keras_out = np.asarray(
        keras.layers.AutoContrast(value_range=(0, 255))(PHOTOS.astype(np.float32))
    )
    out = run_arrays("tf", PHOTOS, [{"type": "auto_contrast"}], {"0.auto_contrast": 1.0})
    np.testing.assert_allclose(out, keras_out, atol=1e-3)


def test_flat_channel_is_kept() -> None:
    flat = np.full((2, 8, 8, 3), 77, np.uint8)
    for engine in ("dali", "tf"):
        out = run_arrays(engine, flat, [{"type": "auto_contrast"}], {"0.auto_contrast": 1.0})
        np.testing.assert_array_equal(out, flat)


def test_auto_contrast_draws_its_probability() -> None:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "auto_contrast", "probability": 0.25}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert set(np.unique(rows)) == {0.0, 1.0}
    assert abs(rows.mean() - 0.25) < 0.015
