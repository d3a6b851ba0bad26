"""What ``from_keras`` and ``split_model`` take from a stack or a model, and what they name:
a ``Sequential`` of augmentation converts whole or names the layer it cannot take (never
drops it or the layers after it), a subclass converts as its base only where it changes
nothing, nested ``Sequential``s and ``keras.layers.Pipeline`` convert as their layers, and from
a model only the chain every use of its one input passes through leaves it."""

from __future__ import annotations

import warnings
from typing import Any

import keras
import numpy as np
import pytest

import daliaug
from daliaug.errors import ConfigError
from daliaug.keras.stacks import augments
from tests.keras.conftest import keras_image_layers, photos
from tests.keras.test_stack_properties import ARGUMENTS

L = keras.layers
SOURCE = {"type": "arrays"}


class MyAug(L.Layer):
    """A layer of the user's own (what it does, daliaug cannot know)."""

    def call(self, x: Any) -> Any:
        return x


class MyFlip(L.RandomFlip):
    pass


class HorizontalFlip(L.RandomFlip):
    """A subclass that only sets its base's arguments."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(mode="horizontal", **kwargs)

    def get_config(self) -> dict:
        return super().get_config()


class CustomFlip(L.RandomFlip):
    def transform_images(self, images: Any, transformation: Any, training: bool = True) -> Any:
        return images


class Flagged(L.RandomFlip):
    _USE_BASE_FACTOR = True


class CallOverride(L.RandomContrast):
    def call(self, data: Any, training: bool = True) -> Any:
        return data


def types(layers: Any, **kwargs: Any) -> list[str]:
    config = daliaug.from_keras(layers, source=SOURCE, image_size=32, **kwargs)
    return [t.type for t in config.transforms]


def rotation(name: str = "rot") -> Any:
    return L.RandomRotation(0.2, fill_mode="constant", name=name)


def head() -> list[Any]:
    return [L.Conv2D(4, 3, name="conv"), L.GlobalAveragePooling2D(), L.Dense(3)]


# -- a Sequential of augmentation: whole or refused ------------------------------------------


@pytest.mark.parametrize("container", [keras.Sequential, L.Pipeline, list])
def test_an_unknown_layer_in_an_augmentation_stack_is_named_never_dropped(container: Any) -> None:
    stack = container([L.RandomFlip("horizontal"), MyAug(name="mine"), rotation()])
    with pytest.raises(ConfigError, match="MyAug 'mine': daliaug has no equivalent"):
        types(stack)


def test_an_unknown_layer_last_in_a_sequential_is_named() -> None:
    with pytest.raises(ConfigError, match="MyAug 'mine'"):
        types(keras.Sequential([L.RandomFlip(), MyAug(name="mine")]))


class OtherLibraryLayer(L.Layer):
    """A layer of another library built on Keras (keras_cv's, say)."""

    __module__ = "keras_cv.layers"

    def call(self, x: Any) -> Any:
        return x


@pytest.mark.parametrize(
    "layer",
    [
        L.GaussianNoise(0.1, name="noise"),
        L.Lambda(lambda x: x / 255, name="scale"),
        OtherLibraryLayer(name="cutout"),
    ],
)
def test_a_keras_layer_without_weights_in_an_augmentation_stack_is_named(layer: Any) -> None:
    """``GaussianNoise``, ``Lambda``, ``Dropout`` or another library's layer beside Keras'
    augmentation: the stack is augmentation, and the layer is named."""
    with pytest.raises(ConfigError, match=f"{type(layer).__name__} '{layer.name}'"):
        types(keras.Sequential([L.RandomFlip(), layer]))


def test_a_random_layer_after_a_shaping_layer_is_named() -> None:
    """CIFAR's ``ZeroPadding2D -> RandomCrop``: the padding is not Keras preprocessing."""
    stack = keras.Sequential([L.ZeroPadding2D(4, name="pad"), L.RandomCrop(32, 32, name="crop")])
    with pytest.raises(ConfigError, match="RandomCrop 'crop': it comes after ZeroPadding2D 'pad'"):
        types(stack)


def test_a_plain_subclass_converts_as_its_base() -> None:
    assert (
        types(keras.Sequential([MyFlip()])) == types([L.RandomFlip()]) == ["resize", "keras_flip"]
    )
    ours = daliaug.from_keras([HorizontalFlip()], source=SOURCE, image_size=32)
    keras_own = daliaug.from_keras([L.RandomFlip("horizontal")], source=SOURCE, image_size=32)
    assert ours == keras_own


@pytest.mark.parametrize(
    ("layer", "defines"),
    [
        (CustomFlip(name="c"), "CustomFlip 'c': a subclass of RandomFlip that defines transform_"),
        (Flagged(name="f"), "defines _USE_BASE_FACTOR"),
        (
            CallOverride(0.2, name="o"),
            "CallOverride 'o': a subclass of RandomContrast that defines",
        ),
    ],
)
def test_a_subclass_that_changes_its_base_is_named(layer: Any, defines: str) -> None:
    with pytest.raises(ConfigError, match=defines):
        types(keras.Sequential([L.RandomFlip(), layer]))


def test_a_method_set_on_the_instance_is_named() -> None:
    flip = MyFlip(name="patched")
    flip.transform_images = lambda images, *args, **kwargs: images
    with pytest.raises(ConfigError, match=r"MyFlip .patched.: .* defines transform_images"):
        types([flip])


def test_what_is_not_a_layer_is_named() -> None:
    with pytest.raises(ConfigError, match="str: not a Keras layer"):
        types(["RandomFlip"])


def test_nested_sequentials_and_pipelines_convert_as_their_layers() -> None:
    inner = L.Pipeline([L.RandomFlip(), L.Pipeline([rotation()])])
    stack = keras.Sequential([keras.Sequential([inner, L.RandomContrast(0.2)]), L.Rescaling(0.5)])
    assert types(stack) == ["resize", "keras_flip", "rotation", "keras_contrast"]
    with pytest.raises(ConfigError, match="MyAug 'deep'"):
        types(keras.Sequential([L.Pipeline([L.RandomFlip(), MyAug(name="deep")]), rotation()]))


# -- models: only what every use of the input passes through leaves ---------------------------


def test_a_random_layer_after_a_layer_of_the_users_own_is_named_or_kept() -> None:
    model = keras.Sequential(
        [keras.Input((32, 32, 3)), L.RandomFlip(), MyAug(name="mine"), rotation(), *head()]
    )
    with pytest.raises(ConfigError, match="RandomRotation 'rot': it comes after MyAug 'mine'"):
        daliaug.split_model(model)
    with pytest.raises(ConfigError, match="RandomRotation 'rot'"):
        daliaug.from_keras(model, source=SOURCE)
    with pytest.warns(UserWarning, match="RandomRotation 'rot' stays in the model"):
        fields, trimmed = daliaug.split_model(model, unsupported="keep")
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip"]
    assert [type(x).__name__ for x in trimmed.layers][:2] == ["MyAug", "RandomRotation"]


def test_a_custom_layer_after_the_augmentation_stays_in_the_model() -> None:
    """The keras-io pattern: ``inputs -> augment -> a layer of one's own (patches) -> ...``."""
    augment = keras.Sequential([L.RandomFlip("horizontal"), rotation()], name="augment")
    inputs = keras.Input((32, 32, 3))
    outputs = keras.Sequential(head())(MyAug(name="patches")(augment(inputs)))
    fields, trimmed = daliaug.split_model(keras.Model(inputs, outputs))
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip", "rotation"]
    assert [type(x).__name__ for x in trimmed.layers][1] == "MyAug"


def _two_branches() -> keras.Model:
    """``inp -> RandomFlip -> Conv2D`` beside ``inp -> Conv2D``: the issue's model."""
    inputs = keras.Input((32, 32, 3))
    flipped = L.Conv2D(2, 3, name="a")(L.RandomFlip("horizontal", name="flip")(inputs))
    raw = L.Conv2D(2, 3, name="raw")(inputs)
    pooled = L.GlobalAveragePooling2D()(L.Concatenate()([flipped, raw]))
    return keras.Model(inputs, L.Dense(2)(pooled))


def test_augmentation_that_the_raw_input_bypasses_is_named_or_kept() -> None:
    model = _two_branches()
    with pytest.raises(ConfigError, match=r"RandomFlip .flip.: .* Conv2D 'raw' on another"):
        daliaug.split_model(model)
    with pytest.raises(ConfigError, match="RandomFlip 'flip'"):
        daliaug.from_keras(model, source=SOURCE)
    with pytest.warns(UserWarning, match="RandomFlip 'flip' stays in the model"):
        fields, trimmed = daliaug.split_model(model, unsupported="keep")
    assert [t["type"] for t in fields["transforms"]] == ["resize"]
    assert "RandomFlip" in [type(x).__name__ for x in trimmed.layers]
    x = photos(32, 32).astype(np.float32)
    assert np.allclose(trimmed(x, training=False), model(x, training=False), atol=1e-5)


def test_a_chain_moves_up_to_where_the_images_part() -> None:
    """``inp -> flip -> x``; ``x -> rotation -> a`` and ``x -> b``: the flip every use passes
    leaves, the rotation on one branch is named (or stays)."""
    inputs = keras.Input((32, 32, 3))
    x = L.RandomFlip(name="flip")(inputs)
    a = L.Conv2D(2, 3, name="a")(rotation()(x))
    b = L.Conv2D(2, 3, name="b")(x)
    model = keras.Model(inputs, L.Add()([a, b]))
    with pytest.raises(ConfigError, match=r"RandomRotation .rot.: .* Conv2D 'b' on another"):
        daliaug.split_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fields, trimmed = daliaug.split_model(model, unsupported="keep")
    assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip"]
    names = [type(x).__name__ for x in trimmed.layers]
    assert "RandomRotation" in names and "RandomFlip" not in names


def test_a_layer_the_model_calls_twice_stays() -> None:
    flip = L.RandomFlip(name="shared")
    inputs = keras.Input((32, 32, 3))
    twice = flip(flip(inputs))
    model = keras.Model(inputs, L.Dense(2)(L.GlobalAveragePooling2D()(twice)))
    with pytest.raises(ConfigError, match="RandomFlip 'shared': the model calls it more than once"):
        daliaug.split_model(model)


def test_augmentation_the_model_outputs_is_named() -> None:
    inputs = keras.Input((32, 32, 3))
    flipped = L.RandomFlip(name="flip")(inputs)
    model = keras.Model(inputs, [flipped, L.GlobalAveragePooling2D()(rotation()(flipped))])
    with pytest.raises(ConfigError, match="the model's output on another"):
        daliaug.split_model(model)


@pytest.mark.parametrize("call", ["split_model", "from_keras"])
def test_a_model_with_two_inputs_is_a_config_error_saying_what_is_taken(call: str) -> None:
    image, extra = keras.Input((32, 32, 3)), keras.Input((4,))
    pooled = L.GlobalAveragePooling2D()(L.RandomFlip()(image))
    model = keras.Model([image, extra], L.Dense(2)(L.Concatenate()([pooled, extra])))
    with pytest.raises(ConfigError, match="takes 2 inputs; daliaug feeds a model one image input"):
        if call == "split_model":
            daliaug.split_model(model)
        else:
            daliaug.from_keras(model, source=SOURCE)


def test_a_model_without_image_input_is_named() -> None:
    model = keras.Sequential([keras.Input((10,)), L.Dense(3)], name="dense")
    with pytest.raises(ConfigError, match=r"Sequential 'dense': its input has shape \[10\]"):
        daliaug.split_model(model)


def test_a_pipeline_inside_sequential_and_functional_models_leaves_them() -> None:
    def pipeline() -> Any:
        return L.Pipeline([L.RandomFlip("horizontal"), L.RandomZoom(0.1, fill_mode="constant")])

    sequential = keras.Sequential([keras.Input((32, 32, 3)), pipeline(), L.Rescaling(1 / 255)])
    inputs = keras.Input((32, 32, 3))
    functional = keras.Model(inputs, keras.Sequential(head())(pipeline()(inputs)))
    x = photos(32, 32).astype(np.float32)
    for model in (sequential, functional):
        fields, trimmed = daliaug.split_model(model)
        assert [t["type"] for t in fields["transforms"]] == ["resize", "keras_flip", "keras_zoom"]
        assert not any(isinstance(layer, L.Pipeline) for layer in trimmed.layers)
        assert np.allclose(trimmed(x), model(x, training=False), atol=1e-5)


def test_a_channels_first_model_takes_its_size_from_the_nested_augmentation() -> None:
    augment = keras.Sequential(
        [
            L.RandomFlip(data_format="channels_first"),
            L.CenterCrop(24, 40, data_format="channels_first"),
        ]
    )
    inputs = keras.Input((3, 32, 48))
    model = keras.Model(inputs, L.Dense(2)(L.Flatten()(augment(inputs))))
    fields, trimmed = daliaug.split_model(model)
    assert fields["image_size"] == [24, 40] and fields["output"]["layout"] == "NCHW"
    assert fields["transforms"] == [
        {"type": "resize", "size": [32, 48]},
        {"type": "keras_flip", "mode": "horizontal_and_vertical"},
        {"type": "keras_center_crop", "size": [24, 40]},
    ]
    x = photos(32, 48).astype(np.float32).transpose(0, 3, 1, 2)
    assert tuple(trimmed.inputs[0].shape) == (None, 3, 24, 40)  # the pipeline's images
    cropped = x[:, :, 4:28, 4:44]
    assert np.allclose(trimmed(cropped), model(x, training=False), atol=1e-5)


IMAGE_LAYERS = [n for n in keras_image_layers() if n != "Pipeline"]


@pytest.mark.parametrize("name", IMAGE_LAYERS)
def test_what_augments_is_what_keras_runs_in_training_only(name: str) -> None:
    """daliaug's split of Keras' image layers (those that augment leave a model, or are named
    where they cannot; the others belong to it) is Keras' own: a layer augments exactly when
    Keras leaves images as they are at inference (``MaxNumBoundingBoxes`` leaves them as they
    are always: it pads boxes)."""
    layer = getattr(L, name)(**ARGUMENTS.get(name, [{}])[0])
    x = photos(24, 32).astype(np.float32)
    y = np.asarray(layer(x, training=False))
    at_inference = y.shape != x.shape or not np.allclose(y, x)
    assert augments(layer) == (not at_inference and name != "MaxNumBoundingBoxes")


def test_a_random_layer_inside_a_block_with_a_backbone_layer_is_named() -> None:
    block = keras.Sequential([L.RandomFlip(name="flip"), L.Conv2D(2, 3)], name="block")
    model = keras.Sequential([keras.Input((32, 32, 3)), block, L.Flatten(), L.Dense(2)])
    with pytest.raises(ConfigError, match="RandomFlip 'flip': it sits in Sequential 'block'"):
        daliaug.split_model(model)


@pytest.mark.parametrize(
    ("inputs", "named"),
    [
        ({"image_size": (0, 5)}, "image_size: 0 is not a whole number"),
        ({"image_size": 2.5}, "image_size: 2.5 is not a whole number"),
        ({"image_size": (24,)}, r"image_size: \(24,\) is not one number or \[height, width\]"),
        ({"image_size": 32, "channels": "3"}, "channels: '3' is not a whole number"),
    ],
)
def test_odd_input_arguments_are_named(inputs: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        daliaug.split_model([L.RandomFlip()], **inputs)
