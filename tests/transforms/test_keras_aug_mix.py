"""``keras_aug_mix`` against Keras' own ``AugMix`` (through ``from_keras``): with each image's
chains, their layers' magnitudes and the mixing weights pinned (Keras' transformation built
for each image, its sub-layers' ranges made degenerate), the output on real photos equals
Keras' within the parity tolerances on both engines; daliaug's draws follow Keras' choice of
layers; masks are refused."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import pytest

from daliaug.config import Config, load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.transforms.keras_aug_mix import BASIC_OPS
from daliaug.transforms.keras_rand_augment import KERAS_OPS
from tests.keras.conftest import photos
from tests.keras.test_from_keras import SIZE, assert_matches, compile_for, run
from tests.transforms.test_keras_rand_augment import LAYERS, _constant_fill, _our_values, _pin

pytestmark = pytest.mark.filterwarnings("ignore:AugMix")

CHAINS = [
    [("rotate", 0.05, 0.0), ("solarization", 30.0, 140.0)],
    [("brightness", 0.2, 0.0), ("equalize", 0.0, 0.0)],
    [("shear", 0.15, 0.1), ("contrast", 0.8, 0.0), ("posterize", 3.0, 0.0)],
]
"""Each chain's steps in Keras' order, which is daliaug's (geometry, colour, then the rest);
no layer in two chains (a sub-layer is pinned to one draw)."""
REFLECTED = [[("rotate", 0.05, 0.0)], [("shear", 0.15, 0.1)], [("translate", 0.1, -0.15)]]
"""Chains of one moving layer each, filled by ``reflect``."""
WEIGHTS = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.0, 0.0, 1.0]], np.float32)
ORIGINAL = np.array([0.35, 0.8, 0.0], np.float32)


def _columns(config: Config) -> dict[str, int]:
    return {k.split(".", 1)[1]: i for i, k in enumerate(config.plan.param_keys) if k[0] == "1"}


def _expect(layer: Any, backend: str, pinned: list = CHAINS, border: int = 0) -> None:
    """Per image, Keras' ``transform_images`` with a transformation of the ``pinned`` chains
    (:data:`CHAINS`) and the image's weights against daliaug's output with the same draws as
    parameters (outside the output's outer ``border`` pixels)."""
    keras.utils.set_random_seed(0)
    for chain in pinned:
        for op, a, b in chain:
            _pin(layer, op, a, b)
    config = compile_for([layer], backend)
    assert [t.type for t in config.transforms] == ["resize", "keras_aug_mix"]
    x = photos(*SIZE).astype(np.float32)
    columns = _columns(config)
    rows = draw_rows(config.plan, np.random.default_rng(0), len(x))
    expected = []
    for i, image in enumerate(x):
        weights, original = WEIGHTS[i % len(WEIGHTS)], ORIGINAL[i % len(ORIGINAL)]
        chains = []
        for k, chain in enumerate(pinned):
            steps = []
            for j, (op, _, _) in enumerate(chain):
                sub = getattr(layer, LAYERS[op])
                t = sub.get_random_transformation(image[None], training=True)
                steps.append({"layer_name": LAYERS[op], "transformation": t})
                for other in KERAS_OPS:
                    rows[i, columns[f"c{k}_{j}_{other}"]] = float(other == op)
                for name, value in _our_values(op, t, (1, *SIZE)).items():
                    rows[i, columns[f"c{k}_{name}"]] = value
            for j in range(len(chain), layer.chain_depth):
                for other in KERAS_OPS:
                    rows[i, columns[f"c{k}_{j}_{other}"]] = 0.0
            rows[i, columns[f"c{k}_mix"]] = weights[k]
            chains.append(steps)
        rows[i, columns["original"]] = original
        transformation = {
            "chain_mixing_weights": weights,
            "weight_sample": original,
            "chain_transforms": chains,
        }
        expected.append(np.asarray(layer.transform_images(image[None], transformation))[0])
    ours = run(config, photos(*SIZE), rows)
    assert_matches(config, ours, np.stack(expected).astype(np.float64), rows, border)
    assert not np.allclose(ours, photos(*SIZE)), "the mix changed nothing"


@pytest.mark.slow
def test_pinned_chains_match_keras_on_photos(backend: str) -> None:
    layer = _constant_fill(keras.layers.AugMix(num_chains=3, chain_depth=3, factor=0.5))
    _expect(layer, backend)


@pytest.mark.slow
def test_keras_reflect_fill_matches(backend: str) -> None:
    """Keras' default fill: TensorFlow's projective transform's ``reflect`` on both engines,
    for each of Keras' moving layers, one a chain. Chains of one step: the fill is the moving
    steps' (the graph, a third of three steps', is most of the time on the TF engine); chains
    of several steps are ``test_pinned_chains_match_keras_on_photos``'s."""
    layer = keras.layers.AugMix(num_chains=3, chain_depth=1, factor=0.5)
    _expect(layer, backend, REFLECTED)


def _draws(all_ops: bool, n: int) -> dict[str, np.ndarray]:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [8, 8],
            "label_mode": "none",
            "transforms": [{"type": "keras_aug_mix", "all_ops": all_ops, "chain_depth": 2}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(1), n)
    return {k.split(".", 1)[1]: rows[:, i] for i, k in enumerate(config.plan.param_keys)}


@pytest.mark.parametrize("all_ops", [True, False])
def test_each_step_is_one_layer_or_nothing_uniformly(all_ops: bool) -> None:
    """Keras' ``py_random.choice(layers + [None])`` per step: each of the layers in use and
    nothing equally likely; the weights a Dirichlet (sum 1) and the original's a Beta."""
    n = 20000
    drawn = _draws(all_ops, n)
    ops = KERAS_OPS if all_ops else BASIC_OPS
    flags = np.stack([drawn[f"c1_1_{op}"] for op in KERAS_OPS], 1)
    assert set(np.unique(flags)) <= {0.0, 1.0} and flags.sum(1).max() == 1.0
    chosen = {op: flags[:, KERAS_OPS.index(op)].mean() for op in KERAS_OPS}
    for op in KERAS_OPS:
        expect = 1 / (len(ops) + 1) if op in ops else 0.0
        assert abs(chosen[op] - expect) < 0.01, (op, chosen[op], expect)
    assert abs((1 - flags.sum(1)).mean() - 1 / (len(ops) + 1)) < 0.01
    weights = np.stack([drawn[f"c{k}_mix"] for k in range(3)], 1)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-5)
    # Dirichlet(1, 1, 1): each weight ~ Beta(1, 2), mean 1/3, variance 1/18
    assert np.allclose(weights.mean(0), 1 / 3, atol=0.01)
    assert np.allclose(weights.var(0), 1 / 18, atol=0.005)
    assert abs(drawn["original"].mean() - 0.5) < 0.01  # Beta(1, 1)


def test_masks_are_refused() -> None:
    with pytest.raises(ConfigError, match="type: keras_aug_mix blends versions of each image"):
        load_config(
            {
                "source": {"type": "segmentation", "images": "i", "masks": "m", "num_classes": 4},
                "image_size": [8, 8],
                "transforms": [{"type": "keras_aug_mix"}],
            }
        )


def test_from_keras_takes_its_arguments() -> None:
    layer = keras.layers.AugMix(
        num_chains=2, chain_depth=4, factor=0.4, alpha=0.5, all_ops=False, interpolation="nearest"
    )
    (t,) = compile_for([layer], "tf").transforms[1:]
    assert (t.num_chains, t.chain_depth, t.factor, t.alpha) == (2, 4, (0.0, 0.4), 0.5)
    assert (t.all_ops, t.fill, t.interpolation) == (False, "reflect", "nearest")
    with pytest.raises(ConfigError, match="num_chains=5"):
        compile_for([keras.layers.AugMix(num_chains=5)], "tf")
