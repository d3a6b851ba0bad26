"""daliaug's ``apply_transform`` and its pipelines reproduce Keras' own ``apply_transform`` for
the same explicit parameters, on real-looking square and non-square images, for every fill mode
and interpolation orders 0 and 1.

Tolerances: ``apply_transform`` computes in float32 without rounding, as Keras does: within
0.01 wherever both sample inside the image (and everywhere for ``nearest`` and ``reflect``
fills). The pipelines round the warp to ``uint8``: within 0.51. With ``brightness`` Keras
truncates to whole numbers twice (PIL) where daliaug rounds: ``apply_transform`` within ``1 +
brightness``, the pipelines within ``1.5 (1 + brightness)``
(rounding the warp before the shift and the brightness). The ``constant`` fill
matches SciPy's border (``fill_edge: cut``: a point beyond the outermost pixel centres takes the
fill) everywhere but within 0.002 pixels of those centres, where SciPy's float64 rounding
decides; SciPy's ``wrap`` repeats with a period one pixel shorter than the image, so only
points inside the image are compared there (see the README)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from daliaug.outputs.bridges import engine_batches
from daliaug.parity.inputs import parity_image
from daliaug.sources.arrays import array_samples
from tests.keras.conftest import daliaug_generator, inside, keras_generator, on_edge

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
    if fill_mode == "wrap":
        diff = diff[inside(GEOMETRY, shape)]
    if fill_mode == "constant":
        diff = diff[~on_edge(GEOMETRY, shape)]
    assert diff.max() <= 0.01, diff.max()


@pytest.mark.parametrize("theta", [45.0, 90.0, -30.0])
def test_constant_fill_leaves_no_band(backend: str, theta: float) -> None:
    """A turned constant image with ``fill_mode="constant"``: the pipelines (arrays and files
    alike) and ``apply_transform`` give the fill wherever Keras does, with no band of blended
    values along the border (before ``fill_edge: cut``, 0.586 at 45 degrees where Keras has
    0). Quarter turns put points exactly on the outermost centres: compared off them."""
    shape = (16, 16)
    image = np.full((*shape, 3), 200, np.uint8)
    params = {"theta": theta}
    keras = keras_generator(fill_mode="constant").apply_transform(image.astype(np.float32), params)
    keep = ~on_edge(params, shape)
    generator = daliaug_generator(fill_mode="constant")
    ours = generator.apply_transform(image.astype(np.float32), params)
    assert np.abs(ours - keras)[keep].max() <= 0.01
    config = generator.config(shape, 3, label_mode="none", shuffle=False, backend=backend)
    affine = config.transforms[0]
    rows = np.array([list(affine.from_keras(params, shape).values())], np.float32)
    engine = "tf" if backend == "tf" else "dali"
    (batch,) = engine_batches(engine, config, array_samples(image[None], None), "cpu", params=rows)
    assert np.abs(batch[0][0] - keras)[keep].max() <= 0.51
    assert np.array_equal(batch[0][0][keep] == 0, keras[keep] == 0)


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


def test_file_pipeline_constant_fill_matches_keras(backend: str, class_dir: Path) -> None:
    """Decoded files take the other resampling path (one image at a time): the same border."""
    from daliaug.keras.samples import list_directory

    generator = daliaug_generator(fill_mode="constant", cval=60.0)
    listing = list_directory(str(class_dir), ["cat"], False, 0.0, None, "sparse")
    config = generator.config(
        (24, 24), 3, resize=True, label_mode="float", shuffle=False, backend=backend
    )
    params = [{"theta": 30.0 * i - 50, "tx": i - 2.0, "zx": 0.9} for i in range(5)]
    affine = config.transforms[1]
    rows = np.array([list(affine.from_keras(p, (24, 24)).values()) for p in params], np.float32)
    engine = "tf" if backend == "tf" else "dali"
    (batch,) = engine_batches(
        engine, config.model_copy(update={"batch_size": 8}), listing.samples(), "cpu", params=rows
    )
    keras = keras_generator(fill_mode="constant", cval=60.0)
    for image, p, path in zip(batch[0], params, listing.filepaths, strict=True):
        source = np.asarray(Image.open(path), np.float32)
        expected = keras.apply_transform(source, p)
        diff = np.abs(image - expected)[~on_edge(p, (24, 24))]
        assert diff.max() <= 0.51, diff.max()


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
CONSTANT = {**EVERYTHING, "fill_mode": "constant", "cval": 90.0}


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs", [EVERYTHING, AXIS_ALIGNED, CONSTANT], ids=["all", "axis-aligned", "constant"]
)
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
    if kwargs.get("fill_mode") == "constant":
        diff[np.stack([on_edge(p, shape) for p in drawn])] = 0.0
    limit = 1.5 * (1 + np.array([p["brightness"] for p in drawn])[:, None, None, None])
    assert np.all(diff <= limit + 0.01), (diff - limit).max()
    assert diff.mean() <= 1.2, diff.mean()
