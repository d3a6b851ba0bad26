"""The ``keras_shear`` transform: both shears about the top-left pixel with one random sign, on
both backends, checked against SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.plan import Plan
from daliaug.transforms.keras_shear import KerasShear
from tests.helpers import augment, config_for
from tests.transforms.helpers import inside, reference_warp


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_shear_samples_x_plus_sx_y_and_y_plus_sy_x(
    backend: str, square_dir: Path, square_image: np.ndarray, sign: float
) -> None:
    shear = {"type": "keras_shear", "x_factor": 0.3, "y_factor": 0.2}
    out = augment(
        backend, square_dir, [shear], params={"0.sign": sign, "0.shear_x": 0.3, "0.shear_y": -0.1}
    )
    # index (x, y) samples (x + s*sx*y, y + s*sy*x): in corner coordinates about (0.5, 0.5)
    sampled = np.array([[1, sign * 0.3, 0], [sign * -0.1, 1, 0], [0, 0, 1]])
    centre = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
    forward = np.linalg.inv(centre @ sampled @ np.linalg.inv(centre))[:2]
    expected = reference_warp(square_image, forward, (64, 64))
    assert np.abs(out - expected)[inside(forward, 1.5)].max() <= 1


def test_sign_is_a_fair_coin_and_factors_uniform() -> None:
    plan = Plan.of([KerasShear(x_factor=(0.1, 0.2), y_factor=0.3)], (8, 8))
    rows = draw_rows(plan, np.random.default_rng(0), 20_000)
    assert set(np.unique(rows[:, 0])) == {-1.0, 1.0} and abs(rows[:, 0].mean()) < 0.03
    assert rows[:, 1].min() >= 0.1 and rows[:, 1].max() <= 0.2
    assert rows[:, 2].min() >= -0.3 and rows[:, 2].max() <= 0.3


def test_factors_that_can_flatten_the_image_are_refused(square_dir: Path) -> None:
    with pytest.raises(ConfigError, match="shear the image flat"):
        config_for(square_dir, transforms=[{"type": "keras_shear", "x_factor": 1, "y_factor": 1}])
