"""Properties of ``from_keras`` and ``split_model`` over stacks hypothesis builds from every
image layer class of the installed Keras (with extreme, odd and invalid arguments, and
subclasses of each: plain, with their own ``__init__``, or changing a method), in lists,
``Sequential``s, ``Pipeline``s, nested, and inside Sequential and functional models:

* every exception that leaves them is a :class:`daliaug.DaliaugError` (never Keras', NumPy's
  or Python's own);
* what they accept drops nothing: the layers that do something in training became as many
  transforms as the README says (one each, except the layers it names).

Few examples (it must stay quick in CI); tests/keras/test_stacks.py holds the cases by name."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import keras
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import daliaug
from daliaug.errors import DaliaugError
from tests.keras.conftest import keras_image_layers

pytestmark = pytest.mark.filterwarnings(
    "ignore::hypothesis.errors.HypothesisDeprecationWarning"  # Keras' seeds use `random`
)
L = keras.layers
SIZE = (24, 32)

ARGUMENTS: dict[str, list[dict[str, Any]]] = {
    "CenterCrop": [
        {"height": 16, "width": 20},
        {"height": 40, "width": 8},
        {"height": 0, "width": 3},
    ],
    "RandomCrop": [{"height": 16, "width": 20}, {"height": 30, "width": 40}],
    "Resizing": [
        {"height": 16, "width": 16},
        {"height": 20, "width": 10, "crop_to_aspect_ratio": True},
        {"height": 12, "width": 24, "pad_to_aspect_ratio": True, "fill_value": 300.0},
        {"height": 8, "width": 8, "interpolation": "bicubic"},
        {"height": 8, "width": 8, "antialias": True},
    ],
    "RandomRotation": [
        {"factor": 0.2},
        {"factor": (-1.0, 1.0), "fill_mode": "constant", "fill_value": -5.0},
        {"factor": 0.1, "fill_mode": "nearest", "interpolation": "nearest"},
        {"factor": 0.0, "fill_mode": "wrap"},
    ],
    "RandomZoom": [
        {"height_factor": 0.2},
        {"height_factor": (-0.9, 0.9), "width_factor": 0.5, "fill_mode": "constant"},
    ],
    "RandomTranslation": [
        {"height_factor": 0.1, "width_factor": 0.2},
        {"height_factor": 1.0, "width_factor": (-1.0, 1.0), "fill_mode": "constant"},
    ],
    "RandomShear": [{"x_factor": 0.3, "y_factor": 0.2, "fill_mode": "constant"}, {"x_factor": 1.0}],
    "Normalization": [
        {"mean": [1.0, 2.0, 3.0], "variance": [4.0, 5.0, 6.0]},
        {"mean": 0.5, "variance": 0.0},
        {"axis": None},
        {"mean": [1.0, 2.0], "variance": [1.0, 1.0]},
    ],
    "Rescaling": [{"scale": 1 / 255}, {"scale": 0.0}, {"scale": [1.0, 2.0, 3.0], "offset": -1.0}],
    "RandomColorJitter": [
        {"brightness_factor": 0.2, "hue_factor": 0.1},
        {"contrast_factor": 0.3, "saturation_factor": 0.5},
        {},
    ],
    "RandAugment": [{"num_ops": 0}, {"num_ops": 9}, {"factor": (0.0, 1.0)}],
    "AugMix": [{"chain_depth": 0}, {"num_chains": 5}, {"factor": (0.0, 1.0)}],
    "RandomPosterization": [{"factor": (3, 3)}, {"factor": 8}],
    "RandomBrightness": [{"factor": 0.2}, {"factor": (-1.0, 1.0)}],
    "RandomContrast": [{"factor": 0.5}, {"factor": 1.5}],
    "RandomHue": [{"factor": 0.5}],
    "RandomSaturation": [{"factor": (0.0, 1.0)}],
    "RandomSharpness": [{"factor": 0.5}],
    "RandomColorDegeneration": [{"factor": 0.5}],
    "RandomGaussianBlur": [{"sigma": (0.5, 0.5)}, {"kernel_size": (3, 5)}],
    "MaxNumBoundingBoxes": [{"max_number": 4}, {"max_number": 4, "fill_value": 0}],
}
"""Arguments a class needs (the first set), or that reach far; the property adds one of the
common arguments below where the signature takes it."""

COMMON: list[dict[str, Any]] = [
    {"value_range": (0, 1)},
    {"value_range": (-1, 1)},
    {"value_range": (0, 255)},
    {"data_format": "channels_first"},
    {"seed": 3},
    {"factor": 0.0},
    {"factor": 1.0},
    {"factor": (0.4, 0.4)},
    {"bounding_box_format": "xyxy"},
    {"bounding_box_format": "rel_yxyx"},
]

NO_TRANSFORM = {"Rescaling", "Normalization", "MaxNumBoundingBoxes"}
"""Layers that become the output normalization or a config field (``max_boxes``), not a
transform (the README says so)."""


class MyAug(L.Layer):
    def call(self, x: Any) -> Any:
        return x


OTHERS = {
    "MyAug": MyAug,
    "GaussianNoise": lambda: L.GaussianNoise(0.1),
    "Flatten": L.Flatten,
    "Conv2D": lambda: L.Conv2D(2, 3),
}
"""Layers that are not Keras preprocessing layers, drawn among them: the user's own, one a
stack of augmentation may hold, and a model's."""


def transforms_of(layer: Any) -> int:
    """How many transforms the README says ``layer`` becomes (its Keras base's name decides;
    none for a layer that is not a preprocessing layer, which is refused or left to the
    model)."""
    name = next(c.__name__ for c in type(layer).__mro__ if getattr(L, c.__name__, None) is c)
    if name in NO_TRANSFORM or name in OTHERS or name == "Layer":
        return 0
    if name == "RandomColorJitter":
        factors = ("brightness", "contrast", "saturation", "hue")
        return sum(getattr(layer, f"{f}_factor") is not None for f in factors)
    if name == "RandAugment":
        return int(layer.num_ops > 0)
    if name == "AugMix":
        return int(layer.chain_depth > 0)
    return 1


def _plain(cls: type) -> type:
    return type(f"My{cls.__name__}", (cls,), {})


def _with_init(cls: type) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        super(layer, self).__init__(*args, **kwargs)

    layer = type(f"Init{cls.__name__}", (cls,), {"__init__": __init__})
    return layer


def _changing(cls: type) -> type:
    return type(f"Changed{cls.__name__}", (cls,), {"call": lambda self, x, **kwargs: x})


SUBCLASSES = [None, _plain, _with_init, _changing]


@st.composite
def layers(draw: st.DrawFn) -> Any:
    """One Keras image layer (or a subclass of one), or ``None`` where Keras refuses the
    arguments (not daliaug's to name)."""
    name = draw(st.sampled_from([*(n for n in keras_image_layers() if n != "Pipeline"), *OTHERS]))
    if name in OTHERS:
        return OTHERS[name]()
    cls = getattr(L, name)
    accepted = inspect.signature(cls).parameters
    arguments = dict(draw(st.sampled_from(ARGUMENTS.get(name, [{}]))))
    common = [c for c in COMMON if set(c) <= set(accepted)]
    arguments.update(draw(st.sampled_from([{}, *common])))
    subclass = draw(st.sampled_from(SUBCLASSES))
    try:
        return (subclass(cls) if subclass else cls)(**arguments)
    except (ValueError, TypeError):
        return None


@st.composite
def stacks(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    """``(what is passed, its top-level elements)``: a list, ``Sequential``, ``Pipeline``,
    nested ones, or a Sequential or functional model starting with the drawn layers."""
    found = draw(st.lists(layers(), min_size=1, max_size=4))
    assume(all(x is not None for x in found))
    kind = draw(
        st.sampled_from(["list", "sequential", "pipeline", "nested", "model", "functional"])
    )
    head = [L.GlobalAveragePooling2D(), L.Dense(2)]
    try:
        if kind == "list":
            return found, found
        if kind == "sequential":
            return keras.Sequential(found), found
        if kind == "pipeline":
            return L.Pipeline(found), found
        if kind == "nested":
            top = [found[0], L.Pipeline(found[1:])]
            return keras.Sequential(top), top
        if kind == "model":
            return keras.Sequential([keras.Input((*SIZE, 3)), *found, *head]), found
        inputs, augment = keras.Input((*SIZE, 3)), keras.Sequential(found)
        return keras.Model(inputs, keras.Sequential(head)(augment(inputs))), [augment]
    except Exception:  # Keras refusing to build the model: not daliaug's to name
        assume(False)
        raise


def leaves(layer: Any) -> list[Any]:
    if isinstance(layer, (keras.Sequential, L.Pipeline)):
        return [leaf for inner in layer.layers for leaf in leaves(inner)]
    return [layer]


def leading(top: list[Any]) -> list[Any]:
    """The layers of the leading elements that hold only Keras preprocessing layers (or
    subclasses): what must become transforms (the rest is a model's, or refused)."""
    taken = []
    for element in top:
        inner = leaves(element)
        preprocessing = [
            any(c.__module__.startswith("keras.src.layers.preprocessing") for c in type(x).__mro__)
            for x in inner
        ]
        if not inner or not all(preprocessing):
            break
        taken += inner
    return taken


def is_model(passed: Any) -> bool:
    return isinstance(passed, keras.Model) and any(isinstance(x, L.Dense) for x in passed.layers)


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


ODD = [{}, {}, {}, {"image_size": (0, 5)}, {"image_size": "x"}, {"image_size": 2.5}]
ODD += [{"image_size": (24,)}, {"channels": 0}, {"channels": "3"}, {"channels": 1}]
"""Input arguments, mostly none (the model's input, else ``SIZE``), some odd."""


def inputs(passed: Any, odd: dict[str, Any]) -> dict[str, Any]:
    return {"image_size": None if is_model(passed) else SIZE, **odd}


@pytest.mark.slow
@PROPERTY
@given(stack=stacks(), label_mode=st.sampled_from(["int", "categorical"]), odd=st.sampled_from(ODD))
def test_from_keras_raises_only_daliaug_errors_and_drops_nothing(
    stack: tuple[Any, list[Any]], label_mode: str, odd: dict[str, Any]
) -> None:
    passed, top = stack
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = daliaug.from_keras(
                passed, source={"type": "arrays"}, label_mode=label_mode, **inputs(passed, odd)
            )
    except DaliaugError:
        event("refused")
        return
    event("accepted")
    made = len(config.transforms) - 1  # after the resize to the input size
    assert made == sum(map(transforms_of, leading(top))), [t.type for t in config.transforms]


@pytest.mark.slow
@PROPERTY
@given(stack=stacks(), unsupported=st.sampled_from(["error", "keep"]), odd=st.sampled_from(ODD))
def test_split_model_raises_only_daliaug_errors_and_drops_nothing(
    stack: tuple[Any, list[Any]], unsupported: str, odd: dict[str, Any]
) -> None:
    passed, top = stack
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fields, _ = daliaug.split_model(passed, unsupported=unsupported, **inputs(passed, odd))
    except DaliaugError:
        event("refused")
        return
    event("accepted")
    kept = any("in the model" in str(w.message) and "stay" in str(w.message) for w in caught)
    if not kept:
        made = len(fields["transforms"]) - 1
        assert made == sum(map(transforms_of, leading(top))), fields["transforms"]


def test_every_keras_image_layer_is_built() -> None:
    """Each class the property draws from can be built (with ``ARGUMENTS`` where it needs
    some): a new Keras layer that needs arguments shows up here."""
    for name in keras_image_layers():
        if name == "Pipeline":
            continue
        built = []
        for arguments in ARGUMENTS.get(name, [{}])[:1]:
            try:
                built.append(getattr(L, name)(**arguments))
            except (ValueError, TypeError):
                continue
        assert built, f"{name}: give it arguments in ARGUMENTS"


@pytest.mark.parametrize("name", [n for n in keras_image_layers() if n != "Pipeline"])
def test_each_layer_alone_converts_or_is_named(name: str) -> None:
    """Each class, as Keras builds it, and its plain subclass: converted into as many transforms
    as the README says, or refused with a DaliaugError."""
    for arguments in ARGUMENTS.get(name, [{}]):
        for cls in (getattr(L, name), _plain(getattr(L, name))):
            try:
                layer = cls(**arguments)
            except (ValueError, TypeError):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    config = daliaug.from_keras(
                        [layer],
                        source={"type": "arrays"},
                        image_size=SIZE,
                        label_mode="categorical",
                    )
            except DaliaugError:
                continue
            assert len(config.transforms) - 1 == transforms_of(layer), (name, arguments)
