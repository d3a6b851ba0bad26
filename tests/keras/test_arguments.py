"""The constructor and the methods take Keras' arguments with Keras' defaults, reject bad ones
with Keras' exception types and messages, and warn once, naming the option and its cost, for
each option that cannot run in the DALI graph."""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from daliaug.errors import BackendWarning
from daliaug.keras import ImageDataGenerator
from tests.keras.conftest import daliaug_generator, images, keras_generator


def keras_class():
    from keras.src.legacy.preprocessing.image import ImageDataGenerator as Keras

    return Keras


@pytest.mark.parametrize(
    "method",
    [
        "__init__",
        "flow",
        "flow_from_directory",
        "flow_from_dataframe",
        "fit",
        "standardize",
        "get_random_transform",
        "apply_transform",
        "random_transform",
    ],
)
def test_same_arguments_and_defaults(method: str) -> None:
    ours = inspect.signature(getattr(ImageDataGenerator, method)).parameters
    theirs = inspect.signature(getattr(keras_class(), method)).parameters
    for name, parameter in theirs.items():
        assert name in ours, f"{method}: {name} missing"
        assert ours[name].default == parameter.default, f"{method}: {name}"
        assert ours[name].kind == parameter.kind, f"{method}: {name}"
    extra = [n for n, p in ours.items() if n not in theirs and p.kind != p.KEYWORD_ONLY]
    assert not extra, extra


def test_constructor_resolves_like_keras() -> None:
    kwargs = {"zoom_range": 0.25, "featurewise_std_normalization": True, "zca_whitening": True}
    ours, theirs = daliaug_generator(**kwargs), keras_generator(**kwargs)
    for name in (
        "zoom_range",
        "featurewise_center",
        "featurewise_std_normalization",
        "data_format",
        "dtype",
        "channel_axis",
        "row_axis",
        "col_axis",
        "_validation_split",
        "mean",
        "std",
        "zca_whitening_matrix",
    ):
        assert getattr(ours, name) == getattr(theirs, name), name


BAD_ARGUMENTS = [
    {"zoom_range": [0.5, 1.0, 1.5]},
    {"zoom_range": "wide"},
    {"data_format": "channels_middle"},
    {"validation_split": 1.5},
    {"brightness_range": 0.5},
]


@pytest.mark.parametrize("kwargs", BAD_ARGUMENTS, ids=lambda k: next(iter(k)))
def test_bad_constructor_arguments_raise_keras_errors(kwargs: dict) -> None:
    with pytest.raises(Exception) as keras_error:
        keras_generator(**kwargs)
    with pytest.raises(type(keras_error.value), match=re.escape(str(keras_error.value))):
        daliaug_generator(**kwargs)


def test_bad_flow_arguments_raise_keras_errors(class_dir: Path) -> None:
    x, y = images(6).astype(np.float32), np.arange(6) % 2
    cases = [
        lambda g: g.flow(x, y[:5]),
        lambda g: g.flow(x, y, sample_weight=np.ones(4)),
        lambda g: g.flow(x[0], None),
        lambda g: g.flow(x, y, subset="testing"),
        lambda g: g.flow_from_directory(str(class_dir), class_mode="onehot"),
        lambda g: g.flow_from_directory(str(class_dir), color_mode="cmyk"),
        lambda g: g.fit(x[0]),
    ]
    for case in cases:
        with pytest.raises(Exception) as keras_error:
            case(keras_generator(validation_split=0.5))
        message = str(keras_error.value).replace("{", "").replace("}", "")
        with pytest.raises(type(keras_error.value)) as ours:
            case(daliaug_generator(validation_split=0.5))
        assert (
            str(ours.value).replace("{", "").replace("}", "").split(";")[0] == message.split(";")[0]
        )


def test_errors_keras_does_not_raise_are_clear(class_dir: Path) -> None:
    x = images(4)
    with pytest.raises(ValueError, match=r"Invalid fill_mode: 'mirror'"):
        ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="interpolation_order 3"):
        ImageDataGenerator(interpolation_order=3)
    with pytest.raises(ValueError, match="subset='validation' needs validation_split"):
        ImageDataGenerator().flow(x, subset="validation")
    with pytest.raises(ValueError, match="subset='training' needs validation_split"):
        ImageDataGenerator().flow_from_directory(str(class_dir), subset="training")
    with pytest.raises(ValueError, match="color_mode='rgba' is not supported"):
        ImageDataGenerator().flow_from_directory(str(class_dir), color_mode="rgba")
    with pytest.raises(ValueError, match="keep_aspect_ratio=True is not supported"):
        ImageDataGenerator().flow_from_directory(str(class_dir), keep_aspect_ratio=True)


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"fill_mode": "reflect"}, "fill_mode"),
        ({"fill_mode": "wrap"}, "fill_mode"),
        ({"preprocessing_function": np.sqrt}, "preprocessing_function"),
        ({"samplewise_center": True}, "samplewise_center"),
        ({"zca_whitening": True}, "zca_whitening"),
    ],
)
def test_off_graph_options_warn_once_with_their_cost(kwargs: dict, option: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generator = ImageDataGenerator(**kwargs)
        generator.config((8, 8), 3)  # building the config warns no more
    ours = [w for w in caught if issubclass(w.category, BackendWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    message = str(ours[0].message)
    assert option in message and "TensorFlow backend" in message
    assert generator.config((8, 8), 3).backend == "tf"


def test_in_graph_options_stay_on_dali() -> None:
    kwargs = {
        "rotation_range": 40,
        "channel_shift_range": 30,
        "brightness_range": [0.5, 1.5],
        "fill_mode": "constant",
        "rescale": 1 / 255,
        "interpolation_order": 0,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        config = ImageDataGenerator(**kwargs).config((8, 8), 3)
    assert config.backend == "auto" and config.interpolation == "nearest"
    assert [t.type for t in config.transforms] == ["keras_affine", "channel_shift", "brightness"]
    with pytest.raises(ValueError, match="backend='gpu': preprocessing_function"):
        daliaug_generator(preprocessing_function=np.sqrt, backend="gpu").config((8, 8), 3)


def test_featurewise_without_fit_warns_as_keras() -> None:
    generator = ImageDataGenerator(featurewise_center=True)
    with pytest.warns(UserWarning, match=r"specifies `featurewise_center`, but it hasn't been fit"):
        generator.flow(images(4), shuffle=False)
