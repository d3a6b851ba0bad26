"""The ``keras_affine`` transform reproduces Keras' own ``ImageDataGenerator.apply_transform``
for explicit parameters, on both backends (DALI's CPU pipeline and the TF backend), on square
and non-square real-looking images, for every fill mode and interpolation orders 0 and 1.

Keras resamples with SciPy in float and does not round, nor does daliaug: wherever both sample
the image they differ by float32 arithmetic only. At the border they may differ more: SciPy's
``constant`` mode gives the fill to the outer half pixel that bilinear sampling blends, and
SciPy's ``wrap`` repeats with a period one pixel shorter than the image."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.parity.inputs import parity_image
from daliaug.parity.measure import inside_source
from daliaug.plan import Plan
from daliaug.transforms.keras_affine import KerasAffine
from tests.helpers import augment, write_image_dir

PARAMS = {
    "theta": 23.0,
    "tx": 4.0,
    "ty": -3.0,
    "shear": 12.0,
    "zx": 0.9,
    "zy": 1.15,
    "flip_horizontal": True,
    "flip_vertical": False,
}
SHAPES = [(64, 64), (48, 80)]
RANGES = {"type": "keras_affine", "rotation_range": 180, "shear_range": 30}
"""Explicit parameters lie within the transform's ranges (a transform without a rotation or
shear range is axis-aligned, and DALI resamples it as a resize)."""


def test_axis_aligned_without_rotation_or_shear() -> None:
    assert KerasAffine(zoom_range=0.2, width_shift_range=0.1, horizontal_flip=True).axis_aligned
    assert not KerasAffine(rotation_range=5).axis_aligned
    assert not KerasAffine(shear_range=5).axis_aligned


def keras_apply(image: np.ndarray, params: dict, **generator: object) -> np.ndarray:
    """Keras' own ``apply_transform`` (channels last) on a float32 copy of ``image``."""
    from keras.src.legacy.preprocessing.image import ImageDataGenerator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keras = ImageDataGenerator(data_format="channels_last", **generator)
        return keras.apply_transform(image.astype(np.float32), params)


@pytest.fixture(scope="module", params=SHAPES, ids=["square", "non-square"])
def image_dir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[np.ndarray, Path]:
    h, w = request.param
    image = parity_image(h, w, seed=h)
    return image, write_image_dir(tmp_path_factory.mktemp("keras"), {"a": [image]})


def run(
    backend: str, root: Path, image: np.ndarray, transform: dict, params: dict, order: int
) -> tuple[np.ndarray, np.ndarray]:
    """daliaug's output for Keras' ``params`` and the pixels whose source point lies one pixel
    inside the image."""
    h, w = image.shape[:2]
    affine = KerasAffine(**transform)
    row = {f"0.{k}": v for k, v in affine.from_keras(params, (h, w)).items()}
    interpolation = "nearest" if order == 0 else "linear"
    out = augment(backend, root, [transform], (h, w), row, interpolation=interpolation)
    forward = Plan.of([affine], (h, w)).geometry(row, Canvas(float(h), float(w)), NUMPY.math)
    return out, inside_source(forward.forward, (h, w), (h, w), 1.0)


def check(out: np.ndarray, keras: np.ndarray, where: np.ndarray | None, order: int) -> None:
    diff = np.abs(out - keras) if where is None else np.abs(out - keras)[where]
    assert diff.max() <= (0.02 if order == 1 else 0.0), diff.max()  # float32 arithmetic
    assert diff.mean() <= (0.001 if order == 1 else 0.0), diff.mean()


@pytest.mark.parametrize("order", [1, 0])
@pytest.mark.parametrize("fill", ["nearest", 77.0])
def test_matches_keras_apply_transform(backend: str, image_dir, fill, order: int) -> None:
    image, root = image_dir
    transform = {**RANGES, "horizontal_flip": True, "fill": fill}
    out, inside = run(backend, root, image, transform, PARAMS, order)
    constant = {"fill_mode": "constant", "cval": fill}
    mode = {"fill_mode": "nearest"} if fill == "nearest" else constant
    keras = keras_apply(image, PARAMS, interpolation_order=order, **mode)
    check(out, keras, None if fill == "nearest" else inside, order)
    if fill != "nearest":  # the fill itself where both fill
        outside = ~inside_source_of(image, transform, -1.0)
        assert np.all(out[outside] == fill) and np.all(keras[outside] == fill)


def inside_source_of(image: np.ndarray, transform: dict, margin: float) -> np.ndarray:
    h, w = image.shape[:2]
    affine = KerasAffine(**transform)
    row = {f"0.{k}": v for k, v in affine.from_keras(PARAMS, (h, w)).items()}
    geometry = Plan.of([affine], (h, w)).geometry(row, Canvas(float(h), float(w)), NUMPY.math)
    return inside_source(geometry.forward, (h, w), (h, w), margin)


@pytest.mark.parametrize("order", [1, 0])
@pytest.mark.parametrize("fill", ["reflect", "wrap"])
def test_reflect_and_wrap_on_the_tf_backend(image_dir, fill: str, order: int) -> None:
    image, root = image_dir
    transform = {**RANGES, "horizontal_flip": True, "fill": fill}
    out, inside = run("tf", root, image, transform, PARAMS, order)
    keras = keras_apply(image, PARAMS, fill_mode=fill, interpolation_order=order)
    check(out, keras, None if fill == "reflect" else inside, order)


def test_explicit_parameters_one_at_a_time(backend: str, image_dir) -> None:
    """Each Keras parameter alone, including shifts along each axis and a vertical flip."""
    image, root = image_dir
    transform = {**RANGES, "fill": "nearest"}
    for params in (
        {"theta": -40.0},
        {"tx": 7.0},
        {"ty": 5.0},
        {"shear": -20.0},
        {"zx": 1.3, "zy": 0.7},
        {"flip_vertical": True},
    ):
        out, _ = run(backend, root, image, transform, params, 1)
        check(out, keras_apply(image, params, fill_mode="nearest"), None, 1)


def test_without_quirks_rotation_turns_about_the_image_centre(backend: str, image_dir) -> None:
    """``keras_quirks: false`` centres rotation on ``(W/2, H/2)``: 180 degrees is then exactly
    both flips, on any shape (Keras' own centre is off by (H - W)/2 on non-square images)."""
    image, root = image_dir
    transform = {**RANGES, "keras_quirks": False, "fill": "nearest"}
    out, _ = run(backend, root, image, transform, {"theta": 180.0}, 0)
    assert np.array_equal(out, image[::-1, ::-1])


def test_shift_ranges_and_their_axes() -> None:
    """Keras' reading of the shift ranges, and which parameter each one drives: with the quirks
    (Keras 3's behaviour) ``height_shift_range`` drives ``tx`` (columns) as a fraction of the
    height; without, ``ty`` (rows)."""
    from daliaug.epoch import NumpyRandom

    rng = NumpyRandom(np.random.default_rng(0), 2000)
    quirky = KerasAffine(height_shift_range=0.25)
    drawn = quirky.draw(rng)
    assert np.all(drawn["ty"] == 0) and np.abs(drawn["tx"]).max() <= 0.25
    assert quirky.to_keras({**dict.fromkeys(KerasAffine.params, 0.0), "tx": 0.1}, (40, 80))[
        "tx"
    ] == pytest.approx(4.0)
    plain = KerasAffine(height_shift_range=0.25, keras_quirks=False)
    assert np.all(plain.draw(rng)["tx"] == 0)
    assert KerasAffine(width_shift_range=3).width_shift_range.range == (0.0, 1.0, 2.0)
    assert KerasAffine(width_shift_range=[0.1, 0.2]).width_shift_range.pixels is False
    assert KerasAffine(width_shift_range=2.5).width_shift_range.pixels is True
    assert KerasAffine(zoom_range=0.3).zoom_range == pytest.approx((0.7, 1.3))


def test_reflect_and_wrap_are_rejected_for_dali() -> None:
    from daliaug.config import load_config
    from daliaug.errors import ConfigError

    base = {"source": {"type": "arrays"}, "image_size": 8}
    with pytest.raises(ConfigError, match=r"transforms\.0\.fill: 'reflect' needs backend: tf"):
        load_config({**base, "transforms": [{"type": "keras_affine", "fill": "reflect"}]})
    load_config({**base, "backend": "tf", "transforms": [{"type": "keras_affine", "fill": "wrap"}]})
