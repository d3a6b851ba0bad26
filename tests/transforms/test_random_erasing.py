"""The ``random_erasing`` pixel stage on both engines (DALI on the CPU, TF), on photos: the box
follows the draws (area, aspect ratio, corner in output pixels), the pixels outside it are
untouched, the fill is the configured one, and the engines agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from daliaug.config import load_config
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()
H, W = PHOTOS.shape[1:3]


def reference_box(row: dict[str, float], h_img: int, w_img: int) -> tuple[int, int, int, int]:
    """torchvision's box from one sample's draws (in float64), cut to the image."""
    area = row["area"] * h_img * w_img
    ratio = math.exp(row["log_ratio"])
    h = min(math.floor(math.sqrt(area * ratio) + 0.5), h_img) * int(row["erase"])
    w = min(math.floor(math.sqrt(area / ratio) + 0.5), w_img) * int(row["erase"])
    return math.floor(row["y"] * (h_img - h + 1)), math.floor(row["x"] * (w_img - w + 1)), h, w


def transform(**fields: object) -> dict:
    return {"type": "random_erasing", "scale": [0.02, 0.6], "ratio": [0.3, 3.3], **fields}


def config(**fields: object):
    return load_config(
        {"source": {"type": "arrays"}, "image_size": [H, W], "transforms": [transform(**fields)]}
    )


@pytest.mark.parametrize("value", [17.0, [10.0, 200.0, 90.0], "random"])
def test_box_and_fill_follow_the_draws(engine: str, value: object) -> None:
    cfg = config(probability=0.8, value=value)
    rows = draw_rows(cfg.plan, np.random.default_rng(4), len(PHOTOS))
    keys = [k.split(".")[1] for k in cfg.plan.param_keys]
    params = dict(zip(cfg.plan.param_keys, rows.T, strict=True))
    out = run_arrays(engine, PHOTOS, [transform(probability=0.8, value=value)], params)
    erased = 0
    for x, y, row in zip(PHOTOS, out, rows, strict=True):
        y0, x0, h, w = reference_box(dict(zip(keys, row.astype(np.float64), strict=True)), H, W)
        inside = np.zeros((H, W), bool)
        inside[y0 : y0 + h, x0 : x0 + w] = True
        np.testing.assert_array_equal(y[~inside], x[~inside])
        fill = [row[keys.index("fill")]] * 3 if value == "random" else value
        np.testing.assert_array_equal(y[inside], np.broadcast_to(fill, y[inside].shape))
        erased += inside.any()
    assert erased >= 3  # the draws (seed 4) erase most samples


def test_engines_agree() -> None:
    t = transform(probability=0.9, value="random")
    np.testing.assert_array_equal(run_arrays("dali", PHOTOS, [t]), run_arrays("tf", PHOTOS, [t]))


def test_area_and_aspect_match_the_draws() -> None:
    """Over many draws: the box lies in the image, erases with the configured probability,
    and its area and aspect ratio are the drawn ones up to rounding to whole pixels."""
    cfg = config(probability=0.4, scale=[0.05, 0.3], ratio=[0.5, 2.0])
    t = cfg.transforms[0]
    rows = draw_rows(cfg.plan, np.random.default_rng(0), 20000)
    p = dict(zip(t.params, rows.T, strict=True))
    box = t.stage(p, (H, W), NUMPY.math)
    h, w, y0, x0 = box["h"], box["w"], box["y0"], box["x0"]
    assert (y0 >= 0).all() and (x0 >= 0).all() and (y0 + h <= H).all() and (x0 + w <= W).all()
    on = h * w > 0
    np.testing.assert_array_equal(on, p["erase"] > 0)
    assert abs(on.mean() - 0.4) < 0.015
    target = p["area"][on] * H * W
    assert (np.abs(h[on] * w[on] - target) <= 0.5 * (h[on] + w[on]) + 0.25).all()
    aspect = np.log(h[on] / w[on]) - p["log_ratio"][on]
    assert np.abs(aspect).max() <= 0.5 / h[on].min() + 0.5 / w[on].min()
    assert stats.kstest(p["area"], stats.uniform(0.05, 0.25).cdf).pvalue > 1e-4
    assert stats.kstest(p["log_ratio"], stats.uniform(math.log(0.5), math.log(4)).cdf).pvalue > 1e-4
    # the corner is uniform over the positions where the box fits
    assert stats.kstest(p["y"], stats.uniform(0, 1).cdf).pvalue > 1e-4


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value": [1.0, 2.0]}, "2 values for 3 channels"),
        ({"value": 300}, "value"),
        ({"scale": [0.5, 1.5]}, "area fractions"),
        ({"ratio": [0.0, 2.0]}, "ratio"),
    ],
)
def test_bad_fields_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**fields)
