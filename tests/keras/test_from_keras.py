"""``from_keras`` against Keras itself: each supported layer's output on real photos equals
Keras' own layer output (``training=True``) within the parity tolerances, on both engines (DALI
on the CPU and the TensorFlow engine), with the random parameters pinned (a factor ``(a, a)``,
or the same parameters handed to Keras' ``transform_images``); the parameters daliaug draws
follow the distributions Keras' layers draw from (two-sample tests against Keras'
``get_random_transformation``); and what daliaug cannot run is named, never dropped.

Keras applies each layer in turn, daliaug fuses them (one resampling, one colour pass): a
stack is compared where that changes nothing (at most one resampling layer).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import pytest
from scipy import stats

import daliaug
from daliaug.config import Config
from daliaug.epoch import draw_rows
from daliaug.errors import BackendWarning, ConfigError
from daliaug.outputs.bridges import engine_batches
from daliaug.parity.measure import Stats, compared_pixels
from daliaug.sources.arrays import array_samples
from tests.keras.conftest import photos

SIZE = (48, 64)
N = len(photos(*SIZE))


def compile_for(layers: Any, backend: str, size: tuple[int, int] = SIZE) -> Config:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        return daliaug.from_keras(
            layers,
            source={"type": "arrays"},
            image_size=size,
            batch_size=N,
            shuffle=False,
            label_mode="none",
            backend=backend,
            seed=0,
        )


def run(config: Config, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The config's output for ``x`` with explicit parameter ``rows``, on the 0..255 scale."""
    name = "tf" if config.backend == "tf" else "dali"
    batches = engine_batches(name, config, array_samples(x, None), "cpu", params=rows)
    return np.concatenate([batch[0] for batch in batches]).astype(np.float64)


def to_pixels(config: Config, images: np.ndarray) -> np.ndarray:
    """Output values back on the pipeline's 0..255 scale (undoing the output normalization)."""
    mean, std = config.output.mean_std(config.channels)
    return np.asarray(images, np.float64) * std + mean


def assert_matches(
    config: Config, ours: np.ndarray, theirs: np.ndarray, rows: np.ndarray, border: int = 0
) -> None:
    """Within the parity tolerances, outside the band along the source border where a warp
    blends the fill (as the parity harness compares), and outside the output's outer ``border``
    pixels (where a layer's filter pads differently)."""
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    sizes = np.tile(np.array(SIZE), (len(rows), 1))
    mask = compared_pixels(config.plan, rows, sizes).copy()
    if border:
        inner = np.zeros_like(mask)
        inner[:, border:-border, border:-border] = True
        mask &= inner
    found = Stats.of(to_pixels(config, ours), to_pixels(config, theirs), mask)
    assert found.within(), found


@dataclass(frozen=True)
class Case:
    """One layer: its daliaug parameter rows (``None``: drawn, for pinned factors) and Keras'
    output for them (default: the layer called in training)."""

    name: str
    layer: Callable[[], Any]
    rows: np.ndarray | None = None
    keras: Callable[[Any, np.ndarray, np.ndarray], Any] | None = None
    tf_only: bool = False
    size: tuple[int, int] = SIZE
    border: int = 0
    """Outer pixels left out of the comparison: Keras' filter pads with zeros there."""


def _flips(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    flips = rows[:, 0].astype(bool).reshape(-1, 1, 1, 1)
    return layer.transform_images(x, {"flips": flips, "input_shape": x.shape})


def _shears(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    factors = (rows[:, :1] * rows[:, 1:]).astype(np.float32)
    return layer.transform_images(x, {"shear_factor": factors, "input_shape": x.shape})


def _contrasts(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    return layer.transform_images(x, {"contrast_factor": rows.reshape(-1, 1, 1, 1)})


def _corner(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    return layer.transform_images(x, (5, 11))


def _hues(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    return layer.transform_images(x, {"factor": rows[:, -1]})


def _clipped(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    """Keras' saturation above 1 pushes channels below 0, which daliaug clips."""
    return np.clip(np.asarray(layer(x, training=True)), 0.0, 255.0)


def _jitter(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    """Brightness, saturation, then hue (its sign pinned by ``rows``), as Keras' jitter runs."""
    y = layer.random_saturation(layer.random_brightness(x, training=True), training=True)
    return _hues(layer.random_hue, y, rows)


def _solarized(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    pinned = {"additions": rows[:, :1, None, None], "thresholds": rows[:, 1:, None, None]}
    return layer.transform_images(x, pinned)


def _one_by_one(layer: Any, x: np.ndarray, rows: np.ndarray) -> Any:
    """Keras' layer on each image alone (on a batch, Equalization pools its histogram)."""
    return np.concatenate([np.asarray(layer(image[None], training=True)) for image in x])


HUES = np.array([[0.15], [-0.2], [0.45], [-0.5]], np.float32)
FLIPS = np.array([[1.0], [0.0], [1.0], [1.0]], np.float32)
SHEARS = np.array([[1, 0.3, 0.1], [-1, 0.2, 0.15], [1, 0.05, 0.2], [-1, 0.25, 0.0]], np.float32)
CORNER = np.tile(np.array([[(11 + 0.5) / 25, (5 + 0.5) / 19]], np.float32), (N, 1))
L = keras.layers
CASES = [
    Case("flip-horizontal", lambda: L.RandomFlip("horizontal"), FLIPS, _flips),
    Case("flip-vertical", lambda: L.RandomFlip("vertical"), FLIPS, _flips),
    Case("flip-both", lambda: L.RandomFlip(), FLIPS, _flips),
    Case("rotation", lambda: L.RandomRotation((0.07, 0.07), fill_mode="constant", fill_value=40)),
    Case(
        "rotation-nearest",
        lambda: L.RandomRotation((-0.11, -0.11), fill_mode="nearest", interpolation="nearest"),
    ),
    Case("rotation-reflect", lambda: L.RandomRotation((0.12, 0.12)), tf_only=True),
    Case("rotation-wrap", lambda: L.RandomRotation((-0.05, -0.05), fill_mode="wrap"), tf_only=True),
    Case("zoom", lambda: L.RandomZoom((0.3, 0.3), (-0.2, -0.2), fill_mode="constant")),
    Case("zoom-aspect", lambda: L.RandomZoom((-0.25, -0.25)), tf_only=True),
    Case(
        "translation",
        lambda: L.RandomTranslation((0.1, 0.1), (-0.2, -0.2), fill_mode="constant", fill_value=200),
    ),
    Case("translation-nearest", lambda: L.RandomTranslation((-0.15, -0.15), (0.1, 0.1), "nearest")),
    Case("shear", lambda: L.RandomShear(0.3, 0.2, fill_mode="constant"), SHEARS, _shears),
    Case("shear-reflect", lambda: L.RandomShear(0.3, 0.2), SHEARS, _shears, tf_only=True),
    Case("random-crop", lambda: L.RandomCrop(30, 40), CORNER, _corner),
    Case("random-crop-fallback", lambda: L.RandomCrop(56, 48)),
    Case("center-crop", lambda: L.CenterCrop(33, 47)),
    # Keras crops a whole-pixel window to the aspect before it resizes; the fused map takes the
    # exact one, so the outer columns sample up to a pixel apart (on the photos' sharp edges)
    Case("center-crop-small", lambda: L.CenterCrop(56, 40), border=1),
    Case("resizing", lambda: L.Resizing(24, 40)),
    # sizes where no output pixel centre falls exactly halfway between two source pixels: there
    # the fused map's rounding may pick the other neighbour (see the README)
    Case("resizing-nearest", lambda: L.Resizing(32, 128, interpolation="nearest")),
    Case("resizing-crop", lambda: L.Resizing(32, 32, crop_to_aspect_ratio=True)),
    Case("resizing-pad", lambda: L.Resizing(40, 40, pad_to_aspect_ratio=True, fill_value=17)),
    Case("brightness", lambda: L.RandomBrightness((0.15, 0.15))),
    Case("brightness-down", lambda: L.RandomBrightness((-0.3, -0.3))),
    Case(
        "contrast",
        lambda: L.RandomContrast(0.5),
        np.array([[1.4], [0.6], [1.0], [1.5]], np.float32),
        _contrasts,
    ),
    Case("contrast-factor-0", lambda: L.RandomContrast(0.0)),
    Case(
        "color-jitter",
        lambda: L.RandomColorJitter(brightness_factor=(0.1, 0.1), contrast_factor=(0.0, 0.0)),
    ),
    Case("rescaling", lambda: L.Rescaling(1 / 127.5, offset=-1)),
    Case("saturation", lambda: L.RandomSaturation((0.3, 0.3))),
    Case("saturation-grey", lambda: L.RandomSaturation((-1.0, -1.0))),
    Case("saturation-over", lambda: L.RandomSaturation((0.8, 0.8)), keras=_clipped),
    Case("saturation-in-gamut", lambda: L.RandomSaturation((0.8, 0.8), value_range=(0, 1))),
    Case("hue", lambda: L.RandomHue(0.9), HUES, _hues),
    Case(
        "color-jitter-saturation-hue",
        lambda: L.RandomColorJitter(
            brightness_factor=(0.1, 0.1), saturation_factor=(-0.4, -0.4), hue_factor=0.5
        ),
        np.concatenate([np.full((N, 1), 0.1, np.float32), np.full((N, 1), -0.4 / 1.4), HUES], 1),
        _jitter,
    ),
    Case("grayscale", lambda: L.RandomGrayscale(1.0)),
    Case("grayscale-never", lambda: L.RandomGrayscale(0.0)),
    Case(
        "grayscale-rescaled",
        lambda: keras.Sequential([L.Rescaling(2.0), L.RandomGrayscale(1.0)]),
    ),
    Case("invert", lambda: L.RandomInvert((1.0, 1.0))),
    Case("solarization", lambda: L.Solarization()),
    Case(
        "solarization-drawn",
        lambda: L.Solarization(addition_factor=0.3, threshold_factor=(0.4, 0.6)),
        np.array([[10.0, 40.0], [0.0, 150.0], [60.0, 90.0], [30.0, 0.4]], np.float32),
        _solarized,
    ),
    Case("color-degeneration", lambda: L.RandomColorDegeneration((0.6, 0.6))),
    Case("color-degeneration-negative", lambda: L.RandomColorDegeneration((-0.3, -0.3))),
    Case("posterization", lambda: L.RandomPosterization((3, 3))),
    Case("posterization-one-draw", lambda: L.RandomPosterization((5, 6))),
    Case(
        "posterization-rescaled",
        lambda: keras.Sequential([L.Rescaling(1 / 255), L.RandomPosterization(1, (0, 1))]),
    ),
    Case("equalization", lambda: L.Equalization(), keras=_one_by_one),
    Case("auto-contrast", lambda: L.AutoContrast()),
    Case(
        "auto-contrast-rescaled",
        lambda: keras.Sequential([L.Rescaling(1 / 255), L.AutoContrast((0, 1))]),
    ),
    Case("sharpness-smooth", lambda: L.RandomSharpness((0.1, 0.1)), border=1),
    Case("sharpness-sharpen", lambda: L.RandomSharpness((0.9, 0.9)), border=1),
    Case(
        "gaussian-blur",
        lambda: L.RandomGaussianBlur((1.0, 1.0), kernel_size=5, sigma=(0.8, 0.8)),
        border=2,
    ),
    Case("gaussian-blur-never", lambda: L.RandomGaussianBlur((0.0, 0.0), sigma=(0.5, 0.5))),
    Case("erasing-never", lambda: L.RandomErasing(0.0)),
    Case("perspective-never", lambda: L.RandomPerspective(0.0)),
    Case("perspective-scale-0", lambda: L.RandomPerspective((1.0, 1.0), scale=0.0)),
    # value ranges other than 0..255 (the layers after a Rescaling), and seeds (ignored, noted)
    Case(
        "brightness-minus-one-to-one",
        lambda: keras.Sequential(
            [L.Rescaling(1 / 127.5, offset=-1), L.RandomBrightness((0.1, 0.1), value_range=(-1, 1))]
        ),
    ),
    Case(
        "invert-unit-range",
        lambda: keras.Sequential([L.Rescaling(1 / 255), L.RandomInvert((1.0, 1.0), (0, 1))]),
    ),
    Case(
        "degeneration-unit-range",
        lambda: keras.Sequential(
            [L.Rescaling(1 / 255), L.RandomColorDegeneration((0.4, 0.4), value_range=(0, 1))]
        ),
    ),
    Case("rotation-seeded", lambda: L.RandomRotation((0.05, 0.05), "constant", seed=3)),
]


def _rows(config: Config, case: Case) -> np.ndarray:
    if case.rows is not None:
        return case.rows
    return draw_rows(config.plan, np.random.default_rng(0), N)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_layer_matches_keras_on_photos(backend: str, case: Case) -> None:
    if case.tf_only and backend != "tf":
        pytest.skip("fill_mode reflect and wrap run on the TensorFlow engine only")
    x = photos(*SIZE)
    layer = case.layer()
    config = compile_for([layer], backend)
    rows = _rows(config, case)
    theirs = case.keras or (lambda lay, images, _: lay(images, training=True))
    expected = np.asarray(theirs(layer, x.astype(np.float32), rows), np.float64)
    assert_matches(config, run(config, x, rows), expected, rows, case.border)


def test_normalization_with_adapted_statistics_matches_keras(backend: str) -> None:
    x = photos(*SIZE)
    normalize = L.Normalization()
    normalize.adapt(x.astype(np.float32))
    config = compile_for([L.Rescaling(2.0), normalize], backend)
    rows = np.zeros((N, 0), np.float32)
    expected = normalize(L.Rescaling(2.0)(x.astype(np.float32)))
    assert_matches(config, run(config, x, rows), np.asarray(expected), rows)
    inverse = L.Normalization(mean=[10.0, 20.0, 30.0], variance=[4.0, 9.0, 16.0], invert=True)
    config = compile_for([L.Rescaling(1 / 255), inverse], backend)
    expected = inverse(x.astype(np.float32) / 255)
    assert_matches(config, run(config, x, rows), np.asarray(expected), rows)


def test_a_stack_with_one_resampling_matches_keras_layer_by_layer(backend: str) -> None:
    """Flip and crop move whole pixels, so the rotation is the only resampling: fused or layer
    by layer, the same samples (the crop comes after the rotation: a crop before it would let
    the rotation reveal the image around the window, where Keras shows the fill); the brightness
    and contrast work on the value range after ``Rescaling``."""
    x = photos(*SIZE)
    flip, crop = L.RandomFlip("horizontal"), L.RandomCrop(30, 40)
    rotate = L.RandomRotation((0.04, 0.04), fill_mode="constant")
    bright = L.RandomBrightness((0.02, 0.02), value_range=(0, 1))
    contrast = L.RandomContrast(0.3, value_range=(0, 1))
    stack = keras.Sequential([flip, rotate, crop, L.Rescaling(1 / 255), bright, contrast])
    config = compile_for(stack, backend)
    kinds = ["resize", "keras_flip", "rotation", "keras_random_crop"]
    assert [t.type for t in config.transforms] == [*kinds, "keras_brightness", "keras_contrast"]
    factors = np.array([[1.2], [0.8], [1.0], [1.3]], np.float32)
    angle = np.full((N, 1), 0.04 * 360, np.float32)
    rows = np.concatenate([FLIPS, angle, CORNER, np.full((N, 1), 0.02, np.float32), factors], 1)
    y = rotate(_flips(flip, x.astype(np.float32), FLIPS), training=True)
    y = bright(L.Rescaling(1 / 255)(_corner(crop, y, CORNER)), training=True)
    expected = np.asarray(_contrasts(contrast, y, factors), np.float64)
    assert_matches(config, run(config, x, rows), expected, rows)


# -- draws ---------------------------------------------------------------------------------


def _keras_draws(layer: Any, n: int) -> dict[str, np.ndarray]:
    """Parameters of ``n`` samples drawn by Keras' own layer, by daliaug's parameter names."""
    t = layer.get_random_transformation(np.zeros((n, 8, 8, 3), np.float32), training=True)
    if type(layer).__name__ == "RandomGrayscale":  # Keras returns the flags alone
        return {"grey": np.asarray(t, np.float64).reshape(n)}
    flat = {k: np.asarray(v, np.float64).reshape(n, -1) for k, v in t.items() if np.size(v) >= n}
    name = type(layer).__name__
    if name == "RandomFlip":
        return {"flip": flat["flips"][:, 0]}
    if name == "RandomRotation":
        return {"angle": flat["angle"][:, 0]}
    if name == "RandomZoom":
        return {"height_zoom": flat["height_zoom"][:, 0], "width_zoom": flat["width_zoom"][:, 0]}
    if name == "RandomTranslation":
        return {"dx": flat["translations"][:, 0] / 8, "dy": flat["translations"][:, 1] / 8}
    if name == "RandomShear":
        return {"shear_x": flat["shear_factor"][:, 0], "shear_y": flat["shear_factor"][:, 1]}
    if name == "RandomBrightness":
        return {"delta": flat["rgb_delta"][:, 0] / 255}
    if name == "RandomContrast":
        return {"factor": flat["contrast_factor"][:, 0]}
    if name == "RandomSaturation":
        return {"saturation": flat["factor"][:, 0]}
    if name == "RandomHue":
        return {"hue": flat["factor"][:, 0]}
    if name == "RandomColorDegeneration":
        return {"factor": flat["factor"][:, 0]}
    if name == "Solarization":
        return {"addition": flat["additions"][:, 0], "threshold": flat["thresholds"][:, 0]}
    if name == "RandomInvert":
        return {"invert": flat["apply_inversion"][:, 0]}
    if name == "RandomSharpness":
        return {"factor": 2 * flat["factor"][:, 0]}
    if name == "RandomGaussianBlur":
        return {"blur": flat["should_apply_blur"][:, 0]}
    raise AssertionError(name)


def _our_draws(layer: Any, n: int) -> dict[str, np.ndarray]:
    config = compile_for([layer], "tf", size=(8, 8))
    rows = draw_rows(config.plan, np.random.default_rng(1), n).astype(np.float64)
    drawn = {key.split(".", 1)[1]: rows[:, i] for i, key in enumerate(config.plan.param_keys)}
    if "sign" in drawn:  # Keras folds the sign into the factors
        sign = drawn.pop("sign")
        drawn = {k: v * sign for k, v in drawn.items()}
    return drawn


DRAWN = [
    lambda: L.RandomFlip(),
    lambda: L.RandomRotation(0.2),
    lambda: L.RandomRotation((-0.05, 0.15)),
    lambda: L.RandomZoom((-0.3, 0.2), (0.1, 0.4)),
    lambda: L.RandomZoom(0.25),
    lambda: L.RandomTranslation(0.2, (-0.1, 0.3)),
    lambda: L.RandomShear(0.3, (0.1, 0.2)),
    lambda: L.RandomBrightness(0.4),
    lambda: L.RandomContrast(0.3),
    lambda: L.RandomContrast((0.2, 0.5)),
    lambda: L.RandomSaturation(0.6),
    lambda: L.RandomSaturation((-0.8, 0.3)),
    lambda: L.RandomHue(0.7),
    lambda: L.RandomHue((0.2, 0.6)),
    lambda: L.RandomGrayscale(0.3),
    lambda: L.RandomInvert((0.2, 0.6)),
    lambda: L.RandomColorDegeneration(0.5),
    lambda: L.Solarization(addition_factor=(0.1, 0.3), threshold_factor=0.5),
    lambda: L.RandomSharpness(0.7),
    lambda: L.RandomSharpness((0.2, 0.4)),
    lambda: L.RandomGaussianBlur((0.2, 0.6), sigma=(0.5, 0.5)),
]


@pytest.mark.parametrize(
    "make", DRAWN, ids=[f"{i}-{type(m()).__name__}" for i, m in enumerate(DRAWN)]
)
def test_draws_follow_keras_distributions(make: Callable[[], Any]) -> None:
    keras.utils.set_random_seed(0)
    n = 4000
    layer = make()
    theirs, ours = _keras_draws(layer, n), _our_draws(layer, n)
    for name, values in theirs.items():
        if name in ("flip", "grey", "invert", "blur"):
            table = [[np.sum(values > 0.5), np.sum(values <= 0.5)]]
            table.append([np.sum(ours[name] > 0.5), np.sum(ours[name] <= 0.5)])
            assert stats.chi2_contingency(table).pvalue > 1e-3
            continue
        if np.ptp(values) == 0:
            assert np.allclose(ours[name], values[0], atol=1e-6), name
            continue
        assert stats.ks_2samp(values, ours[name]).pvalue > 1e-3, name


@pytest.mark.slow
def test_random_crop_corners_follow_keras() -> None:
    """Keras draws one corner per batch: its draws over many batches against daliaug's per
    sample, both over the whole-pixel offsets."""
    keras.utils.set_random_seed(0)
    layer, n = L.RandomCrop(40, 30), 1500
    image = np.zeros((1, 48, 64, 3), np.float32)
    theirs = np.array([[int(v) for v in layer.get_random_transformation(image)] for _ in range(n)])
    config = compile_for([layer], "tf")
    rows = draw_rows(config.plan, np.random.default_rng(2), n)
    ours = np.stack([np.floor(rows[:, 1] * 9), np.floor(rows[:, 0] * 35)], axis=1)
    for axis, count in ((0, 9), (1, 35)):
        table = [np.bincount(t[:, axis].astype(int), minlength=count) for t in (theirs, ours)]
        assert stats.chi2_contingency(table).pvalue > 1e-3


def test_color_jitter_draws_as_its_brightness_and_contrast() -> None:
    jitter = L.RandomColorJitter(brightness_factor=0.3, contrast_factor=0.4)
    config = compile_for([jitter], "tf")
    assert [t.type for t in config.transforms] == ["resize", "keras_brightness", "keras_contrast"]
    assert config.transforms[1].factor == (-0.3, 0.3)
    assert config.transforms[2].factor == (1.0, 1.4)  # Keras: a number f is [0, f] here


# -- what daliaug cannot run is named -------------------------------------------------------


def test_an_unsupported_layer_is_named_with_the_supported_ones() -> None:
    with pytest.raises(ConfigError) as error:
        compile_for([L.RandomFlip(), L.Discretization(bin_boundaries=[0.5], name="post")], "tf")
    message = str(error.value)
    assert "Discretization 'post': daliaug has no equivalent" in message
    assert "RandomFlip" in message and "Normalization" in message
    assert "unsupported='keep'" in message


class MyFlip(keras.layers.RandomFlip):
    pass


@pytest.mark.parametrize(
    ("layers", "named"),
    [
        ([L.Resizing(8, 8, interpolation="bicubic", name="r")], "interpolation='bicubic'"),
        ([L.Resizing(8, 8, antialias=True)], "antialias=True"),
        (
            [L.RandomHue(0.2, name="h"), L.RandomBrightness(0.1, name="b")],
            "RandomBrightness 'b': it comes after RandomHue 'h'",
        ),
        ([L.MixUp(name="m"), L.RandomFlip(name="f")], "RandomFlip 'f': it comes after MixUp"),
        ([L.Rescaling(1 / 127.5, -1), L.RandomSaturation(0.2)], "move it before"),
        ([L.RandomInvert(value_range=(-1, 1))], "value_range=[-1, 1]"),
        ([L.Solarization(value_range=(0, 1))], "value_range=[0.0, 1.0]"),
        ([L.Rescaling(1 / 255), L.RandomContrast(0.2, name="c")], "value_range=[0.0, 255.0]"),
        ([L.Normalization(axis=None)], "no statistics yet"),
        ([L.RandomPosterization(4)], "factor=[1, 4]"),
        ([L.Equalization(bins=128)], "bins=128"),
        ([L.Rescaling(1 / 255), L.AutoContrast()], "value_range=[0.0, 255.0]"),
        ([L.RandomGaussianBlur(sigma=(0.2, 0.9))], "sigma=[0.2, 0.9]"),
        ([L.RandomGaussianBlur(kernel_size=(3, 5))], "kernel_size=[3, 5]"),
        ([L.Equalization(name="e"), L.RandomBrightness(0.1)], "it comes after Equalization 'e'"),
        ([L.Equalization(name="e"), L.RandomFlip()], "it comes after Equalization 'e'"),
        ([L.RandomPosterization((2, 2), name="p"), L.RandomZoom(0.1)], "after RandomPosterization"),
        (
            [L.RandomGaussianBlur(sigma=(0.5, 0.5), name="b"), L.CenterCrop(8, 8)],
            "after RandomGaussianBlur 'b'",
        ),
        ([L.RandomErasing(name="e"), L.RandomFlip(name="f")], "it comes after RandomErasing"),
        ([L.RandomPerspective(name="p"), L.RandomZoom(0.1)], "after RandomPerspective 'p'"),
        ([L.CutMix(name="c"), L.RandomErasing(name="e")], "it comes after CutMix 'c'"),
        ([L.RandAugment(name="r"), L.RandomFlip(name="f")], "RandomFlip 'f': it comes after"),
        ([L.Equalization(name="e"), L.RandAugment()], "it comes after Equalization 'e'"),
        (
            [L.RandomRotation(0.1, fill_mode="nearest"), L.RandomZoom(0.1, name="z")],
            "one fill",
        ),
        (
            [
                L.RandomRotation(0.1, fill_mode="constant", interpolation="nearest"),
                L.RandomZoom(0.1, fill_mode="constant", name="z"),
            ],
            "one interpolation",
        ),
    ],
)
def test_what_cannot_run_exactly_is_refused_by_name(layers: list, named: str) -> None:
    with pytest.raises(ConfigError, match="daliaug compiles") as error:
        compile_for(layers, "tf")
    assert named in str(error.value)


def test_a_fill_dali_lacks_picks_the_tensorflow_engine_with_one_warning() -> None:
    layers = [L.RandomRotation(0.1, name="r"), L.RandomZoom(0.1, name="z")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = daliaug.from_keras(layers, source={"type": "arrays"}, image_size=32)
    assert config.backend == "tf"
    backend_warnings = [str(w.message) for w in caught if w.category is BackendWarning]
    assert len(backend_warnings) == 1 and "'reflect'" in backend_warnings[0]
    assert "RandomRotation 'r', RandomZoom 'z'" in backend_warnings[0]
    with pytest.raises(ConfigError, match="backend: 'cpu', but RandomRotation 'r'"):
        daliaug.from_keras(layers, source={"type": "arrays"}, image_size=32, backend="cpu")


def test_rand_augment_converts_with_keras_factors_fill_and_a_note() -> None:
    """Keras' ``RandAugment`` becomes ``keras_rand_augment`` (its tests, against Keras' own
    layer op by op, are in ``tests/transforms/test_keras_rand_augment.py``); its sub-layers'
    ``reflect`` fill puts it on the TensorFlow engine."""
    layer = L.RandAugment(num_ops=3, factor=(0.1, 0.4), interpolation="nearest", name="ra")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = daliaug.from_keras([layer], source={"type": "arrays"}, image_size=32)
    assert config.backend == "tf" and config.interpolation == "nearest"
    (transform,) = config.transforms[1:]
    assert transform.type == "keras_rand_augment" and transform.num_ops == 3
    assert transform.factor == (0.1, 0.4) and transform.fill == "reflect"
    assert any("RandAugment 'ra': each image draws its own ops" in str(w.message) for w in caught)
    scaled = L.RandAugment(value_range=(0, 1))
    for sub in ("random_shear", "random_translation", "random_rotation"):
        getattr(scaled, sub).fill_mode = "constant"
    config = compile_for([L.Rescaling(1 / 255), scaled], "cpu")
    assert config.backend == "cpu" and config.transforms[1].fill == 0.0
    with pytest.raises(ConfigError, match=r"value_range=\[0.0, 255.0\]"):
        compile_for([L.Rescaling(1 / 255), L.RandAugment()], "tf")
    empty = compile_for([L.RandAugment(num_ops=0)], "tf")
    assert [t.type for t in empty.transforms] == ["resize"]


def test_seeds_are_ignored_with_a_note() -> None:
    with pytest.warns(UserWarning, match=r"RandomFlip 'f': seed=7 is ignored"):
        compile_for([L.RandomFlip(seed=7, name="f")], "tf")


def test_equalization_per_image_comes_with_a_note() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_for([L.Equalization(name="eq")], "tf")
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("Equalization 'eq': each image is equalized") for m in messages)


def test_the_model_input_sets_the_size_and_channels() -> None:
    model = keras.Sequential(
        [keras.Input((40, 30, 1)), L.RandomFlip(), L.CenterCrop(20, 20), L.Flatten()]
    )
    config = daliaug.from_keras(model, source={"type": "arrays"})
    assert config.image_size == (20, 20) and config.channels == 1
    assert [t.type for t in config.transforms] == ["resize", "keras_flip", "keras_center_crop"]
    assert config.transforms[0].size == (40, 30)
    with pytest.raises(ConfigError, match=r"image_size: \[32, 32\], but the model takes"):
        daliaug.from_keras(model, source={"type": "arrays"}, image_size=32)


def test_mixup_matches_keras_with_its_partners_and_weights(backend: str) -> None:
    from daliaug.transforms.base import random_partners

    x = photos(*SIZE)
    layer = L.MixUp(alpha=0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        config = daliaug.from_keras(
            [layer],
            source={"type": "arrays"},
            image_size=SIZE,
            batch_size=N,
            shuffle=False,
            label_mode="categorical",
            backend=backend,
            seed=0,
        )
    assert [t.type for t in config.transforms] == ["resize", "mixup"]
    assert config.transforms[1].alpha == pytest.approx(0.4)
    rows = draw_rows(config.plan, np.random.default_rng(3), N)
    name = "tf" if backend == "tf" else "dali"
    labels = np.arange(N) % 2
    samples = array_samples(x, labels)
    batch = next(iter(engine_batches(name, config, samples, "cpu", params=rows)))
    order = random_partners(rows[:, 0], np.ones(N, bool)).astype(np.int64)
    transformation = {"mix_weight": rows[:, 1], "permutation_order": order}
    expected = layer.transform_images(x.astype(np.float32), transformation)
    assert_matches(config, np.asarray(batch[0], np.float64), np.asarray(expected), rows)


def test_cutmix_erasing_and_perspective_convert() -> None:
    """Their transforms follow Keras' semantics (tests/transforms/test_keras_cutmix.py,
    test_keras_random_erasing.py, test_keras_perspective.py compare them with these layers)."""
    layers = [
        L.RandomPerspective(0.6, scale=0.4, fill_value=20, interpolation="nearest"),
        L.RandomErasing((0.2, 0.4), scale=(0.1, 0.2), fill_value=(1, 2, 3)),
        L.CutMix((0.3, 0.8)),
    ]
    config = daliaug.from_keras(
        layers, source={"type": "arrays"}, image_size=SIZE, label_mode="categorical"
    )
    perspective, erasing, cutmix = config.transforms[1:]
    assert (perspective.type, perspective.probability, perspective.scale) == (
        "keras_perspective",
        0.3,
        0.4,
    )
    assert (perspective.fill, perspective.interpolation) == (20.0, "nearest")
    assert (erasing.type, erasing.probability) == ("keras_random_erasing", pytest.approx(0.3))
    assert (erasing.scale, erasing.value) == ((0.1, 0.2), (1.0, 2.0, 3.0))
    assert (cutmix.type, cutmix.factor) == ("keras_cutmix", (0.3, 0.8))


def test_mixup_draws_keras_beta() -> None:
    keras.utils.set_random_seed(0)
    layer, n = L.MixUp(alpha=0.3), 4000
    theirs = layer.get_random_transformation(np.zeros((n, 4, 4, 3), np.float32))["mix_weight"]
    config = daliaug.from_keras(
        [layer], source={"type": "arrays"}, image_size=8, label_mode="categorical"
    )
    ours = draw_rows(config.plan, np.random.default_rng(4), n)[:, 1]
    assert stats.ks_2samp(np.asarray(theirs), ours).pvalue > 1e-3


def test_channels_first_layers_match_keras_on_nchw_photos(backend: str) -> None:
    """``data_format="channels_first"`` layers take and give NCHW images, as Keras'."""
    x = photos(*SIZE)
    first = {"data_format": "channels_first"}
    rotate = L.RandomRotation((0.07, 0.07), fill_mode="constant", fill_value=40, **first)
    stack = [L.RandomFlip("horizontal", **first), rotate, L.CenterCrop(33, 47, **first)]
    config = compile_for(stack, backend)
    assert config.output.layout == "NCHW"
    flips = np.zeros((N, 1), np.float32)  # the flip pinned off: rotation and crop compared
    rows = np.concatenate([flips, np.full((N, 1), 0.07 * 360, np.float32)], 1)
    ours = run(config, x, rows)
    assert ours.shape == (N, 3, 33, 47)
    nchw = x.astype(np.float32).transpose(0, 3, 1, 2)
    theirs = np.asarray(stack[2](rotate(nchw, training=True)), np.float64)
    to_nhwc = (0, 2, 3, 1)
    assert_matches(config, ours.transpose(to_nhwc), theirs.transpose(to_nhwc), rows)
