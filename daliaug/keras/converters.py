"""The table ``from_keras`` and ``split_model`` read: one small converter per Keras preprocessing
layer class, each writing what its layer does into a :class:`Trace` in daliaug's terms.

A converter reads the layer's own attributes (the factors Keras parsed, ``fill_mode``,
``interpolation``, ``value_range``...) and adds daliaug transforms with Keras' semantics, or
changes the value frame (``Rescaling``, ``Normalization``). What a layer does that daliaug
cannot run exactly raises :class:`Unsupported` naming the layer and the argument; a layer class
with no entry here is unsupported as a whole. Adding a layer is one entry: a function decorated
with :func:`converts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from daliaug.config import format_errors
from daliaug.errors import ConfigError
from daliaug.fields import warp_interpolation
from daliaug.transforms.aug_mix import MOST
from daliaug.transforms.base import TF_ONLY_FILLS, Fill
from daliaug.transforms.clahe import Clahe

PIPELINE_RANGE = (0.0, 255.0)
"""The values daliaug's pipeline computes on: the decoded images' 0..255."""


class Unsupported(ConfigError):
    """A layer (or one of its arguments) daliaug cannot run with Keras' semantics."""


def label(layer: Any) -> str:
    """How messages name a layer: its class and name, ``RandomFlip 'random_flip'`` (the class
    alone for what is not a layer)."""
    name = getattr(layer, "name", None)
    return f"{type(layer).__name__} {name!r}" if isinstance(name, str) else type(layer).__name__


@dataclass
class Trace:
    """What the layers so far do, in the pipeline's terms.

    ``size``: ``[height, width]`` of the images after them (``None``: each image keeps its own
    size). ``scale`` and ``offset`` (per channel) are the value frame: a layer sees the value
    ``scale * v + offset`` where the pipeline holds ``v`` (0..255), which Rescaling and
    Normalization change; colour layers and fill values are translated through it.
    """

    channels: int
    size: tuple[int, int] | None
    scale: np.ndarray = field(init=False)
    offset: np.ndarray = field(init=False)
    transforms: list[dict[str, Any]] = field(default_factory=list)
    fills: dict[str, Fill] = field(default_factory=dict)
    """The fill of each revealing layer, by :func:`label` (the one warp has one fill)."""
    interpolations: dict[str, str] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)
    """Each layer's ``data_format``, by :func:`label`."""
    stage: tuple[str, str] | None = None
    """The first layer that became a pixel stage (``"pixel"``) or a batch stage (``"batch"``),
    by :func:`label`: the pipeline runs those after its warp and colour pass."""
    notes: list[str] = field(default_factory=list)
    """Where a layer converts with a difference from Keras worth a warning, one line each."""
    whole_image: str | None = None
    """The first layer that became a pixel stage whose result a warp before it would change
    (a filter, the image's statistics, levels cut from resampled values), by :func:`label`: no
    geometry may follow."""
    box_formats: dict[str, str | None] = field(default_factory=dict)
    """Each layer's ``bounding_box_format`` (``None``: not given), by :func:`label`, for the
    layers that take one (Keras' image preprocessing layers)."""
    max_boxes: tuple[str, int] | None = None
    """The ``MaxNumBoundingBoxes`` layer, by :func:`label`, and its ``max_number``."""

    def __post_init__(self) -> None:
        self.scale = np.ones(self.channels)
        self.offset = np.zeros(self.channels)

    @property
    def identity_frame(self) -> bool:
        return bool(np.all(self.scale == 1.0) and np.all(self.offset == 0.0))

    def to_pipeline(self, value: float) -> np.ndarray:
        """A value as a layer sees it, per channel on the pipeline's 0..255 scale."""
        return (float(value) - self.offset) / self.scale

    def uniform(self, layer: Any, what: str, values: np.ndarray) -> float:
        """The one pipeline value of ``values`` (one per channel), or :class:`Unsupported` when
        the value frame (per-channel ``Normalization`` before the layer) makes them differ."""
        if not np.allclose(values, values[0], rtol=1e-5, atol=1e-4):
            raise Unsupported(
                f"{label(layer)}: its {what} means {np.round(values, 3).tolist()} per channel on "
                "the pipeline's 0..255 values, after the per-channel Normalization before it; "
                "daliaug's pipeline takes one value for all channels"
            )
        return float(values[0])

    def geometric(
        self,
        layer: Any,
        transform: dict[str, Any],
        *,
        fill_mode: str | None = None,
        fill_value: float = 0.0,
        interpolation: str | None = None,
    ) -> None:
        """Add a geometric transform for ``layer``; a revealing layer passes its ``fill_mode``
        and ``fill_value``, a resampling one its ``interpolation``."""
        self._after_stages(layer, "batch")
        if self.whole_image is not None:
            raise Unsupported(
                f"{label(layer)}: it comes after {self.whole_image}, which daliaug runs after "
                "the warp, where resampling or revealing fill first would change its result; "
                "put it before that layer"
            )
        self._format(layer)
        if fill_mode is not None:
            fill = self._fill(layer, fill_mode, fill_value)
            transform = {**transform, "fill": fill}
            self.fills[label(layer)] = fill
        if interpolation is not None:
            self.interpolations[label(layer)] = warp_interpolation(
                interpolation, label(layer), Unsupported
            )
        self.transforms.append(transform)

    def colour(self, layer: Any, transforms: list[dict[str, Any]], value_range: Any = None) -> None:
        """Add colour transforms for ``layer``, which works on ``value_range`` and clips to it:
        that range must be the pipeline's 0..255 through the value frame (``None``: a layer
        without one, which works on any values)."""
        self._after_stages(layer, "pixel", "batch")
        if value_range is not None:
            self.check_range(layer, value_range)
        self._format(layer)
        self.transforms.extend(transforms)

    def pixels(
        self,
        layer: Any,
        transforms: list[dict[str, Any]],
        value_range: Any = None,
        *,
        whole_image: bool = False,
    ) -> None:
        """Add pixel stages for ``layer`` (they run after the colour pass, in order); one that
        works on ``value_range`` passes it (see :meth:`colour`); one whose result a warp
        before it would change passes ``whole_image`` (then no geometric layer may follow)."""
        self._after_stages(layer, "batch")
        if value_range is not None:
            self.check_range(layer, value_range)
        self._format(layer)
        self.transforms.extend(transforms)
        self.stage = self.stage or (label(layer), "pixel")
        if whole_image:
            self.whole_image = self.whole_image or label(layer)

    def batch(self, layer: Any, transforms: list[dict[str, Any]]) -> None:
        """Add batch stages for ``layer`` (they run last, on the whole batch)."""
        self._after_stages(layer, "batch")
        if self.max_boxes is not None:
            raise Unsupported(
                f"{label(layer)}: it comes after {self.max_boxes[0]}, but daliaug pads the boxes "
                "to max_boxes after the batch stages (MixUp joins two images' boxes); put "
                f"{self.max_boxes[0]} last"
            )
        self._format(layer)
        self.transforms.extend(transforms)
        self.stage = self.stage or (label(layer), "batch")

    def uniform_frame(self, layer: Any, *, offset: bool = True) -> None:
        """:class:`Unsupported` unless the value frame is the same on every channel (for layers
        that mix the channels), and without an offset when ``offset`` is False (for layers
        whose result changes when a constant is added, such as HSV's saturation)."""
        same = np.allclose(self.scale, self.scale[0]) and np.allclose(self.offset, self.offset[0])
        if not same or self.scale[0] <= 0 or (not offset and np.any(self.offset != 0)):
            frame = f"{np.round(self.scale, 6).tolist()} * v + {np.round(self.offset, 6).tolist()}"
            raise Unsupported(
                f"{label(layer)}: the images reach it as {frame} of the 0..255 pixels (the "
                "Rescaling or Normalization before it), where its result differs from the "
                "same layer on the 0..255 pixels; move it before that layer"
            )

    def check_range(self, layer: Any, value_range: Any) -> None:
        """:class:`Unsupported` unless ``value_range`` is the images' range at ``layer``."""
        self._format(layer)
        low, high = (float(v) for v in sorted(value_range))
        seen = (
            self.uniform(layer, "value_range", self.to_pipeline(low)),
            self.uniform(layer, "value_range", self.to_pipeline(high)),
        )
        if not np.allclose(seen, PIPELINE_RANGE, atol=1e-3 * PIPELINE_RANGE[1]):
            images = [round(float(self.scale[0] * v + self.offset[0]), 6) for v in PIPELINE_RANGE]
            raise Unsupported(
                f"{label(layer)}: value_range={[low, high]}, but the images reach this layer in "
                f"{images} (the 0..255 pixels through the layers before it); give "
                f"value_range={images} (daliaug clips to the images' range)"
            )

    def values(self, scale: np.ndarray, offset: np.ndarray) -> None:
        """A layer maps each value ``x`` it sees to ``scale * x + offset`` (per channel)."""
        self.scale = self.scale * scale
        self.offset = self.offset * scale + offset

    def resized(self, height: int, width: int) -> None:
        """The images leave the layer at ``height x width``."""
        self.size = (int(height), int(width))

    def _fill(self, layer: Any, mode: str, value: float) -> Fill:
        if mode in ("nearest", *TF_ONLY_FILLS):
            return mode
        if mode != "constant":
            raise Unsupported(f"{label(layer)}: fill_mode={mode!r} is not one of Keras' modes")
        return self.uniform(layer, "fill_value", self.to_pipeline(value))

    def _after_stages(self, layer: Any, *kinds: str) -> None:
        if self.stage is not None and self.stage[1] in kinds:
            first, kind = self.stage
            raise Unsupported(
                f"{label(layer)}: it comes after {first}, which daliaug runs as a {kind} stage "
                "after the warp and the colour pass; put it before that layer"
            )

    def _format(self, layer: Any) -> None:
        data_format = getattr(layer, "data_format", None)
        if data_format is not None:
            self.formats[label(layer)] = data_format

    @property
    def box_format(self) -> str | None:
        """The ``bounding_box_format`` the layers give (they agree: :meth:`boxes`)."""
        return next((f for f in self.box_formats.values() if f is not None), None)

    def boxes(self, layer: Any, *, moves_boxes: bool) -> None:
        """Record ``layer``'s ``bounding_box_format``: all the layers that take one give the
        same one (Keras' own layer refuses boxes without one), and one that Keras cannot move
        boxes through (``moves_boxes`` False) gives none."""
        if not hasattr(layer, "bounding_box_format"):
            return
        fmt = layer.bounding_box_format
        self.box_formats[label(layer)] = fmt
        if fmt is not None and not moves_boxes:
            raise Unsupported(
                f"{label(layer)}: bounding_box_format={fmt!r}, but Keras' own layer cannot move "
                "boxes (it raises NotImplementedError for them), so daliaug does not convert it "
                "for boxes either; leave it out of a detection stack"
            )
        if len(set(self.box_formats.values())) > 1 and self.box_format is not None:
            listed = ", ".join(f"{name}: {value!r}" for name, value in self.box_formats.items())
            raise Unsupported(
                f"{label(layer)}: the layers give different bounding_box_format ({listed}); "
                "the boxes are in one format, and Keras' layers refuse boxes without one: give "
                "every layer the same bounding_box_format"
            )


Converter = Callable[[Any, Trace], None]


@dataclass(frozen=True)
class Entry:
    """How one Keras layer class becomes daliaug: ``convert`` writes it into a :class:`Trace`;
    ``deterministic`` layers (no random draw) may stay in a model that ``split_model`` trims;
    ``at_inference`` layers change images at inference too, and being neither (they do not
    commute with the pipeline's later layers), ``split_model`` cannot take them out;
    ``moves_boxes`` is False for the layers Keras refuses boxes through."""

    convert: Converter
    deterministic: bool = False
    at_inference: bool = False
    moves_boxes: bool = True


CONVERTERS: dict[str, Entry] = {}
"""Keras layer class name -> its entry."""


def converts(
    name: str, *, deterministic: bool = False, at_inference: bool = False, moves_boxes: bool = True
) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of Keras' layer class ``name``."""

    def register(convert: Converter) -> Converter:
        CONVERTERS[name] = Entry(convert, deterministic, at_inference, moves_boxes)
        return convert

    return register


def _pair(values: Any) -> list[float]:
    return [float(v) for v in values]


def _affine_fill(layer: Any) -> dict[str, Any]:
    """The fill and interpolation arguments of Keras' affine layers."""
    return {
        "fill_mode": layer.fill_mode,
        "fill_value": layer.fill_value,
        "interpolation": layer.interpolation,
    }


@converts("RandomFlip")
def _random_flip(layer: Any, trace: Trace) -> None:
    trace.geometric(layer, {"type": "keras_flip", "mode": layer.mode})


@converts("RandomRotation")
def _random_rotation(layer: Any, trace: Trace) -> None:
    angle = [360.0 * float(f) for f in layer.factor]
    trace.geometric(layer, {"type": "rotation", "angle": angle}, **_affine_fill(layer))


@converts("RandomZoom")
def _random_zoom(layer: Any, trace: Trace) -> None:
    transform: dict[str, Any] = {
        "type": "keras_zoom",
        "height_factor": [float(layer.height_lower), float(layer.height_upper)],
    }
    if layer.width_factor is not None:
        transform["width_factor"] = [float(layer.width_lower), float(layer.width_upper)]
    trace.geometric(layer, transform, **_affine_fill(layer))


@converts("RandomTranslation")
def _random_translation(layer: Any, trace: Trace) -> None:
    transform = {
        "type": "shift",
        "x": [float(layer.width_lower), float(layer.width_upper)],
        "y": [float(layer.height_lower), float(layer.height_upper)],
    }
    trace.geometric(layer, transform, **_affine_fill(layer))


@converts("RandomShear")
def _random_shear(layer: Any, trace: Trace) -> None:
    transform = {
        "type": "keras_shear",
        "x_factor": _pair(layer.x_factor),
        "y_factor": _pair(layer.y_factor),
    }
    trace.geometric(layer, transform, **_affine_fill(layer))


@converts("RandomCrop")
def _random_crop(layer: Any, trace: Trace) -> None:
    size = [int(layer.height), int(layer.width)]
    trace.geometric(layer, {"type": "keras_random_crop", "size": size})
    trace.resized(*size)


@converts("CenterCrop", deterministic=True)
def _center_crop(layer: Any, trace: Trace) -> None:
    size = [int(layer.height), int(layer.width)]
    trace.geometric(layer, {"type": "keras_center_crop", "size": size})
    trace.resized(*size)


@converts("Resizing", deterministic=True)
def _resizing(layer: Any, trace: Trace) -> None:
    if layer.antialias:
        raise Unsupported(f"{label(layer)}: antialias=True; daliaug resizes without antialiasing")
    size = [int(layer.height), int(layer.width)]
    if layer.crop_to_aspect_ratio:
        transform: dict[str, Any] = {"type": "keras_resize", "size": size, "aspect": "crop"}
        trace.geometric(layer, transform, interpolation=layer.interpolation)
    elif layer.pad_to_aspect_ratio:
        transform = {"type": "keras_resize", "size": size, "aspect": "pad"}
        fill = {"fill_mode": layer.fill_mode, "fill_value": layer.fill_value}
        trace.geometric(layer, transform, interpolation=layer.interpolation, **fill)
    else:
        trace.geometric(layer, {"type": "resize", "size": size}, interpolation=layer.interpolation)
    trace.resized(*size)


def _brightness(factor: Any) -> dict[str, Any]:
    return {"type": "keras_brightness", "factor": _pair(factor)}


def _contrast(factor: Any) -> dict[str, Any]:
    low, high = (float(f) for f in factor)
    return {"type": "keras_contrast", "factor": [1.0 - low, 1.0 + high]}


@converts("RandomBrightness")
def _random_brightness(layer: Any, trace: Trace) -> None:
    trace.colour(layer, [_brightness(layer.factor)], layer.value_range)


@converts("RandomContrast")
def _random_contrast(layer: Any, trace: Trace) -> None:
    trace.colour(layer, [_contrast(layer.factor)], layer.value_range)


def _saturation(layer: Any) -> dict[str, Any]:
    return {
        "type": "keras_saturation",
        "factor": _pair(layer.factor),
        "saturation_range": _pair(sorted(layer.value_range)),
    }


def _hue(layer: Any) -> dict[str, Any]:
    return {"type": "keras_hue", "factor": _pair(layer.factor)}


@converts("RandomColorJitter")
def _random_color_jitter(layer: Any, trace: Trace) -> None:
    transforms = []
    if layer.brightness_factor is not None:
        transforms.append(_brightness(layer.random_brightness.factor))
    if layer.contrast_factor is not None:
        transforms.append(_contrast(layer.random_contrast.factor))
    trace.colour(layer, transforms, layer.value_range)
    if layer.saturation_factor is not None:
        trace.uniform_frame(layer, offset=False)
        trace.pixels(layer, [_saturation(layer.random_saturation)])
    if layer.hue_factor is not None:
        trace.pixels(layer, [_hue(layer.random_hue)], layer.value_range)


@converts("RandomSaturation")
def _random_saturation(layer: Any, trace: Trace) -> None:
    """Keras works in HSV on the values as they reach the layer (its ``value_range`` only
    clips the scaled saturation): the same on the 0..255 pixels when they are only scaled."""
    trace.uniform_frame(layer, offset=False)
    trace.pixels(layer, [_saturation(layer)])


@converts("RandomHue")
def _random_hue(layer: Any, trace: Trace) -> None:
    trace.pixels(layer, [_hue(layer)], layer.value_range)


@converts("RandomGrayscale")
def _random_grayscale(layer: Any, trace: Trace) -> None:
    trace.uniform_frame(layer)
    trace.colour(layer, [{"type": "grayscale", "probability": float(layer.factor)}])


@converts("RandomColorDegeneration")
def _random_color_degeneration(layer: Any, trace: Trace) -> None:
    trace.uniform_frame(layer)
    transform = {"type": "color_degeneration", "factor": _pair(layer.factor)}
    trace.colour(layer, [transform], layer.value_range)


@converts("RandomInvert")
def _random_invert(layer: Any, trace: Trace) -> None:
    """Keras inverts with probability ``p ~ U(factor)``: a Bernoulli of the mean of ``factor``;
    it computes ``value_range[1] - x``, an inversion of the range only when it starts at 0."""
    low = float(layer.value_range[0])
    if low != 0.0:
        raise Unsupported(
            f"{label(layer)}: value_range={list(layer.value_range)}; Keras computes "
            f"{float(layer.value_range[1]):g} - x, which inverts the range only when it starts "
            "at 0"
        )
    probability = sum(_pair(layer.factor)) / 2
    trace.colour(layer, [{"type": "invert", "probability": probability}], layer.value_range)


@converts("Solarization")
def _solarization(layer: Any, trace: Trace) -> None:
    """Keras draws from ``U(low, 255 * high)`` of each factor (its code scales only the upper
    bound); ``keras_solarization`` takes those ranges on the 0..255 values, which Keras maps
    its ``value_range`` to."""
    (a0, a1), (t0, t1) = _pair(layer.addition_factor), _pair(layer.threshold_factor)
    transform = {
        "type": "keras_solarization",
        "addition": [a0, 255.0 * a1],
        "threshold": [t0, 255.0 * t1],
    }
    trace.pixels(layer, [transform], layer.value_range)


@converts("MixUp")
def _mix_up(layer: Any, trace: Trace) -> None:
    trace.batch(layer, [{"type": "mixup", "alpha": float(layer.alpha)}])


@converts("MaxNumBoundingBoxes", deterministic=True)
def _max_num_bounding_boxes(layer: Any, trace: Trace) -> None:
    """The batches' ``max_boxes``: Keras' padding with -1 (daliaug's, the only fill value it
    pads with). Where an image has more boxes Keras keeps the first ``max_number`` silently,
    daliaug with a ``DataWarning`` naming the count."""
    if int(layer.fill_value) != -1:
        raise Unsupported(
            f"{label(layer)}: fill_value={layer.fill_value}; daliaug pads boxes and labels with "
            "-1 (Keras' default): give fill_value=-1"
        )
    if trace.max_boxes is not None:
        raise Unsupported(
            f"{label(layer)}: it comes after {trace.max_boxes[0]}; daliaug pads the boxes once"
        )
    trace.max_boxes = (label(layer), int(layer.max_number))


@converts("CutMix", moves_boxes=False)
def _cut_mix(layer: Any, trace: Trace) -> None:
    trace.batch(layer, [{"type": "keras_cutmix", "factor": _pair(layer.factor)}])


@converts("RandomErasing")
def _random_erasing(layer: Any, trace: Trace) -> None:
    """Keras erases with probability ``p ~ U(factor)`` (a Bernoulli of the mean of ``factor``)
    and clips its fill to ``value_range``, which the value frame maps to 0..255 here: its
    default noise ``n * high`` becomes ``mean + std * n`` on the 0..255 values."""
    trace.check_range(layer, layer.value_range)
    transform: dict[str, Any] = {
        "type": "keras_random_erasing",
        "probability": sum(_pair(layer.factor)) / 2,
        "scale": _pair(layer.scale),
    }
    if layer.fill_value is None:
        high = max(float(v) for v in layer.value_range)
        mean = trace.uniform(layer, "noise mean", trace.to_pipeline(0.0))
        std = trace.uniform(layer, "noise scale", high / trace.scale)
        transform["noise"] = [mean, std]
    else:
        low, high = sorted(float(v) for v in layer.value_range)
        values = np.clip(
            _per_channel(layer, "fill_value", layer.fill_value, trace.channels), low, high
        )
        fill = [trace.to_pipeline(v)[c] for c, v in enumerate(values)]
        fill = np.clip(fill, *PIPELINE_RANGE)  # float rounding of the frame
        transform["value"] = [float(v) for v in fill]
    trace.pixels(layer, [transform], whole_image=True)


def _fill_value(layer: Any, trace: Trace) -> float:
    """The layer's ``fill_value`` on the pipeline's 0..255 values (read through the value
    frame), refused outside them."""
    fill = trace.uniform(layer, "fill_value", trace.to_pipeline(layer.fill_value))
    if not PIPELINE_RANGE[0] <= fill <= PIPELINE_RANGE[1]:
        raise Unsupported(
            f"{label(layer)}: fill_value={layer.fill_value} is {fill:g} on the pipeline's 0..255 "
            "values; daliaug fills within them"
        )
    return fill


@converts("RandomPerspective")
def _random_perspective(layer: Any, trace: Trace) -> None:
    """Keras applies it with probability ``p ~ U(factor)`` (a Bernoulli of the mean of
    ``factor``); its ``fill_value`` is read through the value frame."""
    fill = _fill_value(layer, trace)
    transform = {
        "type": "keras_perspective",
        "probability": sum(_pair(layer.factor)) / 2,
        "scale": float(layer.scale),
        "fill": fill,
        "interpolation": layer.interpolation,
    }
    trace.pixels(layer, [transform], whole_image=True)


@converts("RandomPosterization")
def _random_posterization(layer: Any, trace: Trace) -> None:
    """Keras keeps ``b`` bits, ``b`` from ``randint(low, high)`` (``high`` excluded) unless
    ``low == high``; ``posterize`` keeps one bit count, so only one possible ``b`` converts.
    Keras truncates the values to whole numbers, ``posterize`` rounds them (the same on
    whole-valued images)."""
    low, high = (int(v) for v in layer.factor)
    if high - low > 1:
        raise Unsupported(
            f"{label(layer)}: factor={[low, high]}; Keras draws the bits kept per image from "
            f"{low}..{high - 1}, daliaug's posterize keeps one bit count: give factor=(b, b)"
        )
    transform = {"type": "posterize", "bits": low, "probability": 1.0}
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)


@converts("Equalization")
def _equalization(layer: Any, trace: Trace) -> None:
    """Keras' table on one image is ``equalize``'s; on a batch it pools one histogram per
    channel over the images (each image equalized on its own here, with a note). Only its
    default 256 bins."""
    if int(layer.bins) != 256:
        raise Unsupported(
            f"{label(layer)}: bins={layer.bins}; Keras then maps each value through "
            "value * (bins - 1) / 255 before its table, daliaug's equalize uses 256 bins"
        )
    transform = {"type": "equalize", "probability": 1.0}
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)
    trace.notes.append(
        f"{label(layer)}: each image is equalized on its own histogram (Keras pools one "
        "histogram per channel over the images of the batch it is given: the same for a batch "
        "of one image)"
    )


@converts("AutoContrast", at_inference=True)
def _auto_contrast(layer: Any, trace: Trace) -> None:
    """Keras stretches each channel at inference as well."""
    transform = {"type": "auto_contrast", "probability": 1.0}
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)


@converts("RandomSharpness")
def _random_sharpness(layer: Any, trace: Trace) -> None:
    """Keras blends ``in + (1 - 2u) (smooth - in)``, ``u ~ U(factor)``: ``sharpness`` of factor
    ``2u``. Its smoothing pads with zeros, so its one-pixel border differs (kept here, as
    PIL)."""
    low, high = _pair(layer.factor)
    transform = {"type": "sharpness", "factor": [2.0 * low, 2.0 * high], "probability": 1.0}
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)


@converts("RandomGaussianBlur")
def _random_gaussian_blur(layer: Any, trace: Trace) -> None:
    """Keras blurs with probability ``p ~ U(factor)`` (a Bernoulli of the mean of ``factor``),
    one sigma per axis per batch plus 1e-6: the same per image only for a fixed sigma and a
    square kernel. Its blur pads with zeros (mirrored here: the border band differs)."""
    sizes = {int(k) for k in layer.kernel_size}
    if len(sizes) != 1:
        raise Unsupported(
            f"{label(layer)}: kernel_size={list(layer.kernel_size)}; daliaug's gaussian_blur "
            "takes one odd size for both axes"
        )
    low, high = _pair(layer.sigma)
    if low != high:
        raise Unsupported(
            f"{label(layer)}: sigma={[low, high]}; Keras draws one sigma per axis for the whole "
            "batch, daliaug's gaussian_blur one sigma per image for both axes: give "
            "sigma=(s, s)"
        )
    transform = {
        "type": "gaussian_blur",
        "kernel_size": sizes.pop(),
        "sigma": [low + 1e-6, low + 1e-6],
        "probability": sum(_pair(layer.factor)) / 2,
    }
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)


# -- RandAugment ------------------------------------------------------------------------------

RAND_AUGMENT_GEOMETRY = ("random_shear", "random_translation", "random_rotation")
"""The sub-layers of Keras' ``RandAugment`` that resample (their fill is the warp's)."""


@converts("RandAugment")
def _rand_augment(layer: Any, trace: Trace) -> None:
    """``keras_rand_augment``: Keras' eleven layers with its factors; each image draws its own
    ops (Keras draws them once per batch, with a note). Its geometric sub-layers' fill
    (Keras' default ``reflect``) becomes the warp's. Its colour ops join the one colour pass,
    so no pixel stage may come before it; its pixel ops read the whole image, so no geometric
    layer may follow. ``num_ops=0`` does nothing, as in Keras."""
    num_ops = int(layer.num_ops)
    if num_ops > 8:
        raise Unsupported(f"{label(layer)}: num_ops={num_ops}; daliaug applies at most 8")
    low, high = _shear_factor(layer)
    fills = {(sub.fill_mode, float(sub.fill_value)) for sub in _sub_layers(layer)}
    if len(fills) > 1:
        raise Unsupported(
            f"{label(layer)}: its {', '.join(RAND_AUGMENT_GEOMETRY)} fill differently "
            f"({sorted(fills)}); the one warp has one fill"
        )
    trace.colour(layer, [], layer.value_range)  # its colour ops: after no pixel stage
    if num_ops == 0:
        return
    ((fill_mode, fill_value),) = fills
    transform = {"type": "keras_rand_augment", "num_ops": num_ops, "factor": [low, high]}
    fill = {"fill_mode": fill_mode, "fill_value": fill_value}
    trace.geometric(layer, transform, interpolation=layer.interpolation, **fill)
    trace.pixels(layer, [], whole_image=True)
    trace.notes.append(
        f"{label(layer)}: each image draws its own ops and magnitudes from Keras' distribution "
        "(Keras draws the ops once per batch); its geometric ops run first in one warp, then "
        "its colour ops (one clip), then its pixel ops (Keras runs them in the order drawn); "
        "each image is equalized on its own histogram"
    )


def _sub_layers(layer: Any) -> list[Any]:
    return [getattr(layer, name) for name in RAND_AUGMENT_GEOMETRY]


def _shear_factor(layer: Any) -> tuple[float, float]:
    """A ``RandAugment`` or ``AugMix`` layer's ``factor``, below 1 (at 1 its shears can
    flatten the image)."""
    low, high = _pair(layer.factor)
    if high >= 1.0:
        raise Unsupported(
            f"{label(layer)}: factor={[low, high]}; at 1 both shears can flatten the image, "
            "which has no inverse warp: give a factor below 1"
        )
    return low, high


@converts("AugMix")
def _aug_mix(layer: Any, trace: Trace) -> None:
    """``keras_aug_mix``: a pixel stage of Keras' chains with its factor (the layers built as
    ``RandAugment``'s); each image draws its own chains and weights (Keras draws them once
    per batch, with a note). Its geometric sub-layers' fill (``reflect`` or a constant) is the
    chains' own. ``chain_depth=0`` mixes the image with itself: nothing, as in Keras."""
    chains, depth = int(layer.num_chains), int(layer.chain_depth)
    if not 1 <= chains <= MOST or depth > MOST:
        raise Unsupported(
            f"{label(layer)}: num_chains={chains}, chain_depth={depth}; daliaug mixes 1 to "
            f"{MOST} chains of at most {MOST} steps"
        )
    low, high = _shear_factor(layer)
    fills = {(sub.fill_mode, float(sub.fill_value)) for sub in _sub_layers(layer)}
    ((mode, value),) = fills if len(fills) == 1 else ((None, 0.0),)
    if mode not in ("reflect", "constant"):
        raise Unsupported(
            f"{label(layer)}: its {', '.join(RAND_AUGMENT_GEOMETRY)} fill by {sorted(fills)}; "
            "daliaug's chains fill by one reflect or constant"
        )
    if depth == 0:
        return
    transform = {
        "type": "keras_aug_mix",
        "num_chains": chains,
        "chain_depth": depth,
        "factor": [low, high],
        "alpha": float(layer.alpha),
        "all_ops": bool(layer.all_ops),
        "fill": "reflect" if mode == "reflect" else min(max(value, 0.0), 255.0),
        "interpolation": layer.interpolation,
    }
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)
    trace.notes.append(
        f"{label(layer)}: each image draws its own chains, magnitudes and weights from Keras' "
        "distribution (Keras draws them once per batch); in a chain, its geometric layers run "
        "first in one resampling, then its colour layers (one clip), then the others"
    )


REFUSED: dict[str, str] = {}
"""Why a Keras layer that has no converter is refused, where there is more to say."""


def refusal(layer: Any, name: str) -> str:
    """Why ``layer``, converted as Keras' class ``name``, which has no converter, is refused."""
    why = REFUSED.get(name, "daliaug has no equivalent of this layer")
    return f"{label(layer)}: {why}"


def _per_channel(layer: Any, what: str, value: Any, channels: int) -> np.ndarray:
    """A scalar or one value per channel, as a ``(channels,)`` array."""
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.size == 1:
        return np.full(channels, float(array[0]))
    if array.size != channels:
        raise Unsupported(
            f"{label(layer)}: its {what} has {array.size} values for {channels} channels; "
            "daliaug takes one value, or one per channel"
        )
    return array


@converts("Rescaling", deterministic=True)
def _rescaling(layer: Any, trace: Trace) -> None:
    scale = _per_channel(layer, "scale", layer.scale, trace.channels)
    if np.any(scale == 0):
        raise Unsupported(f"{label(layer)}: scale 0 maps every image to the offset")
    trace.values(scale, _per_channel(layer, "offset", layer.offset, trace.channels))


@converts("Normalization", deterministic=True)
def _normalization(layer: Any, trace: Trace) -> None:
    from keras import backend, ops

    mean, variance = layer.mean, getattr(layer, "variance", None)
    if mean is None:
        mean, variance = layer.input_mean, layer.input_variance
    if mean is None:
        raise Unsupported(
            f"{label(layer)}: no statistics yet; call its adapt() (or pass mean and variance)"
        )
    mean = np.asarray(ops.convert_to_numpy(mean), np.float64)
    variance = np.asarray(ops.convert_to_numpy(variance), np.float64)
    channel_axis = layer.axis in ((-1,), (3,), (1,), (-3,))
    if mean.size != 1 and not (channel_axis and mean.size == trace.channels):
        raise Unsupported(
            f"{label(layer)}: axis={layer.axis} keeps {mean.size} statistics; daliaug normalizes "
            "per channel (axis=-1) or over everything (axis=None)"
        )
    mean = _per_channel(layer, "mean", mean, trace.channels)
    variance = _per_channel(layer, "variance", variance, trace.channels)
    std = np.maximum(np.sqrt(variance), backend.epsilon())
    if layer.invert:
        trace.values(std, mean)
    else:
        trace.values(1.0 / std, -mean / std)


def supported() -> list[str]:
    """The Keras layer classes daliaug compiles."""
    return sorted(CONVERTERS)


@converts("RandomElasticTransform", moves_boxes=False)
def _random_elastic_transform(layer: Any, trace: Trace) -> None:
    """Keras applies it with probability ``p ~ U(factor)`` (a Bernoulli of the mean of
    ``factor``) and draws its ``scale`` once per batch (per image here); its field is drawn at
    low resolution (``elastic``), with a note. ``fill_mode`` ``constant`` (its ``fill_value``
    read through the value frame), ``nearest`` or ``reflect``."""
    modes = {"reflect": "reflect", "nearest": "nearest"}
    if layer.fill_mode not in (*modes, "constant"):
        raise Unsupported(
            f"{label(layer)}: fill_mode={layer.fill_mode!r}; daliaug's elastic fills by "
            "'constant', 'nearest' or 'reflect'"
        )
    fill: Fill = modes.get(layer.fill_mode) or _fill_value(layer, trace)
    transform = {
        "type": "elastic",
        "probability": sum(_pair(layer.factor)) / 2,
        "scale": _pair(layer.scale),
        "fill": fill,
        "interpolation": layer.interpolation,
    }
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)
    trace.notes.append(
        f"{label(layer)}: its displacement field is drawn on a periodic 24 x 24 grid of nodes "
        "(one every sigma pixels) and interpolated, with Keras' standard deviation and "
        "correlation, rather than blurred at full resolution; the scale is drawn per image"
    )


@converts("ContrastLimitedAdaptiveHistogramEqualization", at_inference=True, moves_boxes=False)
def _clahe(layer: Any, trace: Trace) -> None:
    """Keras equalizes at inference as well; the TensorFlow engine runs it (``clahe``)."""
    rows, cols = (int(v) for v in layer.tile_grid_size)
    transform = {
        "type": "clahe",
        "tile_grid_size": [rows, cols],
        "clip_limit": float(layer.clip_limit),
        "probability": 1.0,
    }
    try:  # Keras takes any numbers: each refused here names the layer
        clahe = Clahe.model_validate(transform)
    except ValidationError as e:
        raise ConfigError(format_errors(e.errors(), f"for {label(layer)}")) from None
    misfits = [] if trace.size is None else clahe.output_problems(trace.size, trace.channels)
    if misfits:
        raise ConfigError(f"{label(layer)}: {'; '.join(misfits)}")
    trace.pixels(layer, [transform], layer.value_range, whole_image=True)
