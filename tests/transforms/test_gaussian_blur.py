"""The ``gaussian_blur`` pixel stage on both engines (DALI on the CPU, TF), on photos, against
SciPy's ``gaussian_filter`` (mirrored border, the kernel's radius), and its draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage, stats

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()


def scipy_blur(x: np.ndarray, sigma: float, size: int) -> np.ndarray:
    return np.stack(
        [
            ndimage.gaussian_filter(
                x[..., c].astype(np.float64), sigma, mode="mirror", radius=size // 2
            )
            for c in range(x.shape[-1])
        ],
        -1,
    )


@pytest.mark.parametrize("size", [3, 7])
def test_blur_matches_scipy(engine: str, size: int) -> None:
    sigmas = np.array([0.3, 1.0, 2.5, 4.0, 1.5, 1.0], np.float32)
    drawn = np.array([1, 1, 1, 1, 0, 1], np.float32)
    t = {"type": "gaussian_blur", "kernel_size": size, "sigma": [0.1, 5.0]}
    out = run_arrays(engine, PHOTOS, [t], {"0.blur": drawn, "0.sigma": sigmas})
    for x, y, s, on in zip(PHOTOS, out, sigmas, drawn, strict=True):
        expected = scipy_blur(x, float(s), size) if on else x
        np.testing.assert_allclose(y, expected, atol=2e-3)


def test_sigma_is_uniform_and_probability_honoured() -> None:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "gaussian_blur", "sigma": [0.5, 3.0], "probability": 0.6}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert abs(rows[:, 0].mean() - 0.6) < 0.015
    sigma = rows[:, 1]
    assert sigma.min() >= 0.5 and sigma.max() <= 3.0
    assert stats.kstest(sigma, stats.uniform(0.5, 2.5).cdf).pvalue > 1e-4


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kernel_size": 4}, "kernel_size must be odd"),
        ({"kernel_size": 17}, "smaller than twice"),
        ({"sigma": [2.0, 1.0]}, "low <= high"),
    ],
)
def test_bad_fields_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(
            {
                "source": {"type": "arrays"},
                "image_size": 8,
                "transforms": [{"type": "gaussian_blur", **fields}],
            }
        )
