"""daliaug's ``apply_transform`` and its pipelines reproduce Keras' own ``apply_transform`` for
the same explicit parameters, on real-looking square and non-square images, for every fill mode
and interpolation orders 0 and 1.

Tolerances: ``apply_transform`` computes in float32 without rounding, as Keras does: within
0.01 wherever both sample inside the image (and everywhere for ``nearest`` and ``reflect``
fills). The pipelines round the warp to ``uint8``: within 0.51. With ``brightness`` Keras
truncates to whole numbers twice (PIL) where daliaug rounds: ``apply_transform`` within ``1 +
brightness``, the pipelines within ``1.5 (1 + brightness)``
(rounding the warp before the shift and the brightness). Outside the
image, SciPy's ``constant`` fills the outer half pixel that bilinear sampling blends, and its
``wrap`` repeats with a period one pixel shorter than the image (see the README)."""

from __future__ import annotations

import numpy as np
import pytest

from daliaug.outputs.numpy import batches as engine_batches
from daliaug.parity.inputs import parity_image
from daliaug.sources.arrays import array_samples
from tests.keras.conftest import daliaug_generator, inside, keras_generator

SHAPES = [(32, 32), (24, 40)]
GEOMETRY = {
    "theta": -28.0,
    "tx": 3.0,
    "ty": 5.0,
    "shear": 17.0,
    "zx": 1.2,
    "zy": 0.85,
    "flip_horizontal": False,
    "flip_vertical": True,
}


@pytest.mark.parametrize("shape", SHAPES, ids=["square", "non-square"])
@pytest.mark.parametrize("order", [1, 0])
@pytest.mark.parametrize("fill_mode", ["nearest", "constant", "reflect", "wrap"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_apply_transform_matches_keras(shape, order: int, fill_mode: str, data_format) -> None:
    kwargs = {"fill_mode": fill_mode, "cval": 90.0, "interpolation_order": order}
    kwargs["data_format"] = data_format
    image = parity_image(*shape, seed=5).astype(np.float32)
    if data_format == "channels_first":
        image = image.transpose(2, 0, 1)
    ours = daliaug_generator(**kwargs).apply_transform(image, GEOMETRY)
    theirs = keras_generator(**kwargs).apply_transform(image, GEOMETRY)
    assert ours.shape == theirs.shape
    if data_format == "channels_first":
        ours, theirs = ours.transpose(1, 2, 0), theirs.transpose(1, 2, 0)
    diff = np.abs(ours - theirs)
    if fill_mode in ("constant", "wrap"):
        diff = diff[inside(GEOMETRY, shape)]
    assert diff.max() <= 0.01, diff.max()


def test_channel_shift_and_brightness_match_keras() -> None:
    image = parity_image(32, 32, seed=2).astype(np.float32)
    shifted = {**GEOMETRY, "channel_shift_intensity": -35.0}
    ours = daliaug_generator().apply_transform(image, shifted)
    assert np.abs(ours - keras_generator().apply_transform(image, shifted)).max() <= 0.01
    bright = {**GEOMETRY, "brightness": 1.3}
    diff = np.abs(
        daliaug_generator().apply_transform(image, bright)
        - keras_generator().apply_transform(image, bright)
    )
    assert diff.max() <= 2.3 and diff.mean() <= 1.5, (diff.max(), diff.mean())


def test_random_transform_is_apply_of_get_random_transform() -> None:
    generator = daliaug_generator(rotation_range=30, zoom_range=0.2, horizontal_flip=True)
    image = parity_image(24, 24, seed=1).astype(np.float32)
    params = generator.get_random_transform(image.shape, seed=11)
    expected = generator.apply_transform(image, params)
    assert np.array_equal(generator.random_transform(image, seed=11), expected)


EVERYTHING = {
    "rotation_range": 40,
    "width_shift_range": 0.2,
    "height_shift_range": 0.2,
    "shear_range": 20,
    "zoom_range": 0.3,
    "horizontal_flip": True,
    "vertical_flip": True,
    "channel_shift_range": 40.0,
    "brightness_range": [0.6, 1.4],
    "fill_mode": "nearest",
}
AXIS_ALIGNED = {k: v for k, v in EVERYTHING.items() if k not in ("rotation_range", "shear_range")}


@pytest.mark.parametrize("kwargs", [EVERYTHING, AXIS_ALIGNED], ids=["all", "axis-aligned"])
@pytest.mark.parametrize("shape", SHAPES, ids=["square", "non-square"])
def test_pipeline_reproduces_keras_apply_transform(backend: str, shape, kwargs: dict) -> None:
    """The drop-in's config through a backend's pipeline, with parameters Keras' own
    ``get_random_transform`` drew, against Keras' ``apply_transform`` of the same images
    (without rotation and shear DALI resamples with a resize of a source window)."""
    keras = keras_generator(**kwargs)
    x = np.stack([parity_image(*shape, seed=20 + i) for i in range(6)])
    np.random.seed(4)
    drawn = [keras.get_random_transform(image.shape) for image in x]
    expected = np.stack(
        [
            keras.apply_transform(image.astype(np.float32), p)
            for image, p in zip(x, drawn, strict=True)
        ]
    )
    config = daliaug_generator(**kwargs).config(
        shape, 3, label_mode="none", shuffle=False, backend=backend, batch_size=4
    )
    affine = config.transforms[0]
    rows = np.array(
        [
            [*affine.from_keras(p, shape).values(), p["channel_shift_intensity"], p["brightness"]]
            for p in drawn
        ],
        np.float32,
    )
    assert len(config.plan.param_keys) == rows.shape[1]
    batches = engine_batches(
        "tf" if backend == "tf" else "dali", config, array_samples(x, None), "cpu", params=rows
    )
    out = np.concatenate([batch[0] for batch in batches]).astype(np.float64)
    diff = np.abs(out - expected)
    limit = 1.5 * (1 + np.array([p["brightness"] for p in drawn])[:, None, None, None])
    assert np.all(diff <= limit + 0.01), (diff - limit).max()
    assert diff.mean() <= 1.2, diff.mean()
