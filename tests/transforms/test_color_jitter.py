"""The ``color_jitter`` transform (torchvision's ``ColorJitter``): its draws (every order of
the given factors equally likely), its fields, and ``clip: once`` against ``clip: each`` on
both engines. Its pixels against torchvision's own, on every engine, are in
tests/torchvision/test_from_torchvision.py."""

from __future__ import annotations

from itertools import permutations
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
            "transforms": [{"type": "color_jitter", **transform}],
        }
    )


def test_draws_each_order_of_the_given_factors_equally_often() -> None:
    config = _config(brightness=0.4, contrast=[0.5, 0.7], hue=0.1)
    jitter = config.transforms[0]
    assert jitter.given == ("brightness", "contrast", "hue")
    rows = draw_rows(config.plan, np.random.default_rng(0), 12000)
    keys = [k.partition(".")[2] for k in config.plan.param_keys]
    p = {k: rows[:, i] for i, k in enumerate(keys)}
    flags = np.array([[p[f"{j}_{n}"] for n in jitter.given] for j in range(3)]).transpose(2, 0, 1)
    assert np.all(flags.sum(axis=2) == 1) and np.all(flags.sum(axis=1) == 1)  # permutations
    orders = [tuple(row) for row in np.argmax(flags, axis=2)]
    counts = {o: orders.count(o) / len(orders) for o in permutations(range(3))}
    assert all(abs(share - 1 / 6) < 0.015 for share in counts.values()), counts
    assert p["brightness"].min() >= 0.6 - 1e-6 and p["brightness"].max() <= 1.4 + 1e-6
    assert p["hue"].min() >= -0.1 - 1e-6 and p["hue"].max() <= 0.1 + 1e-6
    assert p["contrast"].min() >= 0.5 - 1e-6 and p["contrast"].max() <= 0.7 + 1e-6


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({}, "give at least one"),
        ({"hue": 0.6}, "hue"),
        ({"hue": 0.1, "clip": "once"}, "clip: once joins the colour pass"),
        ({"saturation": [2.0, 1.0]}, "saturation"),
    ],
)
def test_fields_are_checked(fields: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        _config(**fields)


def test_clip_once_is_clip_each_where_no_factor_leaves_the_range(
    backend: str, square_dir: Path
) -> None:
    """Factors at most 1 keep every value within 0..255, so the one clip and the order change
    nothing: the colour pass gives the pixel stage's pixels."""
    fields = {"brightness": [0.7, 0.7], "contrast": [0.6, 0.6], "saturation": [0.5, 0.5]}
    each = augment(backend, square_dir, [{"type": "color_jitter", **fields}], size=16)
    once = augment(
        backend, square_dir, [{"type": "color_jitter", **fields, "clip": "once"}], size=16
    )
    np.testing.assert_allclose(once, each, atol=1e-3)
    assert not np.allclose(each, augment(backend, square_dir, [], size=16), atol=1.0)


def test_probability_applies_all_factors_or_none() -> None:
    """``RandomApply([ColorJitter(...)], p)``: not applied, every factor is the identity and no
    slot runs."""
    config = _config(brightness=0.4, hue=0.2, probability=0.3)
    rows = draw_rows(config.plan, np.random.default_rng(1), 8000)
    keys = [k.partition(".")[2] for k in config.plan.param_keys]
    p = {k: rows[:, i] for i, k in enumerate(keys)}
    idle = sum(p[f"0_{n}"] for n in ("brightness", "hue")) == 0
    assert abs(idle.mean() - 0.7) < 0.02
    assert np.all(p["brightness"][idle] == 1.0) and np.all(p["hue"][idle] == 0.0)
