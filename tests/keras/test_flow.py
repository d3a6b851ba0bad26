"""``flow``: what it yields per case (``x``; ``(x, y)``; ``(x, y, sample_weight)``), ``len()``
and Keras' iterator attributes, standardization as Keras computes it (``rescale``,
``featurewise_*`` after ``fit``, ``samplewise_*``, ZCA, ``preprocessing_function``), the
subsets of ``validation_split``, float input, ``channels_first``, and ``model.fit``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.keras.conftest import daliaug_generator, images, keras_generator


def ours_epoch(ds: object) -> list[tuple[np.ndarray, ...]]:
    return [tuple(t.numpy() for t in b) if isinstance(b, tuple) else (b.numpy(),) for b in ds]


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


def test_float_input() -> None:
    """Whole numbers 0..255 in any dtype are exact; other values within 0..255 are rounded with
    a warning; fractions within [0, 1] and values outside 0..255 are refused."""
    x = np.minimum(images(4), 250)
    generator = daliaug_generator()
    exact = ours_epoch(generator.flow(x.astype(np.float32), shuffle=False))[0][0]
    assert np.array_equal(exact, ours_epoch(generator.flow(x, shuffle=False))[0][0])
    with pytest.warns(UserWarning, match="rounded to the nearest whole number"):
        rounded = generator.flow(x + np.float32(0.3), shuffle=False)
    assert np.array_equal(ours_epoch(rounded)[0][0], exact)
    with pytest.raises(ValueError, match="fractions between 0 and 1"):
        generator.flow(x / np.float32(255))
    with pytest.raises(ValueError, match=r"values from -1\.0"):
        generator.flow(x.astype(np.float32) - 1 - x.min())


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
