"""``from_keras``: a stack of Keras preprocessing layers compiled into one daliaug config.

The layers are walked in order through the table of :mod:`daliaug.keras.converters`; what they
do becomes daliaug transforms with Keras' semantics, fused into the plan as usual. The images
enter the layers at ``image_size`` (what ``image_dataset_from_directory(image_size=...)`` or a
model's ``Input`` gives them): every decoded image is first resized to it, in the same warp.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from daliaug.config import Config, load_config
from daliaug.errors import BackendWarning, ConfigError
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
from daliaug.transforms.base import TF_ONLY_FILLS

UnsupportedPolicy = Literal["error", "keep"]


def lookup(layer: Any) -> Entry | None:
    """The table's entry for ``layer``: Keras' own class only (a subclass may change what the
    layer does, so it is not taken for its parent)."""
    import keras

    entry = CONVERTERS.get(type(layer).__name__)
    if entry is None or type(layer) is not getattr(keras.layers, type(layer).__name__, None):
        return None
    return entry


def is_preprocessing(layer: Any) -> bool:
    """Whether ``layer`` is one of Keras' preprocessing layers, or a ``Sequential`` or
    ``Pipeline`` of them."""
    import keras

    if isinstance(layer, (keras.Sequential, keras.layers.Pipeline)):
        return bool(layer.layers) and all(is_preprocessing(inner) for inner in layer.layers)
    return type(layer).__module__.startswith("keras.src.layers.preprocessing.")


def leading_preprocessing(model: Any) -> list[Any]:
    """The model's leading preprocessing layers (top level: a ``Sequential`` of them counts as
    one): for a functional model, the chain from its one input that feeds each into the next."""
    import keras

    layers = [x for x in model.layers if not isinstance(x, keras.layers.InputLayer)]
    if isinstance(model, keras.Sequential):
        run = []
        for layer in layers:
            if not is_preprocessing(layer):
                break
            run.append(layer)
        return run
    if len(model.inputs) != 1:
        return []
    tensor, run = model.inputs[0], []
    for layer in layers:
        if not is_preprocessing(layer) or len(layer._inbound_nodes) != 1:
            break
        if layer.input is not tensor:
            break
        run.append(layer)
        tensor = layer.output
    return run


def flatten(layers: Any) -> list[Any]:
    """A ``Sequential``, a ``Pipeline``, a layer or a list of them as a flat list of layers."""
    import keras

    if isinstance(layers, (list, tuple)):
        return [inner for layer in layers for inner in flatten(layer)]
    if isinstance(layers, (keras.Sequential, keras.layers.Pipeline)):
        return flatten(list(layers.layers))
    return [layers]


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
        ``interpolation``, the output layout and, with ``values``, the output normalization
        (Rescaling, Normalization)."""
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
        return {
            "image_size": list(trace.size),
            "channels": trace.channels,
            "transforms": transforms,
            "interpolation": interpolations.pop() if interpolations else "linear",
            "output": output,
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
            "fill_mode='constant' or 'nearest' keeps it on DALI",
            BackendWarning,
            stacklevel=3,
        )
        return "tf"


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
    layers: Sequence[Any],
    *,
    input_size: tuple[int, int] | None,
    channels: int,
    unsupported: UnsupportedPolicy = "error",
    for_model: bool = False,
) -> Compiled:
    """Walk ``layers`` through the converter table. A layer daliaug cannot run raises a
    :class:`ConfigError` naming it and the supported layers; with ``unsupported="keep"`` it and
    every layer after it are left out (in ``kept``) instead."""
    if unsupported not in ("error", "keep"):
        raise ConfigError(f"unsupported: {unsupported!r} is not 'error' or 'keep'")
    trace = Trace(channels, input_size)
    for i, layer in enumerate(layers):
        entry = lookup(layer)
        before = copy.deepcopy(trace)
        try:
            if entry is None:
                raise Unsupported(refusal(layer))
            if for_model and entry.at_inference:
                raise Unsupported(
                    f"{label(layer)}: Keras applies it at inference too, so the model cannot "
                    "lose it, and in the model it would redo its work on the pipeline's "
                    "output; from_keras compiles it for a dataset alone"
                )
            entry.convert(layer, trace)
            _check_shared(layer, trace)
        except Unsupported as e:
            if unsupported == "error":
                raise ConfigError(unsupported_message(layer, str(e))) from None
            return Compiled(before, list(layers[:i]), list(layers[i:]), input_size)
    return Compiled(trace, list(layers), [], input_size)


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


def model_input(layers: Any) -> tuple[tuple[int, int] | None, int | None]:
    """``(height, width)`` and channels of a built model's (or Sequential's) input, where
    known (``None`` for unknown)."""
    import keras

    if not isinstance(layers, keras.Model):
        return None, None
    try:
        shape = tuple(layers.inputs[0].shape)
    except (AttributeError, ValueError, IndexError, TypeError):
        return None, None
    first = _channels_first(layers)
    height, width, channels = (shape[2], shape[3], shape[1]) if first else shape[1:4]
    size = (int(height), int(width)) if height and width else None
    return size, int(channels) if channels else None


def _channels_first(model: Any) -> bool:
    return any(getattr(layer, "data_format", None) == "channels_first" for layer in model.layers)


def resolve_input(
    layers: Any, image_size: Any, channels: int | None
) -> tuple[tuple[int, int] | None, int]:
    """The size and channels the images enter the layers with: the arguments, else the model's
    input; a fixed model input that disagrees with ``image_size`` is an error."""
    known_size, known_channels = model_input(layers)
    size = None
    if image_size is not None:
        size = (int(image_size), int(image_size)) if np.isscalar(image_size) else image_size
        size = (int(size[0]), int(size[1]))
        if known_size is not None and known_size != size:
            raise ConfigError(
                f"image_size: {list(size)}, but the model takes {list(known_size)} images"
            )
    size = size or known_size
    if channels is not None and known_channels is not None and channels != known_channels:
        raise ConfigError(f"channels: {channels}, but the model takes {known_channels} channels")
    return size, channels or known_channels or 3


def augmentation_layers(layers: Any) -> list[Any]:
    """The layers to compile: all of a list, ``Sequential`` or ``Pipeline``; the leading
    preprocessing layers of a model with other layers after them."""
    import keras

    if isinstance(layers, keras.Model):
        return flatten(leading_preprocessing(layers))
    return flatten(layers)


def from_keras(
    layers: Any,
    *,
    source: Any,
    image_size: Any = None,
    batch_size: int = 32,
    **config_fields: Any,
) -> Config:
    """The daliaug config that does what Keras' preprocessing ``layers`` do in training.

    ``layers``: a ``keras.Sequential``, a ``keras.layers.Pipeline``, a list of layers, or a
    model whose leading layers are preprocessing layers (only those are compiled; train such
    a model through :func:`daliaug.split_model`, which also takes them out of it).
    ``image_size``: ``[height, width]`` (or one number) of the images as they enter the
    layers; each decoded image is first resized to it (default: the model's input size). The
    config's own ``image_size`` is what the layers put out. ``config_fields`` are any other
    config fields (``seed``, ``shuffle``, ``label_mode``, ``backend``, ``output``...).

    Every layer becomes the daliaug transform with Keras' semantics (see the README's table);
    ``Rescaling`` and ``Normalization`` become the output normalization. A layer daliaug
    cannot run exactly raises a :class:`ConfigError` naming it and the supported layers.
    Layers whose ``fill_mode`` DALI lacks (``reflect``, Keras' default, and ``wrap``) put the
    pipeline on daliaug's TensorFlow backend, with one warning.
    """
    for reserved in ("transforms", "image_size"):
        if reserved in config_fields:
            raise ConfigError(f"{reserved}: from_keras takes it from the layers")
    size, channels = resolve_input(layers, image_size, config_fields.pop("channels", None))
    stack = augmentation_layers(layers)
    compiled = compile_layers(stack, input_size=size, channels=channels)
    for note in compiled.notes():
        warnings.warn(note, UserWarning, stacklevel=2)
    fields = compiled.fields(values=True)
    output = dict(config_fields.pop("output", None) or {})
    clash = [k for k in ("mean", "std", "rescale") if k in output and "mean" in fields["output"]]
    if clash:
        raise ConfigError(f"output.{clash[0]}: the layers' Rescaling/Normalization set it")
    fields["output"] = {**fields["output"], **output}
    backend = compiled.backend(config_fields.pop("backend", "auto"))
    return load_config(
        {**fields, "source": source, "batch_size": batch_size, "backend": backend, **config_fields}
    )
