"""``flow``: what it yields per case (``x``; ``(x, y)``; ``(x, y, sample_weight)``), ``len()``
and Keras' iterator attributes, standardization as Keras computes it (``rescale``,
``featurewise_*`` after ``fit``, ``samplewise_*``, ZCA, ``preprocessing_function``), the
subsets of ``validation_split``, float input of any range, any number of channels, other
inputs beside the images, ``save_to_dir``, ``channels_first``, and ``model.fit``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.keras.conftest import daliaug_generator, images, keras_generator


def ours_epoch(ds: object) -> list[tuple[np.ndarray, ...]]:
    return [tuple(t.numpy() for t in b) if isinstance(b, tuple) else (b.numpy(),) for b in ds]


@pytest.mark.slow
def test_what_flow_yields(backend: str) -> None:
    x, y = images(10), np.arange(10) % 3
    generator = daliaug_generator(rotation_range=20, horizontal_flip=True, backend=backend)
    only_x = generator.flow(x, batch_size=4, seed=1)
    assert len(only_x) == 3 and only_x.n == 10 and only_x.batch_size == 4
    assert [b[0].shape for b in ours_epoch(only_x)] == [(4, 24, 24, 3)] * 2 + [(2, 24, 24, 3)]
    with_y = ours_epoch(generator.flow(x, y, batch_size=4, shuffle=False))
    assert [len(b) for b in with_y] == [2, 2, 2]
    assert np.array_equal(np.concatenate([b[1] for b in with_y]), y.astype(np.float32))
    assert with_y[0][0].dtype == np.float32 and with_y[0][1].dtype == np.float32
    weights = np.linspace(0.5, 2, 10)
    weighted = ours_epoch(generator.flow(x, y, batch_size=4, shuffle=False, sample_weight=weights))
    assert np.allclose(np.concatenate([b[2] for b in weighted]), weights)
    one_hot = np.eye(3, dtype=np.float32)[y]
    targets = ours_epoch(generator.flow(x, one_hot, batch_size=4, shuffle=False))
    assert np.array_equal(np.concatenate([b[1] for b in targets]), one_hot)


@pytest.mark.slow
def test_epochs_shuffle_and_next() -> None:
    x, y = images(9), np.arange(9)
    flow = daliaug_generator().flow(x, y, batch_size=4, seed=3)
    first = np.concatenate([b[1] for b in ours_epoch(flow)])
    second = np.concatenate([b[1] for b in ours_epoch(flow)])
    assert sorted(first) == sorted(second) == list(range(9)) and not np.array_equal(first, second)
    flow.reset()
    x_batch, _ = next(flow)
    assert isinstance(x_batch, np.ndarray) and x_batch.shape == (4, 24, 24, 3)
    assert [len(next(flow)[1]) for _ in range(3)] == [4, 1, 4]  # runs on into the next epoch


def keras_epoch(generator: object, x: np.ndarray, **kwargs: object) -> np.ndarray:
    iterator = generator.flow(x, batch_size=4, shuffle=False, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.concatenate([iterator[i] for i in range(len(iterator))])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rescale": 1 / 255},
        {"featurewise_center": True, "featurewise_std_normalization": True, "rescale": 1 / 255},
        {"featurewise_center": True},
        {"samplewise_center": True, "samplewise_std_normalization": True, "rescale": 0.5},
        {"zca_whitening": True, "rescale": 1 / 255},
        {"preprocessing_function": lambda image: image[::-1] * 0.5 + 3, "rescale": 2.0},
    ],
    ids=["rescale", "featurewise", "center", "samplewise", "zca", "preprocessing"],
)
def test_standardization_equals_keras(backend: str, kwargs: dict) -> None:
    """No augmentation, so the pipeline's images are the inputs: the outputs must equal Keras'
    own standardization of them."""
    x = images(10, 12, 12)
    ours, theirs = daliaug_generator(backend=backend, **kwargs), keras_generator(**kwargs)
    for generator in (ours, theirs):
        generator.fit(x)
    for name in ("mean", "std", "zca_whitening_matrix"):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a is None) == (b is None) and (a is None or np.allclose(a, b, atol=1e-4)), name
    flow = ours.flow(x, batch_size=4, shuffle=False)
    got = np.concatenate([b[0] for b in ours_epoch(flow)])
    expected = keras_epoch(theirs, x.astype(np.float32))
    scale = max(1.0, float(np.abs(expected).max()))
    assert np.allclose(got, expected, atol=2e-4 * scale), np.abs(got - expected).max()
    single = ours.standardize(x[0].astype(np.float32))
    assert np.allclose(single, theirs.standardize(x[0].astype(np.float32)), atol=2e-4 * scale)


def test_fit_with_augmentation_rounds() -> None:
    generator = daliaug_generator(featurewise_center=True, rotation_range=10)
    generator.fit(images(4, 12, 12), augment=True, rounds=3, seed=1)
    assert generator.mean.shape == (1, 1, 3)


def test_validation_split_subsets_equal_keras() -> None:
    x, y = images(10), np.repeat([0, 1], 5)[np.array([0, 5, 1, 6, 2, 7, 3, 8, 4, 9])]
    ours = daliaug_generator(validation_split=0.3)
    theirs = keras_generator(validation_split=0.3)
    for subset in ("training", "validation"):
        got = ours_epoch(ours.flow(x, y, shuffle=False, subset=subset, batch_size=32))[0][1]
        expected = theirs.flow(x, y, shuffle=False, subset=subset, batch_size=32)[0][1]
        assert np.array_equal(got, expected), subset
    with pytest.raises(ValueError, match="different number of classes"):
        ours.flow(x, np.repeat([0, 1], 5), subset="training")


def test_float_input_of_any_range_equals_keras(backend: str) -> None:
    """Keras takes any floats: so does the drop-in. ``x / 255`` (Keras' cifar10 example) and
    whole numbers are exact; other values are rounded to the nearest of 256 levels spanning
    their range, with a warning giving the largest change."""
    x = images(6, 12, 12)
    kwargs = {"featurewise_center": True, "rescale": 2.0}
    for values, exact in ((x / np.float32(255), True), (np.sqrt(x) * 3.0 - 20.0, False)):
        ours, theirs = daliaug_generator(backend=backend, **kwargs), keras_generator(**kwargs)
        ours.fit(values)
        theirs.fit(values)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            flow = ours.flow(values, batch_size=3, shuffle=False)
        rounded = [str(w.message) for w in caught if "256 levels" in str(w.message)]
        assert not rounded if exact else rounded
        got = np.concatenate([b[0] for b in ours_epoch(flow)])
        expected = keras_epoch(theirs, values.astype(np.float32))
        step = 0.0 if exact else (values.max() - values.min()) / 255
        assert np.abs(got - expected).max() <= 1e-5 + 2.0 * step / 2, np.abs(got - expected).max()
    with pytest.warns(UserWarning, match="a change of at most 0.3"):
        daliaug_generator().flow(np.minimum(x, 250) + np.float32(0.3))


@pytest.mark.slow
def test_augmentation_works_in_the_inputs_range(backend: str) -> None:
    """The fill, the channel shift and the brightness act on ``x / 255`` as on ``x`` scaled:
    ``cval`` and ``channel_shift_range`` are in the input's units (as in Keras), the same seed
    draws the same parameters."""
    x = images(8, 16, 16)
    common = {"rotation_range": 60, "zoom_range": 0.3, "fill_mode": "constant"}
    common |= {"brightness_range": [0.6, 1.3], "backend": backend}
    unit = daliaug_generator(cval=100.0, channel_shift_range=40.0, **common)
    fraction = daliaug_generator(cval=100 / 255, channel_shift_range=40 / 255, **common)
    a = np.concatenate([b[0] for b in ours_epoch(unit.flow(x, batch_size=4, seed=2))])
    b = np.concatenate(
        [b[0] for b in ours_epoch(fraction.flow(x / np.float32(255), batch_size=4, seed=2))]
    )
    assert np.abs(a / 255 - b).max() <= 1e-5


@pytest.mark.parametrize("channels", [4, 2])
def test_any_number_of_channels(backend: str, channels: int) -> None:
    """Keras takes RGBA arrays (and warns about counts other than 1, 3 and 4, then goes on):
    the same, and the geometry (equal to Keras' ``apply_transform``) and the colour ops act on
    every channel."""
    x = np.concatenate([images(4, 16, 16), images(4, 16, 16, seed=9)], -1)[..., :channels]
    kwargs = {"rotation_range": 30, "channel_shift_range": 20.0, "fill_mode": "nearest"}
    warns = pytest.warns(UserWarning, match="expected either 1, 3, or 4 channels")
    with warns if channels != 4 else warnings.catch_warnings():
        flow = daliaug_generator(backend=backend, **kwargs).flow(x, batch_size=4)
    assert flow[0].shape == (4, 16, 16, channels)
    params = {"theta": 20.0, "tx": 2.0, "channel_shift_intensity": 15.0}
    image = x[0].astype(np.float32)
    ours = daliaug_generator(**kwargs).apply_transform(image, params)
    theirs = keras_generator(**kwargs).apply_transform(image, params)
    assert np.abs(ours - theirs).max() <= 0.01


@pytest.mark.slow
def test_other_inputs_as_keras(backend: str) -> None:
    """``flow((x, extra), y)`` yields ``((images, extra), y[, weights])`` (Keras: a list for
    the inputs), in the same batches; ``model.fit`` trains a two-input model on it."""
    import keras

    x, y = images(10, 12, 12), np.arange(10) % 2
    extra = np.arange(20.0).reshape(10, 2)
    weights = np.linspace(1, 2, 10)
    ours = daliaug_generator(backend=backend)
    theirs = keras_generator()
    for args in (((x, extra), y), ((x, [extra, extra * 2]), None)):
        flow = ours.flow(*args, batch_size=4, shuffle=False, sample_weight=weights)
        expected = theirs.flow(*args, batch_size=4, shuffle=False, sample_weight=weights)
        for i in range(len(expected)):
            got = keras.tree.flatten(flow[i])
            want = keras.tree.flatten(expected[i])
            assert len(got) == len(want)
            assert all(np.allclose(a, b) for a, b in zip(got, want, strict=True))
        first = keras.tree.flatten(next(iter(flow)))
        assert all(
            np.allclose(a, b) for a, b in zip(first, keras.tree.flatten(expected[0]), strict=True)
        )
    image_in, extra_in = keras.Input((12, 12, 3)), keras.Input((2,))
    merged = keras.layers.Concatenate()([keras.layers.Flatten()(image_in), extra_in])
    model = keras.Model([image_in, extra_in], keras.layers.Dense(1)(merged))
    model.compile("sgd", "mse")
    flow = ours.flow((x / np.float32(255), extra), y, batch_size=4)
    assert np.isfinite(model.fit(flow, epochs=1, verbose=0).history["loss"]).all()


@pytest.mark.slow
def test_save_to_dir_writes_what_it_yields(tmp_path: Path) -> None:
    """Every yielded image is written as Keras names it (``{prefix}_{index}_{hash}.png``,
    the sample's index) and scales it (its own range to 0..255)."""
    from keras.utils import array_to_img

    x = images(5, 12, 12)
    ours_dir, keras_dir = tmp_path / "ours", tmp_path / "keras"
    ours_dir.mkdir()
    keras_dir.mkdir()
    kwargs = {"batch_size": 5, "shuffle": False, "save_prefix": "aug"}
    flow = daliaug_generator(rotation_range=20, rescale=1 / 255).flow(
        x, save_to_dir=str(ours_dir), **kwargs
    )
    (batch,) = ours_epoch(flow)
    keras_generator().flow(x, save_to_dir=str(keras_dir), **kwargs)[0]

    def indices(folder: Path) -> list[int]:
        return sorted(int(p.stem.split("_")[1]) for p in folder.glob("aug_*_*.png"))

    assert indices(ours_dir) == indices(keras_dir) == list(range(5))
    for i in range(5):
        (path,) = ours_dir.glob(f"aug_{i}_*.png")
        expected = np.asarray(array_to_img(batch[0][i], scale=True))
        assert np.array_equal(np.asarray(Image.open(path)), expected)


def test_channels_first(backend: str) -> None:
    x = images(4).transpose(0, 3, 1, 2)
    generator = daliaug_generator(data_format="channels_first", backend=backend)
    (batch,) = ours_epoch(generator.flow(x, shuffle=False))
    assert np.array_equal(batch[0], x.astype(np.float32))
    assert generator.flow(x).image_shape == (3, 24, 24)


def test_model_fit_takes_the_flow_as_it_is() -> None:
    import keras

    x, y = images(16, 16, 16), np.arange(16) % 2
    flow = daliaug_generator(rotation_range=10, rescale=1 / 255).flow(x, y, batch_size=8)
    model = keras.Sequential(
        [keras.Input((16, 16, 3)), keras.layers.Flatten(), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    history = model.fit(flow, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()


@pytest.mark.gpu
def test_flow_on_the_gpu_trains() -> None:
    """On a GPU the flow is a GPU-placed DALI dataset: ``len()`` still answers, ``model.fit``
    takes it as it is."""
    import keras

    x, y = images(32, 16, 16), np.arange(32) % 2
    flow = daliaug_generator(rotation_range=10, channel_shift_range=20.0, rescale=1 / 255).flow(
        x, y, batch_size=8, sample_weight=np.ones(32)
    )
    assert flow.config.backend == "auto" and len(flow) == 4
    model = keras.Sequential(
        [keras.Input((16, 16, 3)), keras.layers.Flatten(), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    assert np.isfinite(model.fit(flow, epochs=1, verbose=0).history["loss"]).all()
