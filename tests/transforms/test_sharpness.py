"""The ``sharpness`` pixel stage on both engines (DALI on the CPU, TF), on photos, against PIL's
``ImageEnhance.Sharpness`` (torchvision's ``adjust_sharpness``), which rounds its smoothed image
to ``uint8`` and truncates the blend: up to ``1 + 0.5 |1 - f|`` apart."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageEnhance
from scipy import stats

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()


def test_sharpness_matches_pil(engine: str) -> None:
    factors = np.array([0.0, 0.5, 1.0, 1.8, 3.0, 0.2], np.float32)
    drawn = np.array([1, 1, 1, 1, 1, 0], np.float32)
    t = {"type": "sharpness", "factor": [0.0, 3.0]}
    out = run_arrays(engine, PHOTOS, [t], {"0.sharpness": drawn, "0.factor": factors})
    for x, y, f, on in zip(PHOTOS, out, factors, drawn, strict=True):
        if not on:
            np.testing.assert_array_equal(y, x)
            continue
        pil = np.asarray(ImageEnhance.Sharpness(Image.fromarray(x)).enhance(float(f)), np.float32)
        np.testing.assert_allclose(y, pil, atol=1 + 0.5 * abs(1 - f) + 1e-3)


def test_engines_agree() -> None:
    t = {"type": "sharpness", "factor": [0.0, 2.0], "probability": 0.7}
    dali, tf = (run_arrays(e, PHOTOS, [t]) for e in ("dali", "tf"))
    np.testing.assert_allclose(dali, tf, atol=1e-3)


def test_factor_is_uniform_and_probability_honoured() -> None:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "sharpness", "factor": [0.3, 1.7], "probability": 0.4}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert abs(rows[:, 0].mean() - 0.4) < 0.015
    factor = rows[:, 1]
    assert factor.min() >= 0.3 and factor.max() <= 1.7
    assert stats.kstest(factor, stats.uniform(0.3, 1.4).cdf).pvalue > 1e-4
