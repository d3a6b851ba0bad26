"""``split_model``: a model's leading augmentation layers move into daliaug's pipeline and the
model keeps the rest (inference unchanged); unsupported layers stay in Keras with one warning;
a model trained through ``split_model`` + ``make_dataset`` learns as well as the same model
trained the Keras way; ``daliaug convert --from-keras`` writes the config of a saved model."""

from __future__ import annotations

import warnings
from pathlib import Path

import keras
import numpy as np
import pytest

import daliaug
from daliaug.cli import main as cli
from daliaug.config import load_config
from tests.helpers import rendered_digits
from tests.keras.conftest import photos

L = keras.layers


def _head() -> list:
    return [L.Conv2D(4, 3), L.GlobalAveragePooling2D(), L.Dense(3)]


def _types(model: keras.Model) -> list[str]:
    return [type(x).__name__ for x in model.layers]


def test_random_layers_leave_the_model_and_value_layers_stay() -> None:
    augment = keras.Sequential([L.RandomFlip(), L.RandomRotation(0.1, fill_mode="constant")])
    model = keras.Sequential([keras.Input((48, 64, 3)), augment, L.Rescaling(1 / 255), *_head()])
    fields, trimmed = daliaug.split_model(model)
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip", "rotation"]
    assert "mean" not in fields["output"] and "backend" not in fields
    assert _types(trimmed) == ["Rescaling", "Conv2D", "GlobalAveragePooling2D", "Dense"]
    x = photos(48, 64).astype(np.float32)
    assert np.allclose(trimmed(x), model(x, training=False), atol=1e-5)
    config = load_config({**fields, "source": {"type": "arrays"}, "batch_size": 4})
    batch = next(iter(daliaug.make_dataset(config, x=photos(48, 64), y=np.zeros(4, np.int32))))
    assert tuple(batch[0].shape) == (4, 48, 64, 3)
    assert trimmed(batch[0]).shape == (4, 3)


def test_a_functional_model_keeps_its_resizing_for_any_input_size() -> None:
    inputs = keras.Input((None, None, 3))
    x = L.Resizing(32, 32)(inputs)
    x = L.RandomFlip("horizontal")(x)
    x = L.RandomTranslation(0.1, 0.1, fill_mode="nearest")(x)
    outputs = L.Dense(3)(L.GlobalAveragePooling2D()(L.Conv2D(4, 3)(L.Rescaling(1 / 255)(x))))
    model = keras.Model(inputs, outputs)
    fields, trimmed = daliaug.split_model(model, image_size=(48, 64))
    kinds = [t["type"] for t in fields["transforms"]]
    assert kinds == ["resize", "resize", "keras_flip", "shift"] and fields["image_size"] == [32, 32]
    assert _types(trimmed)[1:3] == ["Resizing", "Rescaling"]
    x = photos(40, 56).astype(np.float32)
    assert np.allclose(trimmed(x), model(x, training=False), atol=1e-5)


def test_sizes_that_differ_move_resizing_and_crop_into_the_pipeline_with_a_warning() -> None:
    stem = [keras.Input((48, 64, 3)), L.Resizing(40, 40), L.RandomFlip(), L.CenterCrop(32, 32)]
    model = keras.Sequential([*stem, *_head()])
    with pytest.warns(UserWarning, match=r"leave the model .* \[32, 32\] images"):
        fields, trimmed = daliaug.split_model(model)
    assert [t["type"] for t in fields["transforms"]][1:] == [
        "resize",
        "keras_flip",
        "keras_center_crop",
    ]
    assert _types(trimmed) == ["Conv2D", "GlobalAveragePooling2D", "Dense"]
    assert tuple(trimmed.inputs[0].shape) == (None, 32, 32, 3)


def test_keep_leaves_the_unsupported_layer_and_those_after_it_with_one_warning() -> None:
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            L.RandomFlip("horizontal"),
            L.RandomHue(0.3, value_range=(0, 1), name="hue"),  # the images are 0..255
            L.RandomRotation(0.1, fill_mode="constant"),
            L.Rescaling(1 / 255),
            *_head(),
        ]
    )
    with pytest.raises(daliaug.ConfigError, match="RandomHue 'hue'"):
        daliaug.split_model(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fields, trimmed = daliaug.split_model(model, unsupported="keep")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "RandomHue 'hue' and the 2 layers after it stay in the model" in messages[0]
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip"]
    assert _types(trimmed)[:3] == ["RandomHue", "RandomRotation", "Rescaling"]


def test_auto_contrast_which_keras_runs_at_inference_stays_in_the_model() -> None:
    """Taken out, the model would predict differently; kept beside the pipeline's copy, it
    would stretch the pipeline's later layers away: refused, and kept with ``keep``."""
    model = keras.Sequential(
        [keras.Input((32, 32, 3)), L.RandomFlip(), L.AutoContrast(name="ac"), *_head()]
    )
    with pytest.raises(daliaug.ConfigError, match="AutoContrast 'ac': Keras applies it at infer"):
        daliaug.split_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fields, trimmed = daliaug.split_model(model, unsupported="keep")
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip"]
    assert _types(trimmed)[0] == "AutoContrast"
    config = daliaug.from_keras(model, source={"type": "arrays"})
    assert [t.type for t in config.transforms] == ["resize", "keras_flip", "auto_contrast"]


def test_a_kept_stack_maps_over_the_dataset() -> None:
    with pytest.warns(UserWarning, match="stays? in the model"):
        stack = [L.RandomFlip(), L.RandomHue(0.3, value_range=(0, 1))]  # refused: 0..255 images
        fields, rest = daliaug.split_model(stack, image_size=(48, 64), unsupported="keep")
    config = {**fields, "source": {"type": "arrays"}, "batch_size": 4, "label_mode": "none"}
    dataset = daliaug.make_dataset(config, x=photos(48, 64))
    batch = next(iter(dataset.map(lambda x: rest(x, training=True))))
    assert tuple(batch.shape) == (4, 48, 64, 3)


@pytest.mark.slow
def test_training_through_split_model_matches_training_the_keras_way() -> None:
    """Digits drawn at 32x32 (:func:`tests.helpers.rendered_digits`, as many as
    scikit-learn's digits): the same model (augmentation layers inside) trained on the arrays
    by Keras, and trained through ``split_model`` + ``make_dataset`` (DALI on the CPU), reach
    the same validation accuracy within noise."""
    x, y = rendered_digits(1797)
    x = x[..., np.newaxis]
    order = np.random.default_rng(0).permutation(len(x))
    train, val = order[:1400], order[1400:]

    def model() -> keras.Model:
        return keras.Sequential(
            [
                keras.Input((32, 32, 1)),
                L.RandomRotation(0.04, fill_mode="constant"),
                L.RandomTranslation(0.08, 0.08, fill_mode="constant"),
                L.RandomZoom(0.1, fill_mode="constant"),
                L.Rescaling(1 / 255),
                L.Conv2D(16, 3, activation="relu"),
                L.MaxPooling2D(),
                L.Conv2D(32, 3, activation="relu"),
                L.MaxPooling2D(),
                L.Flatten(),
                L.Dense(10),
            ]
        )

    def accuracy(net: keras.Model, data: object, **fit: object) -> float:
        net.compile(
            keras.optimizers.Adam(3e-3),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        net.fit(data, epochs=6, verbose=0, **fit)
        return float(net.evaluate(x[val], y[val], verbose=0)[1])

    keras.utils.set_random_seed(0)
    keras_way = accuracy(model(), x[train].astype(np.float32), y=y[train], batch_size=32)
    keras.utils.set_random_seed(0)
    fields, trimmed = daliaug.split_model(model())
    config = {**fields, "source": {"type": "arrays"}, "batch_size": 32, "seed": 0}
    dataset = daliaug.make_dataset({**config, "backend": "cpu"}, x=x[train], y=y[train])
    ours = accuracy(trimmed, dataset)
    assert keras_way > 0.85 and ours > 0.85, (keras_way, ours)
    assert abs(keras_way - ours) < 0.05, (keras_way, ours)


def test_convert_from_keras_writes_the_saved_models_config(tmp_path: Path) -> None:
    normalize = L.Normalization()
    normalize.adapt(photos(48, 64).astype(np.float32))
    model = keras.Sequential(
        [
            keras.Input((48, 64, 3)),
            L.RandomFlip("horizontal"),
            L.RandomZoom(0.2, fill_mode="nearest"),
            L.RandomContrast(0.3),
            normalize,
            *_head(),
        ]
    )
    saved = tmp_path / "model.keras"
    model.save(saved)
    out = tmp_path / "pipeline.yaml"
    assert cli(["convert", str(tmp_path / "data"), "--from-keras", str(saved), "-o", str(out)]) == 0
    written = load_config(out)
    expected = daliaug.from_keras(model, source={"type": "directory", "path": tmp_path / "data"})
    assert written == expected
    assert [t.type for t in written.transforms][1:] == [
        "keras_flip",
        "keras_zoom",
        "keras_contrast",
    ]
    assert np.allclose(written.output.mean, np.asarray(normalize.mean).ravel(), atol=1e-3)
    assert cli(["convert", "--from-keras", str(tmp_path / "missing.keras"), "-o", str(out)]) == 2


def test_a_nested_augmentation_block_in_a_functional_model() -> None:
    augment = keras.Sequential(
        [L.RandomFlip("horizontal"), L.RandomContrast(0.2), L.Rescaling(1 / 255)], name="aug"
    )
    inputs = keras.Input((48, 64, 3))
    outputs = keras.Sequential(_head())(augment(inputs))
    model = keras.Model(inputs, outputs)
    fields, trimmed = daliaug.split_model(model)
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip", "keras_contrast"]
    x = photos(48, 64).astype(np.float32)
    assert np.allclose(trimmed(x), model(x, training=False), atol=1e-5)
    assert _types(trimmed) == ["InputLayer", "Rescaling", "Sequential"]  # the head


def test_channels_first_layers_give_nchw_batches(backend: str) -> None:
    x = photos(48, 64)
    crop = L.CenterCrop(33, 47, data_format="channels_first")
    config = daliaug.from_keras(
        [crop],
        source={"type": "arrays"},
        image_size=(48, 64),
        backend=backend,
        shuffle=False,
        label_mode="none",
    )
    assert config.output.layout == "NCHW"
    batch = next(iter(daliaug.make_dataset(config, x=x)))
    expected = crop(x.transpose(0, 3, 1, 2).astype(np.float32))
    assert np.abs(np.asarray(batch[0]) - np.asarray(expected)).max() < 1e-3


def _keras_io_model(fill_mode: str) -> keras.Model:
    """keras.io's "image classification from scratch" shape: ``inputs -> data_augmentation (a
    Sequential) -> Rescaling -> convolutions with a residual add -> Dense``."""
    data_augmentation = keras.Sequential(
        [L.RandomFlip("horizontal"), L.RandomRotation(0.1, fill_mode=fill_mode)],
        name="data_augmentation",
    )
    inputs = keras.Input((32, 32, 3))
    x = L.Rescaling(1.0 / 255)(data_augmentation(inputs))
    x = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    residual = x
    x = L.SeparableConv2D(8, 3, padding="same", activation="relu")(x)
    x = L.add([x, residual])
    outputs = L.Dense(3)(L.GlobalAveragePooling2D()(x))
    return keras.Model(inputs, outputs)


@pytest.mark.slow
def test_a_keras_io_functional_model_trains_and_predicts_as_before() -> None:
    """Its augmentation leaves it (Rescaling stays), the trimmed model shares its layers (so the
    model itself predicts as the trained one, at inference as before) and trains on the
    pipeline's batches (Keras' default ``reflect`` fill: the TensorFlow engine)."""
    keras.utils.set_random_seed(0)
    model = _keras_io_model("reflect")
    with pytest.warns(daliaug.BackendWarning, match="RandomRotation"):
        fields, trimmed = daliaug.split_model(model)
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip", "rotation"]
    assert fields["backend"] == "tf" and fields["transforms"][2]["fill"] == "reflect"
    assert "data_augmentation" not in [x.name for x in trimmed.layers]
    x = np.concatenate([photos(32, 32)] * 4)
    y = np.arange(len(x), dtype=np.int32) % 3
    assert np.allclose(trimmed(x.astype(np.float32)), model(x, training=False), atol=1e-5)
    config = {**fields, "source": {"type": "arrays"}, "batch_size": 8, "seed": 0}
    trimmed.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = trimmed.fit(daliaug.make_dataset(config, x=x, y=y), epochs=3, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    after = np.asarray(model(x, training=False))
    assert np.allclose(np.asarray(trimmed(x.astype(np.float32))), after, atol=1e-5)
    assert np.allclose(np.asarray(trimmed.predict(x, verbose=0)), after, atol=1e-4)
