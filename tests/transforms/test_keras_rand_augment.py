"""``keras_rand_augment`` against Keras' own ``RandAugment``: with the op pinned to each of its
eleven layers and the layer's draw pinned (a degenerate range set on Keras' sub-layer), the
output on real photos equals Keras' within the parity tolerances on both engines; the op
choices and magnitudes daliaug draws follow the distributions Keras draws from; masks follow the
geometric ops only."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
from scipy import stats

from daliaug.config import Config, load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches
from daliaug.transforms.keras_rand_augment import KERAS_OPS
from tests.keras.conftest import photos
from tests.keras.test_from_keras import SIZE, assert_matches, compile_for, run

pytestmark = pytest.mark.filterwarnings("ignore:RandAugment")

LAYERS = dict(zip(KERAS_OPS, keras.layers.RandAugment._AUGMENT_LAYERS, strict=True))
"""Each op's Keras sub-layer: the same order as Keras' own list."""


def _pin(layer: Any, op: str, a: float, b: float) -> None:
    """Keras' sub-layer of ``op`` draws ``a`` (and ``b``) only: its ranges set degenerate."""
    sub = getattr(layer, LAYERS[op])
    if op == "shear":
        sub.x_factor, sub.y_factor = (a, a), (b, b)
    elif op == "translate":
        sub.width_lower = sub.width_upper = a
        sub.height_lower = sub.height_upper = b
    elif op == "contrast":  # Keras draws U(1 - f0, 1 + f1)
        sub.factor = (1.0 - a, a - 1.0)
    elif op == "posterize":
        sub.factor = (int(a), int(a))
    elif op == "solarization":  # Keras draws U(f0, 255 f1)
        sub.addition_factor, sub.threshold_factor = (a, a / 255), (b, b / 255)
    elif op in ("rotate", "brightness", "color", "sharpness"):
        sub.factor = (a, a)


def _our_values(op: str, t: dict[str, Any], shape: tuple[int, ...]) -> dict[str, float]:
    """Keras' drawn transformation of ``op`` for one image as daliaug's parameters."""
    if op == "shear":
        sx, sy = np.asarray(t["shear_factor"], np.float64)[0]
        sign = 1.0 if sx + sy >= 0 else -1.0
        return {"shear_sign": sign, "shear_shear_x": sign * sx, "shear_shear_y": sign * sy}
    if op == "translate":
        dx, dy = np.asarray(t["translations"], np.float64)[0]
        return {"translate_dx": dx / shape[2], "translate_dy": dy / shape[1]}
    scalar = {
        "rotate": ("rotate_angle", "angle", 1.0),
        "brightness": ("brightness_delta", "rgb_delta", 1 / 255),
        "color": ("color_factor", "factor", 1.0),
        "contrast": ("contrast_factor", "contrast_factor", 1.0),
        "sharpness": ("sharpness_factor", "factor", 2.0),
    }
    if op in scalar:
        ours, theirs, scale = scalar[op]
        return {ours: float(np.asarray(t[theirs]).reshape(-1)[0]) * scale}
    if op == "posterize":
        return {"posterize_bits": 8.0 - float(np.asarray(t["shift_factor"]).reshape(-1)[0])}
    if op == "solarization":
        add, threshold = (
            float(np.asarray(t[k]).reshape(-1)[0]) for k in ("additions", "thresholds")
        )
        return {"solarization_addition": add, "solarization_threshold": threshold}
    return {}


def _columns(config: Config) -> dict[str, int]:
    return {k.split(".", 1)[1]: i for i, k in enumerate(config.plan.param_keys) if k[0] == "1"}


PINNED = [
    ("shear", 0.2, 0.1),
    ("translate", 0.15, 0.25),
    ("rotate", 0.06, 0.0),
    ("brightness", 0.2, 0.0),
    ("color", 0.6, 0.0),
    ("contrast", 1.3, 0.0),
    ("sharpness", 0.1, 0.0),
    ("sharpness", 0.9, 0.0),
    ("posterize", 3.0, 0.0),
    ("solarization", 40.0, 120.0),
    ("auto_contrast", 0.0, 0.0),
    ("equalize", 0.0, 0.0),
]


def _constant_fill(layer: Any) -> Any:
    for name in ("random_shear", "random_translation", "random_rotation"):
        getattr(layer, name).fill_mode = "constant"
    return layer


@pytest.mark.slow
@pytest.mark.parametrize(("op", "a", "b"), PINNED, ids=[f"{op}-{a:g}" for op, a, _ in PINNED])
def test_each_op_matches_keras_on_photos(backend: str, op: str, a: float, b: float) -> None:
    x = photos(*SIZE).astype(np.float32)
    layer = _constant_fill(keras.layers.RandAugment(num_ops=1, factor=0.5))
    _expect_op(layer, backend, op, a, b, x)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["shear", "translate", "rotate"])
def test_geometric_ops_with_keras_reflect_fill_match_on_the_tf_engine(op: str) -> None:
    x = photos(*SIZE).astype(np.float32)
    a, b = next((a, b) for o, a, b in PINNED if o == op)
    _expect_op(keras.layers.RandAugment(num_ops=1, factor=0.5), "tf", op, a, b, x)


def _expect_op(layer: Any, backend: str, op: str, a: float, b: float, x: np.ndarray) -> None:
    """daliaug's output with the op pinned to ``op`` (each image: Keras' draw for it) against
    Keras' ``RandAugment`` on each image alone (Equalization pools a batch's histogram)."""
    _pin(layer, op, a, b)
    config = compile_for([layer], backend)
    assert [t.type for t in config.transforms] == ["resize", "keras_rand_augment"]
    columns = _columns(config)
    rows = draw_rows(config.plan, np.random.default_rng(0), len(x))
    expected = []
    for i, image in enumerate(x):
        t = layer.get_random_transformation(image[None], training=True)
        t["layer_idxes"] = np.array([KERAS_OPS.index(op)], np.int32)
        expected.append(np.asarray(layer.transform_images(image[None], t))[0])
        for other in KERAS_OPS:
            rows[i, columns[f"0_{other}"]] = float(other == op)
        for name, value in _our_values(op, t["transforms"][LAYERS[op]], (1, *SIZE)).items():
            rows[i, columns[name]] = value
    border = 1 if op == "sharpness" else 0  # Keras' smoothing pads with zeros
    ours = run(config, photos(*SIZE), rows)
    assert_matches(config, ours, np.stack(expected).astype(np.float64), rows, border)
    assert not np.allclose(ours, photos(*SIZE)), "the op changed nothing"


TWO_SLOTS = [
    (("color", 0.4, 0.0), ("color", 0.4, 0.0)),
    (("rotate", 0.05, 0.0), ("solarization", 30.0, 140.0)),
    (("shear", 0.15, 0.1), ("posterize", 2.0, 0.0)),
    (("translate", 0.1, 0.2), ("contrast", 0.8, 0.0)),
    (("rotate", 0.03, 0.0), ("equalize", 0.0, 0.0)),
    (("brightness", 0.1, 0.0), ("posterize", 3.0, 0.0)),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second"), TWO_SLOTS, ids=[f"{a[0]}-{b[0]}" for a, b in TWO_SLOTS]
)
def test_two_slots_match_keras_in_its_order(backend: str, first: tuple, second: tuple) -> None:
    """Two slots where Keras' order is daliaug's (geometry, then colour or pixel ops): the same
    op twice runs twice at one magnitude (Keras draws each layer once per call); posterize and
    equalize after a resampling or a brightness truncate its non-integer values as Keras'
    casts do."""
    x = photos(*SIZE).astype(np.float32)
    layer = _constant_fill(keras.layers.RandAugment(num_ops=2, factor=0.5))
    for op, a, b in (first, second):
        _pin(layer, op, a, b)
    config = compile_for([layer], backend)
    columns = _columns(config)
    rows = draw_rows(config.plan, np.random.default_rng(0), len(x))
    expected = []
    for i, image in enumerate(x):
        t = layer.get_random_transformation(image[None], training=True)
        t["layer_idxes"] = np.array([KERAS_OPS.index(first[0]), KERAS_OPS.index(second[0])])
        expected.append(np.asarray(layer.transform_images(image[None], t))[0])
        for j, (op, _, _) in enumerate((first, second)):
            for other in KERAS_OPS:
                rows[i, columns[f"{j}_{other}"]] = float(other == op)
            for name, value in _our_values(op, t["transforms"][LAYERS[op]], (1, *SIZE)).items():
                rows[i, columns[name]] = value
    ours = run(config, photos(*SIZE), rows)
    assert_matches(config, ours, np.stack(expected).astype(np.float64), rows)


@pytest.mark.slow
def test_engines_agree_on_the_whole_policy(tmp_path: Path) -> None:
    """DALI on the CPU and the TF engine on eight photos with drawn parameters."""
    from tests.helpers import write_image_dir
    from tests.transforms.helpers import photo_crops
    from tests.transforms.test_rand_augment import engine_difference

    root = write_image_dir(tmp_path, {"a": photo_crops(8)})
    policy = {"type": "keras_rand_augment", "num_ops": 3, "factor": [0.1, 0.6], "fill": 20}
    diff = engine_difference(root, policy, 4)
    # posterize (as few as 1 bit) and equalize turn float rounding differences of the warp
    # into whole steps: rare
    assert (diff > 0.05).mean() < 2e-3, (diff > 0.05).mean()


# -- draws ---------------------------------------------------------------------------------


def _our_draws(factor: float | tuple[float, float], n: int, num_ops: int = 2) -> dict:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "keras_rand_augment", "num_ops": num_ops, "factor": factor}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(5), n).astype(np.float64)
    return {k.split(".", 1)[1]: rows[:, i] for i, k in enumerate(config.plan.param_keys)}


@pytest.mark.slow
def test_every_op_is_reachable_with_keras_frequencies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras draws each slot's layer with ``randint(0, 11)`` (once per batch): its draws over
    many calls against daliaug's per image, each slot, and the slots independent. Keras' own
    ``get_random_transformation`` draws the layers; its sub-layers' magnitudes, which it draws
    on each call too (eleven eager draws: almost all of the time), are left out here:
    ``test_magnitudes_follow_keras_distributions`` compares those."""
    keras.utils.set_random_seed(0)
    layer, n = keras.layers.RandAugment(num_ops=2), 800  # ~70 draws per op: enough for chi2
    for name in layer._AUGMENT_LAYERS:
        monkeypatch.setattr(getattr(layer, name), "get_random_transformation", lambda *_, **k: {})
    import tensorflow as tf

    image = np.zeros((1, 8, 8, 3), np.float32)
    # one graph run per call (the eager calls' draws, a few eager ops fewer each)
    draw = tf.function(lambda: layer.get_random_transformation(image)["layer_idxes"])
    theirs = np.array([draw().numpy() for _ in range(n)])
    drawn = _our_draws(0.5, n)
    for slot in (0, 1):
        flags = np.stack([drawn[f"{slot}_{op}"] for op in KERAS_OPS], axis=1)
        np.testing.assert_array_equal(flags.sum(axis=1), 1.0)  # exactly one op per slot
        ours = np.bincount(np.argmax(flags, axis=1), minlength=len(KERAS_OPS))
        keras_counts = np.bincount(theirs[:, slot], minlength=len(KERAS_OPS))
        assert ours.min() > 0 and keras_counts.min() > 0
        assert stats.chi2_contingency([keras_counts, ours]).pvalue > 1e-3, (keras_counts, ours)
    first, second = (np.argmax([drawn[f"{s}_{op}"] for op in KERAS_OPS], axis=0) for s in (0, 1))
    table = np.histogram2d(first, second, bins=len(KERAS_OPS))[0]
    assert stats.chi2_contingency(table).pvalue > 1e-3


def _keras_magnitudes(layer: Any, n: int) -> dict[str, np.ndarray]:
    """Keras' sub-layers' draws for ``n`` images, by daliaug's parameter names."""
    t = layer.get_random_transformation(np.zeros((n, 8, 8, 3), np.float32))["transforms"]

    def flat(op: str, key: str) -> np.ndarray:
        return np.asarray(t[LAYERS[op]][key], np.float64).reshape(n, -1)

    shear = flat("shear", "shear_factor")
    return {
        "shear_x": shear[:, 0],
        "shear_y": shear[:, 1],
        "translate_dx": flat("translate", "translations")[:, 0] / 8,
        "translate_dy": flat("translate", "translations")[:, 1] / 8,
        "rotate_angle": flat("rotate", "angle")[:, 0],
        "brightness_delta": flat("brightness", "rgb_delta")[:, 0] / 255,
        "color_factor": flat("color", "factor")[:, 0],
        "contrast_factor": flat("contrast", "contrast_factor")[:, 0],
        "sharpness_factor": 2 * flat("sharpness", "factor")[:, 0],
        "posterize_bits": 8 - flat("posterize", "shift_factor")[:, 0],
        "solarization_addition": flat("solarization", "additions")[:, 0],
        "solarization_threshold": flat("solarization", "thresholds")[:, 0],
    }


@pytest.mark.parametrize("factor", [0.5, (0.1, 0.3), (0.2, 0.9), 0.1])
def test_magnitudes_follow_keras_distributions(factor: float | tuple[float, float]) -> None:
    keras.utils.set_random_seed(0)
    n = 3000
    theirs = _keras_magnitudes(keras.layers.RandAugment(factor=factor), n)
    ours = _our_draws(factor, n)
    sign = ours["shear_sign"]
    ours["shear_x"], ours["shear_y"] = sign * ours["shear_shear_x"], sign * ours["shear_shear_y"]
    for name, values in theirs.items():
        if name == "posterize_bits":
            counts = [np.bincount(v.astype(int), minlength=9) for v in (values, ours[name])]
            kept = (counts[0] + counts[1]) > 0
            if kept.sum() == 1:
                assert np.array_equal(np.unique(values), np.unique(ours[name])), name
                continue
            assert stats.chi2_contingency(np.array(counts)[:, kept]).pvalue > 1e-3, name
            continue
        if np.ptp(values) == 0:
            assert np.allclose(ours[name], values[0], atol=1e-6), name
            continue
        assert stats.ks_2samp(values, ours[name]).pvalue > 1e-3, name


# -- masks -------------------------------------------------------------------------------------


def _segmentation(root: Path, transforms: list[dict], rows: np.ndarray | None = None) -> tuple:
    from tests.sources.test_sources import seg_config

    config = seg_config(root, transforms=transforms, batch_size=6, shuffle=False)
    if rows is None:
        rows = draw_rows(config.plan, np.random.default_rng(0), 6)
    images, masks = next(
        iter(engine_batches("dali", config, config.source.samples(), "cpu", params=rows))
    )
    return config, np.asarray(images), np.asarray(masks)


def test_masks_follow_the_geometric_ops_only(tmp_path: Path) -> None:
    """Rotation then solarization: the masks are those of the same rotation alone; brightness
    then equalization: the masks are untouched while the images change."""
    from tests.sources.test_sources import write_segmentation

    root = write_segmentation(tmp_path / "seg")
    policy = {"type": "keras_rand_augment", "factor": 0.3}
    config = load_config({"source": {"type": "arrays"}, "image_size": 8, "transforms": [policy]})
    columns = {k.split(".", 1)[1]: i for i, k in enumerate(config.plan.param_keys)}

    def pinned(first: str, second: str) -> np.ndarray:
        rows = draw_rows(config.plan, np.random.default_rng(1), 6)
        for op in KERAS_OPS:
            rows[:, columns[f"0_{op}"]] = float(op == first)
            rows[:, columns[f"1_{op}"]] = float(op == second)
        rows[:, columns["rotate_angle"]] = 30.0
        return rows

    _, _, rotated = _segmentation(root, [policy], pinned("rotate", "solarization"))
    rotation = {"type": "rotation", "angle": [30.0, 30.0]}
    _, _, expected = _segmentation(root, [rotation])
    np.testing.assert_array_equal(rotated, expected)
    _, recoloured, kept = _segmentation(root, [policy], pinned("brightness", "equalize"))
    _, plain, untouched = _segmentation(root, [{"type": "rotation", "angle": 0}])
    np.testing.assert_array_equal(kept, untouched)
    assert not np.allclose(recoloured, plain)


# -- config --------------------------------------------------------------------------------


def test_config_errors_name_the_field() -> None:
    def config(**fields: Any) -> Config:
        transform = {"type": "keras_rand_augment", **fields}
        return load_config(
            {"source": {"type": "arrays"}, "image_size": 8, "transforms": [transform]}
        )

    assert config(factor=0.3).transforms[0].factor == (0.0, 0.3)  # Keras: f means [0, f]
    for fields, match in (
        ({"factor": 1.0}, "must stay below 1"),
        ({"factor": [-0.1, 0.4]}, "within"),
        ({"num_ops": 9}, "num_ops"),
    ):
        with pytest.raises(ConfigError, match=match) as error:
            config(**fields)
        assert "transforms.0.keras_rand_augment" in str(error.value)


def test_converter_refuses_what_it_cannot_honour() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match=r"factor=\[0.0, 1.0\]"):
            compile_for([keras.layers.RandAugment(factor=1.0)], "tf")
        with pytest.raises(ConfigError, match="num_ops=9"):
            compile_for([keras.layers.RandAugment(num_ops=9)], "tf")
        with pytest.raises(ConfigError, match="value_range"):
            compile_for([keras.layers.RandAugment(value_range=(0, 1))], "tf")
        layer = keras.layers.RandAugment(name="r")
        layer.random_rotation.fill_mode = "constant"
        with pytest.raises(ConfigError, match="RandAugment 'r': its random_shear"):
            compile_for([layer], "tf")
