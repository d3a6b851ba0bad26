"""``split_model``: a model's leading augmentation layers moved into daliaug's pipeline.

The leading preprocessing layers are compiled as :func:`daliaug.from_keras` compiles them; the
model that comes back has their random layers taken out (Keras' random layers do nothing at
inference, so inference is unchanged) and keeps the deterministic ones where they stay right:

* ``Rescaling`` and ``Normalization`` stay in the model, in place: they only scale values,
  which commutes with what the pipeline does (its colour transforms and fills are translated
  into the pipeline's 0..255 values), and the saved model still takes raw pixels.
* ``Resizing`` and ``CenterCrop`` run in the pipeline (their place among the random layers
  matters). They also stay in the model when every one of them has the pipeline's output size
  (then they leave the pipeline's images as they are, and the saved model still resizes raw
  images as before); otherwise they leave the model, with one warning: it then takes images
  of the pipeline's output size (``config.evaluation_twin()`` makes them for validation).
* ``AutoContrast``, which Keras also runs at inference, is refused (with
  ``unsupported="keep"`` it and the layers after it stay in the model).
"""

from __future__ import annotations

import warnings
from typing import Any

from daliaug.errors import ConfigError, first_line
from daliaug.keras.compile import (
    Compiled,
    UnsupportedPolicy,
    augmentation,
    compile_layers,
    lookup,
    resolve_input,
)
from daliaug.keras.converters import label
from daliaug.keras.stacks import flatten, is_augmentation

KEPT_COST = (
    "Keras runs them in the model on every batch after daliaug's pipeline (one layer at a time, "
    "on the device the model trains on)"
)


def _size_of(layer: Any) -> tuple[int, int] | None:
    if hasattr(layer, "height") and hasattr(layer, "width"):
        return int(layer.height), int(layer.width)
    return None


def _staying(compiled: Compiled) -> set[int]:
    """``id``s of the compiled layers that stay in the model (see the module's docstring)."""
    deterministic = [x for x in compiled.compiled if lookup(x).deterministic]
    sized = [x for x in deterministic if _size_of(x) is not None]
    output = compiled.trace.size
    together = all(_size_of(x) == output for x in sized)
    if sized and not together:
        warnings.warn(
            f"{', '.join(label(x) for x in sized)} run in daliaug's pipeline and leave the model "
            f"(not all of them give the pipeline's {list(output or ())} images): the model now "
            "takes those; config.evaluation_twin() resizes validation images the same way",
            UserWarning,
            stacklevel=4,
        )
    return {id(x) for x in deterministic if together or _size_of(x) is None}


def _input_shape(model: Any, compiled: Compiled) -> tuple[Any, ...]:
    """The trimmed model's input: the original's where its size is open, else the pipeline's
    output size."""
    try:
        shape = tuple(model.inputs[0].shape[1:])
    except (AttributeError, ValueError, IndexError):  # a Sequential without an input yet
        shape = ()
    size = compiled.trace.size
    assert size is not None  # Compiled.fields checked it
    channels = compiled.trace.channels
    first = set(compiled.trace.formats.values()) == {"channels_first"}
    spatial = shape[1:3] if first else shape[:2]
    if len(shape) == 3 and spatial == (None, None):
        return shape
    return (channels, *size) if first else (*size, channels)


def _trimmed(model: Any, leading: list[Any], compiled: Compiled, stay: set[int]) -> Any:
    """``model`` with the compiled layers that do not stay taken out of its leading layers; for
    a stack without a model, the layers that stay as a ``keras.layers.Pipeline``."""
    import keras

    removed = {id(x) for x in compiled.compiled} - stay
    kept = [x for x in flatten(leading) if id(x) not in removed]
    name = getattr(model, "name", None)
    if not isinstance(model, keras.Model) or is_augmentation(model):
        return keras.layers.Pipeline(kept or [keras.layers.Identity()], name=name)
    try:
        inputs = keras.Input(shape=_input_shape(model, compiled))
        return _rebuilt(model, leading, kept, removed, inputs)
    except Exception as error:  # Keras rebuilding the user's model: any of its errors
        raise ConfigError(
            f"{label(model)}: Keras cannot rebuild it without the layers daliaug's pipeline "
            f"runs ({first_line(error)})"
        ) from None


def _rebuilt(
    model: Any, leading: list[Any], kept: list[Any], removed: set[int], inputs: Any
) -> Any:
    """``model`` on ``inputs`` with its ``leading`` layers reduced to those ``kept``."""
    import keras

    if isinstance(model, keras.Sequential):
        rest = list(model.layers[len(leading) :])
        return keras.Sequential([inputs, *kept, *rest], name=model.name)
    leading_ids = {id(x) for x in leading}

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        if id(layer) not in leading_ids:
            return layer(*args, **kwargs)
        x = args[0]
        for inner in flatten(layer):
            if id(inner) not in removed:
                x = inner(x)
        return x

    return keras.models.clone_model(
        model, input_tensors=inputs, clone_function=lambda layer: layer, call_function=call
    )


def split_model(
    model: Any,
    *,
    image_size: Any = None,
    channels: int | None = None,
    unsupported: UnsupportedPolicy = "error",
) -> tuple[dict[str, Any], Any]:
    """``(fields, trimmed)``: the config fields of ``model``'s leading augmentation layers and
    the model without them, to train on ``make_dataset({**fields, "source": ...})``.

    ``model``: a Sequential or functional ``keras.Model`` with one image input whose first
    layers are Keras preprocessing layers (directly or in nested ``Sequential``s and
    ``Pipeline``s) that every use of the input passes through, or a ``Sequential``,
    ``Pipeline`` or list of only such layers. ``image_size`` / ``channels``: as the images enter
    the layers (default: the model's input). ``fields`` holds ``image_size`` (the pipeline's
    output size), ``channels``, ``transforms``, ``interpolation``, the output layout and, where
    a layer's ``fill_mode`` needs it, ``backend: tf``. See the module's docstring for which
    deterministic layers stay in the model.

    A layer daliaug cannot run, or a random layer elsewhere in the model (after a layer of the
    user's own, or on a branch the raw input also reaches), raises a :class:`ConfigError`
    naming it; with
    ``unsupported="keep"`` it and the layers after it stay in the model, in order, with one
    warning (for a stack without a model, ``trimmed`` is a ``keras.layers.Pipeline`` of them:
    map it over the dataset, ``dataset.map(lambda x, y: (trimmed(x, training=True), y))``).
    """
    stack = augmentation(model)
    size, channels = resolve_input(model, stack, image_size, channels)
    compiled = compile_layers(
        stack,
        input_size=size,
        channels=channels,
        unsupported=unsupported,
        for_model=True,
    )
    for note in compiled.notes():
        warnings.warn(note, UserWarning, stacklevel=2)
    fields = compiled.fields(values=False)
    backend = compiled.backend("auto")
    if backend != "auto":
        fields["backend"] = backend
    if compiled.kept:
        others = len(compiled.kept) - 1
        after = f" and the {others} layer{'s' * (others > 1)} after it" if others else ""
        warnings.warn(
            f"{label(compiled.kept[0])}{after} stay{'s' * (not others)} in the model: {KEPT_COST}",
            UserWarning,
            stacklevel=2,
        )
    return fields, _trimmed(model, stack.layers, compiled, _staying(compiled))
