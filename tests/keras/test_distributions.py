"""``get_random_transform`` (and so the pipelines, which draw from the same plan) draws each of
Keras' parameters from Keras' own distribution: daliaug's draws against Keras' own class's,
two-sample tests per parameter at a false-alarm rate of about 1e-6 each, fresh seeds each run
(printed on failure)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from daliaug.epoch import resolve_seed
from tests.keras.conftest import daliaug_generator, keras_generator

N = 3000
ALPHA = 1e-6
SHAPE = (30, 50, 3)
CASES = {
    "uniform": {
        "rotation_range": 35,
        "width_shift_range": 0.2,
        "height_shift_range": 0.1,
        "shear_range": 25,
        "zoom_range": [0.7, 1.2],
        "horizontal_flip": True,
        "vertical_flip": True,
        "channel_shift_range": 30.0,
        "brightness_range": [0.5, 1.5],
    },
    "pixels": {"width_shift_range": 6.5, "height_shift_range": 4, "zoom_range": 0.3},
    "choices": {"width_shift_range": [0.05, 0.1, 0.3], "height_shift_range": [2, 5]},
    "off": {},
}


def draws(generator: object, seed: int) -> dict[str, np.ndarray]:
    np.random.seed(seed)
    rows = [generator.get_random_transform(SHAPE) for _ in range(N)]
    return {k: np.array([np.nan if r[k] is None else float(r[k]) for r in rows]) for k in rows[0]}


@pytest.mark.parametrize("case", CASES)
def test_parameters_follow_keras_distributions(case: str) -> None:
    seed = resolve_seed(None)
    ours = draws(daliaug_generator(**CASES[case]), seed)
    theirs = draws(keras_generator(**CASES[case]), seed + 1)
    assert set(ours) == set(theirs)
    for key in theirs:
        a, b = ours[key], theirs[key]
        where = f"{case}: {key}, seed {seed}"
        if np.isnan(b).all() or np.unique(b).size == 1:  # unset, or constant
            assert np.array_equal(a, b, equal_nan=True), where
            continue
        values = np.union1d(np.unique(a), np.unique(b))
        if values.size <= 12:  # discrete: flips, choices times a sign
            assert np.allclose(np.unique(a), np.unique(b)), where
            table = [[np.sum(np.isclose(x, v)) for v in values] for x in (a, b)]
            assert stats.chi2_contingency(table).pvalue > ALPHA, where
        else:
            assert stats.ks_2samp(a, b).pvalue > ALPHA, where
            assert a.min() >= b.min() - 0.05 * np.ptp(b) and a.max() <= b.max() + 0.05 * np.ptp(b)


def test_seed_repeats_and_global_seed_repeats() -> None:
    generator = daliaug_generator(rotation_range=30, horizontal_flip=True)
    assert generator.get_random_transform(SHAPE, seed=3) == generator.get_random_transform(
        SHAPE, seed=3
    )
    np.random.seed(9)
    first = generator.get_random_transform(SHAPE)
    np.random.seed(9)
    assert generator.get_random_transform(SHAPE) == first


def test_dali_in_graph_draws_match_the_host_draws() -> None:
    """The same plan drawn by DALI's random operators (what DALI's own TFRecord reader uses,
    ``choice`` included) and by NumPy (what every other feed uses)."""
    from daliaug.config import load_config
    from daliaug.epoch import NumpyRandom, columns
    from tests.test_distributions import N, in_graph_rows

    seed = resolve_seed(None)
    transforms = daliaug_generator(
        **{**CASES["uniform"], "height_shift_range": [2, 5]}
    ).transforms()
    plan = load_config(
        {"source": {"type": "arrays"}, "image_size": 8, "transforms": transforms}
    ).plan
    dali = in_graph_rows(plan, seed)
    drawn = plan.draw(NumpyRandom(np.random.default_rng(seed), N))
    host = columns([drawn[k] for k in plan.param_keys], N)
    for i, key in enumerate(plan.param_keys):
        a, b, where = dali[:, i], host[:, i], f"{key}, seed {seed}"
        if np.unique(b).size <= 12:
            assert np.allclose(np.unique(a), np.unique(b)), where
            values = np.unique(b)
            table = [[np.sum(np.isclose(x, v)) for v in values] for x in (a, b)]
            assert stats.chi2_contingency(table).pvalue > ALPHA, where
        else:
            assert stats.ks_2samp(a, b).pvalue > ALPHA, where
