"""``from_keras``: a stack of Keras preprocessing layers compiled into one daliaug config.

The layers are walked in order through the table of :mod:`daliaug.keras.converters`; what they
do becomes daliaug transforms with Keras' semantics, fused into the plan as usual. The images
enter the layers at ``image_size`` (what ``image_dataset_from_directory(image_size=...)`` or a
model's ``Input`` gives them): every decoded image is first resized to it, in the same warp.
"""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from daliaug.config import Config, load_config
from daliaug.cuda import cuda_driver
from daliaug.engines.select import dali_gpu_count
from daliaug.errors import BackendWarning, ConfigError, user_stacklevel
from daliaug.keras.backends import keras_backend
from daliaug.keras.converters import (
    CONVERTERS,
    Entry,
    Trace,
    Unsupported,
    label,
    refusal,
    supported,
)
from daliaug.keras.stacks import Leading, converted_as, flatten, is_augmentation, leading
from daliaug.transforms.base import TF_ONLY_FILLS

UnsupportedPolicy = Literal["error", "keep"]


def lookup(layer: Any) -> Entry:
    """The table's entry for ``layer`` (a subclass's is its base's where it provably does what
    its base does), or :class:`Unsupported` naming it."""
    name = converted_as(layer)
    entry = CONVERTERS.get(name)
    if entry is None:
        raise Unsupported(refusal(layer, name))
    return entry


def unsupported_message(layer: Any, reason: str) -> str:
    return (
        f"{reason}\n  daliaug compiles {', '.join(supported())}; "
        f"split_model(..., unsupported='keep') leaves {label(layer)} and the layers after it to "
        "Keras"
    )


@dataclass
class Compiled:
    """Layers compiled: what they do (``trace``), the layers compiled and those left to Keras
    (from the first one daliaug cannot run on, in order)."""

    trace: Trace
    compiled: list[Any]
    kept: list[Any]
    input_size: tuple[int, int] | None

    def notes(self) -> list[str]:
        """The warnings compiling gives: seeds ignored, differences from Keras."""
        return [*seed_notes(self.compiled), *self.trace.notes]

    def fields(self, *, values: bool) -> dict[str, Any]:
        """The config fields the layers set: ``image_size`` (the layers' output size),
        ``channels``, ``transforms`` (a resize to the input size first when it is known),
        ``interpolation``, the output layout, ``bounding_box_format`` and ``max_boxes`` where
        the layers give them and, with ``values``, the output normalization (Rescaling,
        Normalization)."""
        trace = self.trace
        if trace.size is None:
            raise ConfigError(
                "image_size: the layers keep each image's own size; give image_size (the size "
                "images enter the layers at, as image_dataset_from_directory's)"
            )
        transforms = list(trace.transforms)
        if self.input_size is not None:
            transforms.insert(0, {"type": "resize", "size": list(self.input_size)})
        formats = set(trace.formats.values())
        output: dict[str, Any] = {"layout": "NCHW" if formats == {"channels_first"} else "NHWC"}
        if values and not trace.identity_frame:
            output.update(mean=(-trace.offset / trace.scale).tolist())
            output.update(std=(1.0 / trace.scale).tolist())
        interpolations = set(trace.interpolations.values())
        boxes: dict[str, Any] = {}
        if trace.box_format is not None:
            boxes["bounding_box_format"] = trace.box_format
        if trace.max_boxes is not None:
            boxes["max_boxes"] = trace.max_boxes[1]
        return {
            "image_size": list(trace.size),
            "channels": trace.channels,
            "transforms": transforms,
            "interpolation": interpolations.pop() if interpolations else "linear",
            "output": output,
            **boxes,
        }

    def backend(self, asked: str) -> str:
        """The backend for ``asked``: the TensorFlow one (with one warning) where a layer's
        ``fill_mode`` is one DALI's warp lacks and the choice was left to daliaug."""
        tf_only = [name for name, fill in self.trace.fills.items() if fill in TF_ONLY_FILLS]
        if not tf_only or asked == "tf":
            return asked
        modes = sorted({str(self.trace.fills[name]) for name in tf_only})
        why = (
            f"{', '.join(tf_only)}: fill_mode {' and '.join(map(repr, modes))}, which "
            "DALI's warp has not (Keras' default for its affine layers)"
        )
        if keras_backend() != "tensorflow":
            raise ConfigError(
                f"{why}, and Keras runs on {keras_backend()}, whose batches come from DALI "
                "without TensorFlow; give the layers fill_mode='constant' or 'nearest', or run "
                "Keras on TensorFlow (KERAS_BACKEND=tensorflow)"
            )
        if asked != "auto":
            raise ConfigError(
                f"backend: {asked!r}, but {why}; use backend 'tf' or 'auto', or give the layers "
                "fill_mode='constant' or 'nearest'"
            )
        warnings.warn(
            f"{why}: the pipeline runs on daliaug's TensorFlow backend (CPU) instead of DALI; "
            f"with fill_mode='constant' or 'nearest', backend 'auto' {_auto_here()}",
            BackendWarning,
            stacklevel=user_stacklevel(),
        )
        return "tf"


def _auto_here() -> str:
    """What ``backend: auto`` does on this host with a fill DALI has (see
    :func:`~daliaug.engines.select.resolve_backend`)."""
    if cuda_driver() and dali_gpu_count() > 0:
        return "runs it on DALI on this host's GPU"
    return (
        "on this host (no GPU for DALI) takes the CPU path measured faster for the config: "
        "DALI's CPU operators for a policy or masks, else this same TensorFlow backend; "
        "backend 'cpu' forces DALI"
    )


def _check_shared(layer: Any, trace: Trace) -> None:
    """The one warp has one fill and one interpolation, the output one layout."""
    for what, seen in (
        ("fill", trace.fills),
        ("interpolation", trace.interpolations),
        ("data_format", trace.formats),
    ):
        if len(set(map(str, seen.values()))) > 1:
            listed = ", ".join(f"{name}: {value!r}" for name, value in seen.items())
            raise Unsupported(
                f"{label(layer)}: the layers fuse into one warp with one {what}, but they differ "
                f"({listed})"
            )


def compile_layers(
    stack: Leading,
    *,
    input_size: tuple[int, int] | None,
    channels: int,
    unsupported: UnsupportedPolicy = "error",
    for_model: bool = False,
) -> Compiled:
    """Walk the ``stack``'s layers (flattened) through the converter table. A layer daliaug
    cannot run, or the stack's ``blocked`` one, raises a :class:`ConfigError` naming it and the
    supported layers; with ``unsupported="keep"`` it and every layer after it are left out (in
    ``kept``) instead."""
    if unsupported not in ("error", "keep"):
        raise ConfigError(f"unsupported: {unsupported!r} is not 'error' or 'keep'")
    layers = flatten(stack.layers)
    trace = Trace(channels, input_size)
    walked = [*layers, *([stack.blocked[0]] if stack.blocked else [])]
    for i, layer in enumerate(walked):
        before = copy.deepcopy(trace)
        try:
            _convert(layer, trace, for_model, stack.blocked if i == len(layers) else None)
        except Unsupported as e:
            if unsupported == "error":
                raise ConfigError(unsupported_message(layer, str(e))) from None
            return Compiled(before, layers[:i], walked[i:], input_size)
    return Compiled(trace, layers, [], input_size)


def _convert(layer: Any, trace: Trace, for_model: bool, blocked: tuple[Any, str] | None) -> None:
    """Write ``layer`` into ``trace``, or :class:`Unsupported` (``blocked``: why it cannot)."""
    if blocked is not None:
        raise Unsupported(blocked[1])
    entry = lookup(layer)
    if for_model and entry.at_inference:
        raise Unsupported(
            f"{label(layer)}: Keras applies it at inference too, so the model cannot lose it, "
            "and in the model it would redo its work on the pipeline's output; from_keras "
            "compiles it for a dataset alone"
        )
    entry.convert(layer, trace)
    trace.boxes(layer, moves_boxes=entry.moves_boxes)
    _check_shared(layer, trace)


def seed_notes(layers: Sequence[Any]) -> list[str]:
    """A note for each compiled layer with its own seed (daliaug draws from the config's)."""
    notes = []
    for layer in layers:
        seed = getattr(getattr(layer, "generator", None), "_initial_seed", None)
        if seed is not None:
            notes.append(
                f"{label(layer)}: seed={seed} is ignored (daliaug draws from the config's seed)"
            )
    return notes


def augmentation(layers: Any) -> Leading:
    """The layers to compile: all of a list, a layer, or a ``Sequential`` or ``Pipeline`` of
    augmentation (see :mod:`daliaug.keras.stacks`); the leading augmentation of a model with
    other layers after it, which takes one input."""
    import keras

    if not isinstance(layers, keras.Model) or is_augmentation(layers):
        return Leading(flatten(layers))
    inputs = list(getattr(layers, "inputs", None) or [])
    if len(inputs) > 1:
        raise ConfigError(
            f"{label(layers)}: the model takes {len(inputs)} inputs; daliaug feeds a model one "
            "image input: give split_model or from_keras a model with one input, or pass the "
            "augmentation layers alone (a list, Sequential or Pipeline) to from_keras"
        )
    return leading(layers)


def model_input(model: Any, layers: list[Any]) -> tuple[tuple[int, int] | None, int | None]:
    """``(height, width)`` and channels of a built model's (or Sequential's) input, where
    known (``None`` for unknown), in the ``data_format`` of its augmentation ``layers``."""
    import keras

    if not isinstance(model, keras.Model):
        return None, None
    try:
        shape = tuple(model.inputs[0].shape)
    except (AttributeError, ValueError, IndexError, TypeError):
        return None, None
    if len(shape) != 4:
        raise ConfigError(
            f"{label(model)}: its input has shape {list(shape[1:])}, not an image's (height, "
            "width and channels)"
        )
    first = any(getattr(x, "data_format", None) == "channels_first" for x in layers)
    height, width, channels = (shape[2], shape[3], shape[1]) if first else shape[1:4]
    size = (int(height), int(width)) if height and width else None
    return size, int(channels) if channels else None


def resolve_input(
    layers: Any, stack: Leading, image_size: Any, channels: int | None
) -> tuple[tuple[int, int] | None, int]:
    """The size and channels the images enter the layers with: the arguments, else the model's
    input; a fixed model input that disagrees with ``image_size`` is an error."""
    known_size, known_channels = model_input(layers, flatten(stack.layers))
    size = None
    if image_size is not None:
        pair = [image_size] * 2 if isinstance(image_size, numbers.Number) else image_size
        if not isinstance(pair, (list, tuple, np.ndarray)) or len(pair) != 2:
            raise ConfigError(f"image_size: {image_size!r} is not one number or [height, width]")
        size = (_whole("image_size", pair[0]), _whole("image_size", pair[1]))
        if known_size is not None and known_size != size:
            raise ConfigError(
                f"image_size: {list(size)}, but the model takes {list(known_size)} images"
            )
    size = size or known_size
    if channels is not None:
        channels = _whole("channels", channels)
    if channels is not None and known_channels is not None and channels != known_channels:
        raise ConfigError(f"channels: {channels}, but the model takes {known_channels} channels")
    return size, channels or known_channels or 3


def _whole(field: str, value: Any) -> int:
    """``value`` as a whole number of at least 1, or a :class:`ConfigError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"{field}: {value!r} is not a whole number of at least 1")
    return int(value)


def from_keras(
    layers: Any,
    *,
    source: Any,
    image_size: Any = None,
    batch_size: int = 32,
    **config_fields: Any,
) -> Config:
    """The daliaug config that does what Keras' preprocessing ``layers`` do in training.

    ``layers``: a ``keras.Sequential``, a ``keras.layers.Pipeline`` or a list of layers (nested
    or not: all of them are compiled, or the first that cannot be is named), or a model with
    one input whose augmentation every use of that input passes through (only that is
    compiled; train such a model through :func:`daliaug.split_model`, which also takes it
    out); see :mod:`daliaug.keras.stacks`.
    ``image_size``: ``[height, width]`` (or one number) of the images as they enter the
    layers; each decoded image is first resized to it (default: the model's input size). The
    config's own ``image_size`` is what the layers put out. ``config_fields`` are any other
    config fields (``seed``, ``shuffle``, ``label_mode``, ``backend``, ``output``...).

    Every layer becomes the daliaug transform with Keras' semantics (see the README's table);
    ``Rescaling`` and ``Normalization`` become the output normalization. A layer daliaug
    cannot run exactly raises a :class:`ConfigError` naming it and the supported layers.
    Layers whose ``fill_mode`` DALI lacks (``reflect``, Keras' default, and ``wrap``) put the
    pipeline on daliaug's TensorFlow backend, with one warning.

    Layers given a ``bounding_box_format`` (all the same one) set the config's, and
    ``MaxNumBoundingBoxes`` its ``max_boxes``: the batches then carry Keras' ``bounding_boxes``
    dict, moved as the layers move it (an ``arrays`` source takes ``y`` as that dict).
    """
    for reserved in ("transforms", "image_size"):
        if reserved in config_fields:
            raise ConfigError(f"{reserved}: from_keras takes it from the layers")
    stack = augmentation(layers)
    size, channels = resolve_input(layers, stack, image_size, config_fields.pop("channels", None))
    compiled = compile_layers(stack, input_size=size, channels=channels)
    for note in compiled.notes():
        warnings.warn(note, UserWarning, stacklevel=2)
    fields = compiled.fields(values=True)
    output = dict(config_fields.pop("output", None) or {})
    clash = [k for k in ("mean", "std", "rescale") if k in output and "mean" in fields["output"]]
    if clash:
        raise ConfigError(f"output.{clash[0]}: the layers' Rescaling/Normalization set it")
    fields["output"] = {**fields["output"], **output}
    for name in ("bounding_box_format", "max_boxes"):
        if name in fields and config_fields.get(name, fields[name]) != fields[name]:
            raise ConfigError(
                f"{name}: {config_fields[name]!r}, but the layers give {fields[name]!r}"
            )
    backend = compiled.backend(config_fields.pop("backend", "auto"))
    arrays = isinstance(source, dict) and source.get("type") == "arrays"
    if "bounding_box_format" in fields and arrays:  # the layers move boxes: y is Keras' dict
        source = {"boxes": True, **source}
    return load_config(
        {**fields, "source": source, "batch_size": batch_size, "backend": backend, **config_fields}
    )
