"""The table ``from_torchvision`` reads: one small converter per torchvision v2 transform class,
each writing what its transform does into a :class:`Walk` in daliaug's terms.

A converter reads the transform's own attributes (the ranges torchvision parsed, its
``interpolation``, ``fill``...) and adds daliaug transforms with torchvision's semantics, or
changes the value frame (``ToDtype``, ``Normalize``). What a transform does that daliaug cannot
run exactly raises :class:`Unsupported` naming it and why; where daliaug's draw differs in
distribution only, the walk keeps a note (a warning). A class with no entry is refused as a
whole. Adding a class is one function decorated with :func:`converts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daliaug.errors import ConfigError
from daliaug.fields import warp_interpolation

CROPS = ("random_resized_crop", "center_crop", "random_crop")
"""The daliaug transforms that cut a window out of the canvas."""
PIPELINE_RANGE = (0.0, 255.0)
"""The values daliaug's pipeline computes on: the decoded images' 0..255."""


class Unsupported(ConfigError):
    """A transform (or one of its arguments) daliaug cannot run with torchvision's semantics."""


def label(transform: Any) -> str:
    """How messages name a transform: its class (``RandomResizedCrop``)."""
    return type(transform).__name__


@dataclass
class Walk:
    """What the transforms so far do, in the pipeline's terms.

    ``size``: ``[height, width]`` after them (``None``: each image keeps its own size).
    ``scale`` and ``offset`` (per channel) are the value frame: a transform sees ``scale * v +
    offset`` where the pipeline holds ``v`` (0..255); ``floating`` once ``ToDtype`` made the
    images floats (torchvision's colour ops then work on 0..1)."""

    channels: int = 3
    size: tuple[int, int] | None = None
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    floating: bool = False
    transforms: list[dict[str, Any]] = field(default_factory=list)
    interpolations: dict[str, str] = field(default_factory=dict)
    """Each resampling transform's interpolation, by :func:`label` (the one warp has one)."""
    fills: dict[str, float] = field(default_factory=dict)
    """Each revealing transform's fill on the 0..255 values, by :func:`label` (the one warp
    has one)."""
    stage: str | None = None
    """The first transform that became a pixel stage: the pipeline runs those after its warp
    and colour pass, so no geometry or colour may follow."""
    staged: list[dict[str, Any]] = field(default_factory=list)
    """The pixel stages' entries so far."""
    cropped: str | None = None
    """The first transform that cut a window: geometry after it that reveals area shows the
    image around the window (one fused warp), where torchvision fills."""
    notes: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    """Config fields the transforms set (``min_area``, ``label_mode``)."""
    batched: str | None = None
    """The first transform that became a batch stage: only the value frame may follow."""

    @property
    def identity_frame(self) -> bool:
        return bool(np.all(self.scale == 1.0) and np.all(self.offset == 0.0))

    def to_pipeline(self, transform: Any, what: str, value: Any) -> float:
        """A value as ``transform`` sees it (one number, or one per channel that are equal
        through the frame), on the pipeline's 0..255 scale."""
        values = np.broadcast_to(np.asarray(value, np.float64), (self.channels,))
        pipeline = (values - self.offset) / self.scale
        if not np.allclose(pipeline, pipeline[0], atol=1e-4):
            raise Unsupported(
                f"{label(transform)}: its {what} means {np.round(pipeline, 3).tolist()} per "
                "channel on the pipeline's 0..255 values; daliaug takes one value here"
            )
        if not PIPELINE_RANGE[0] - 1e-3 <= pipeline[0] <= PIPELINE_RANGE[1] + 1e-3:
            raise Unsupported(
                f"{label(transform)}: its {what} {value!r} is {pipeline[0]:g} on the "
                "pipeline's 0..255 values; daliaug fills within them"
            )
        return float(np.clip(pipeline[0], *PIPELINE_RANGE))

    def values(self, scale: np.ndarray, offset: np.ndarray) -> None:
        """A transform maps each value ``x`` it sees to ``scale * x + offset`` (per channel)."""
        self.scale = self.scale * scale
        self.offset = self.offset * scale + offset

    def in_range(self, transform: Any) -> None:
        """:class:`Unsupported` unless the images reach ``transform`` in the range torchvision's
        colour ops clip to: 0..255 as uint8, 0..1 as floats."""
        bound = 1.0 / 255.0 if self.floating else 1.0
        if not (np.allclose(self.scale, bound) and np.all(self.offset == 0.0)):
            frame = f"{np.round(self.scale, 6).tolist()} * v + {np.round(self.offset, 6).tolist()}"
            raise Unsupported(
                f"{label(transform)}: the images reach it as {frame} of the 0..255 pixels (the "
                "ToDtype or Normalize before it), where torchvision clips to "
                f"{'0..1' if self.floating else '0..255'}; put it before them"
            )

    def geometric(self, transform: Any, entry: dict[str, Any], interpolation: Any = None) -> None:
        """Add a geometric transform (``interpolation``: torchvision's mode, where it
        resamples)."""
        self.before_stages(transform)
        if interpolation is not None:
            mode = str(getattr(interpolation, "value", interpolation))
            self.interpolations[label(transform)] = warp_interpolation(
                mode, label(transform), Unsupported
            )
            if len(set(self.interpolations.values())) > 1:
                listed = ", ".join(f"{k}: {v!r}" for k, v in self.interpolations.items())
                raise Unsupported(
                    f"{label(transform)}: the transforms fuse into one warp with one "
                    f"interpolation, but they differ ({listed})"
                )
        self.transforms.append(entry)
        if entry["type"] in CROPS:
            self.cropped = self.cropped or label(transform)
        elif "fill" in entry and self.cropped is not None:
            self.notes.append(
                f"{label(transform)}: where it reveals area outside the window {self.cropped} "
                "cut, daliaug's one warp shows the image around the window, where torchvision "
                "fills"
            )

    def fill(self, transform: Any, value: float | str) -> float | str:
        """Record ``transform``'s fill of the one warp (torchvision's crops pad with 0)."""
        self.fills[label(transform)] = value
        if len(set(self.fills.values())) > 1:
            listed = ", ".join(f"{k}: {v}" for k, v in self.fills.items())
            raise Unsupported(
                f"{label(transform)}: the transforms fuse into one warp with one fill, but they "
                f"fill differently on the 0..255 values ({listed})"
            )
        return value

    def colour(self, transform: Any, entries: list[dict[str, Any]]) -> None:
        self.before_stages(transform)
        self.in_range(transform)
        self.transforms.extend(entries)

    def pixels(self, transform: Any, entry: dict[str, Any], *, in_range: bool = True) -> None:
        """Add a pixel stage (run after the warp and the colour pass; nothing but pixel stages
        may follow it)."""
        self.after_batch(transform)
        if in_range:
            self.in_range(transform)
        self.transforms.append(entry)
        self.staged.append(entry)
        self.stage = self.stage or label(transform)

    def before_stages(self, transform: Any) -> None:
        """:class:`Unsupported` if a pixel stage came before ``transform`` (a geometric or colour
        one), unless every stage so far is a ``ColorJitter`` without hue: those join the colour
        pass then (one clip at the end, a note)."""
        self.after_batch(transform)
        if self.stage is None:
            return
        if not all(e["type"] == "color_jitter" and "hue" not in e for e in self.staged):
            raise Unsupported(
                f"{label(transform)}: it comes after {self.stage}, which daliaug runs as a "
                "pixel stage after the warp and the colour pass; put it before that transform"
            )
        for entry in self.staged:
            entry["clip"] = "once"
        self.stage, self.staged = None, []
        self.notes.append(
            f"ColorJitter: {label(transform)} follows it, so daliaug joins its brightness, "
            "contrast and saturation to the one colour pass with one clip at the end, where "
            "torchvision clips to the value range after each factor: pixels differ where a "
            "factor takes a value out of range that a later one brings back (without the clips "
            "the three commute, so the order does not matter)"
        )

    def after_batch(self, transform: Any) -> None:
        if self.batched is not None:
            raise Unsupported(
                f"{label(transform)}: it comes after {self.batched}, a batch stage daliaug runs "
                "last; put it before that transform"
            )

    def batch(self, transform: Any, entry: dict[str, Any]) -> None:
        """Add a batch stage (the last stages; soft labels: ``label_mode`` categorical)."""
        self.transforms.append(entry)
        self.batched = self.batched or label(transform)
        self.fields["label_mode"] = "categorical"


Converter = Callable[[Any, Walk], None]
CONVERTERS: dict[str, Converter] = {}
"""torchvision v2 class name -> its converter."""


def converts(name: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of torchvision's class ``name``."""

    def register(convert: Converter) -> Converter:
        CONVERTERS[name] = convert
        return convert

    return register


REFUSED: dict[str, str] = {
    "ElasticTransform": "torchvision blurs a full-resolution random field; daliaug's elastic "
    "draws a coarse grid (Keras')",
    "Lambda": "it runs arbitrary Python on each image",
}
"""Why a torchvision class with no converter is refused, where there is more to say."""


def supported() -> list[str]:
    """The torchvision v2 classes daliaug compiles."""
    return sorted(CONVERTERS)


def _pair(values: Any) -> list[float]:
    return [float(v) for v in values]


def _size(transform: Any) -> tuple[int, int]:
    height, width = (int(v) for v in transform.size)
    return height, width


def _fill(transform: Any, walk: Walk) -> float:
    """A policy's ``fill`` (``None``: 0) on the pipeline's values; per-type fills refused."""
    fill = getattr(transform, "fill", None)
    if isinstance(fill, dict):
        fills = set(map(str, fill.values()))
        if len(fills) > 1:
            raise Unsupported(f"{label(transform)}: fill={fill!r} differs by input type")
        fill = next(iter(fill.values()), None)
    return walk.to_pipeline(transform, "fill", 0.0 if fill is None else fill)


@converts("Identity")
@converts("ToImage")
@converts("PILToTensor")
@converts("ToPureTensor")
def _as_is(transform: Any, walk: Walk) -> None:
    """The decoded image as a uint8 tensor: what daliaug's pipeline holds already."""


@converts("ToDtype")
def _to_dtype(transform: Any, walk: Walk) -> None:
    """``float32`` (with ``scale=True``: the values over 255); the output is float32."""
    dtype = transform.dtype
    if isinstance(dtype, dict):  # by tv_tensors type: the images' own, else "others"
        by_name = {getattr(k, "__name__", k): v for k, v in dtype.items()}
        dtype = by_name.get("Image", by_name.get("others"))
    if str(dtype) != "torch.float32":
        raise Unsupported(f"{label(transform)}: dtype={dtype}; daliaug hands float32 (or uint8)")
    if walk.floating:  # torchvision hands float32 images back as they are
        return
    walk.floating = True
    if transform.scale:
        walk.values(np.full(walk.channels, 1.0 / 255.0), np.zeros(walk.channels))


@converts("Normalize")
def _normalize(transform: Any, walk: Walk) -> None:
    """``(x - mean) / std`` per channel, on float images (torchvision refuses uint8)."""
    if not walk.floating:
        raise Unsupported(
            f"{label(transform)}: torchvision normalizes float images only; put ToDtype("
            "torch.float32, scale=True) before it"
        )
    mean = np.broadcast_to(np.asarray(transform.mean, np.float64), (walk.channels,))
    std = np.broadcast_to(np.asarray(transform.std, np.float64), (walk.channels,))
    if np.any(std <= 0):
        raise Unsupported(f"{label(transform)}: std={list(transform.std)} is not above 0")
    walk.values(1.0 / std, -mean / std)


@converts("RandomResizedCrop")
def _random_resized_crop(transform: Any, walk: Walk) -> None:
    """``random_resized_crop`` with torchvision's ``scale`` and ``ratio``; daliaug draws once
    and cuts the window to the image where torchvision redraws up to ten times (a note)."""
    height, width = _size(transform)
    entry = {
        "type": "random_resized_crop",
        "scale": _pair(transform.scale),
        "ratio": _pair(transform.ratio),
        "size": [height, width],
    }
    walk.geometric(transform, entry, transform.interpolation)
    walk.size = (height, width)
    walk.notes.append(
        f"{label(transform)}: daliaug draws the window once and cuts it to the image (torchvision "
        "redraws up to 10 times, then takes a centred crop): windows of extreme ratios differ"
    )
    _antialias(transform, walk)


def _antialias(transform: Any, walk: Walk) -> None:
    if getattr(transform, "antialias", False):
        walk.notes.append(
            f"{label(transform)}: antialias=True, but daliaug resamples without antialiasing: "
            "where it shrinks, pixels differ (give antialias=False for torchvision's same "
            "pixels)"
        )


@converts("RandomHorizontalFlip")
def _horizontal_flip(transform: Any, walk: Walk) -> None:
    walk.geometric(transform, {"type": "flip", "horizontal": float(transform.p), "vertical": 0.0})


@converts("RandomVerticalFlip")
def _vertical_flip(transform: Any, walk: Walk) -> None:
    walk.geometric(transform, {"type": "flip", "horizontal": 0.0, "vertical": float(transform.p)})


@converts("Resize")
def _resize(transform: Any, walk: Walk) -> None:
    """One size (the shorter side, each image's own size after it) or ``[height, width]``."""
    if transform.max_size is not None or transform.size is None:
        raise Unsupported(f"{label(transform)}: max_size={transform.max_size} is not converted")
    size = [int(v) for v in transform.size]
    if len(size) == 1:
        walk.geometric(
            transform, {"type": "resize", "shorter_side": size[0]}, transform.interpolation
        )
        walk.size = None
        walk.notes.append(
            f"{label(transform)}: daliaug rounds the longer side where torchvision truncates it: "
            "one pixel longer for some image sizes"
        )
    else:
        walk.geometric(transform, {"type": "resize", "size": size}, transform.interpolation)
        walk.size = (size[0], size[1])
    _antialias(transform, walk)


@converts("CenterCrop")
def _center_crop(transform: Any, walk: Walk) -> None:
    """A window centred as torchvision's (padded with 0 where the image is smaller)."""
    height, width = _size(transform)
    walk.geometric(transform, {"type": "center_crop", "size": [height, width]})
    walk.fill(transform, 0.0)
    walk.size = (height, width)
    walk.notes.append(
        f"{label(transform)}: where an image and the crop differ by an odd number of pixels, "
        "torchvision rounds the offset half to even and daliaug half up: one pixel apart for "
        "some sizes"
    )


@converts("ClampBoundingBoxes")
def _clamp_boxes(transform: Any, walk: Walk) -> None:
    """Boxes clipped to the canvas: daliaug clips them after every transform already."""


@converts("SanitizeBoundingBoxes")
def _sanitize_boxes(transform: Any, walk: Walk) -> None:
    """``min_area``: daliaug drops a box (with its label) whose visible area is below it; the
    sides are not checked one by one (a note where ``min_size`` would drop more)."""
    getter = getattr(transform, "labels_getter", "default")
    if getter != "default":
        raise Unsupported(
            f"{label(transform)}: labels_getter={getter!r}; daliaug's labels are the boxes' own"
        )
    min_size, min_area = float(transform.min_size), float(getattr(transform, "min_area", 1.0))
    walk.fields["min_area"] = max(walk.fields.get("min_area", 0.0), min_area, min_size**2)
    walk.notes.append(
        f"{label(transform)}: daliaug keeps a box of at least {walk.fields['min_area']:g} pixels "
        f"of area (min_size={min_size:g} squared, or min_area) and checks no side alone: a box "
        f"thinner than {min_size:g} that torchvision drops stays where its area is enough"
    )


BATCH_NOTE = (
    "torchvision draws one {what} per call on a batch and pairs each image with the one before "
    "it (a roll); daliaug draws them per image, with a random partner from the batch: the same "
    "distribution per image, not the same batch"
)


def _labels_getter(transform: Any) -> None:
    """:class:`Unsupported` unless the labels are found as torchvision finds them by default
    (MixUp and CutMix keep only the parsed function)."""
    parsed = getattr(getattr(transform, "_labels_getter", None), "__name__", "")
    if parsed != "_find_labels_default_heuristic":
        raise Unsupported(
            f"{label(transform)}: a labels_getter of its own; daliaug mixes the batch's labels"
        )


@converts("MixUp")
def _mixup(transform: Any, walk: Walk) -> None:
    """``mixup`` (categorical labels, as torchvision's one-hot); its draw per image (a note)."""
    _labels_getter(transform)
    walk.batch(transform, {"type": "mixup", "alpha": float(transform.alpha)})
    walk.notes.append(f"{label(transform)}: {BATCH_NOTE.format(what='lam')}")


@converts("CutMix")
def _cutmix(transform: Any, walk: Walk) -> None:
    """``cutmix``: the label weighed by the box actually pasted, as torchvision's; its draw
    per image and its box sides rounded (a note)."""
    _labels_getter(transform)
    walk.batch(transform, {"type": "cutmix", "alpha": float(transform.alpha)})
    walk.notes.append(
        f"{label(transform)}: {BATCH_NOTE.format(what='lam and box')}; its box is "
        "round(side·√(1 − lam)) pixels, torchvision's 2·int(side·√(1 − lam)/2)"
    )


PADDING_MODES = {"edge": "nearest", "symmetric": "reflect"}
"""torchvision's padding modes daliaug's warp has (``constant``: the fill); its ``reflect``
(the edge pixel not repeated) has none."""


@converts("RandomCrop")
def _random_crop(transform: Any, walk: Walk) -> None:
    """``random_crop``: torchvision's padding, ``pad_if_needed`` and corner draw."""
    height, width = _size(transform)
    entry: dict[str, Any] = {"type": "random_crop", "size": [height, width]}
    if transform.padding is not None or transform.pad_if_needed:
        mode = str(transform.padding_mode)
        if mode not in ("constant", *PADDING_MODES):
            raise Unsupported(
                f"{label(transform)}: padding_mode={mode!r} mirrors without the edge pixel; "
                "daliaug pads with constant, edge or symmetric"
            )
        fill = PADDING_MODES.get(mode) or _fill(transform, walk)
        entry.update(
            padding=[int(v) for v in transform.padding or (0, 0, 0, 0)],
            pad_if_needed=bool(transform.pad_if_needed),
            fill=walk.fill(transform, fill),
        )
    walk.geometric(transform, entry)
    walk.size = (height, width)


def _no_center(transform: Any) -> None:
    if getattr(transform, "center", None) is not None:
        raise Unsupported(
            f"{label(transform)}: center={list(transform.center)}; daliaug turns about the "
            "canvas centre"
        )


@converts("RandomAffine")
def _random_affine(transform: Any, walk: Walk) -> None:
    """``random_affine``: torchvision's draws (whole-pixel translations) and matrix."""
    _no_center(transform)
    shear = [float(v) for v in transform.shear or (0.0, 0.0)]
    entry = {
        "type": "random_affine",
        "degrees": _pair(transform.degrees),
        "translate": _pair(transform.translate or (0.0, 0.0)),
        "scale": _pair(transform.scale or (1.0, 1.0)),
        "shear_x": shear[:2],
        "shear_y": shear[2:] or [0.0, 0.0],
        "fill": walk.fill(transform, _fill(transform, walk)),
    }
    walk.geometric(transform, entry, transform.interpolation)


@converts("RandomPerspective")
def _random_perspective(transform: Any, walk: Walk) -> None:
    """``perspective``: torchvision's corner draw, a bilinear resampling after the warp (a
    pixel stage)."""
    mode = str(getattr(transform.interpolation, "value", transform.interpolation))
    if mode != "bilinear":
        raise Unsupported(
            f"{label(transform)}: interpolation={mode!r}; daliaug's perspective is bilinear"
        )
    if transform.distortion_scale >= 1.0:
        raise Unsupported(
            f"{label(transform)}: distortion_scale={transform.distortion_scale}; daliaug's "
            "corners stay apart (below 1)"
        )
    entry = {
        "type": "perspective",
        "distortion_scale": float(transform.distortion_scale),
        "probability": float(transform.p),
        "fill": _fill(transform, walk),
        "half_pixel": True,
    }
    walk.pixels(transform, entry, in_range=False)
    walk.notes.append(
        f"{label(transform)}: along the edges of the warped image (one pixel), torchvision "
        "weighs the image's bilinear share twice (m·Σw·v + (1 − m)·fill) where daliaug blends "
        "(Σw·v + (1 − m)·fill): up to 64 levels there"
    )


@converts("ColorJitter")
def _color_jitter(transform: Any, walk: Walk) -> None:
    """``color_jitter``: torchvision's four factors, its random order per image and its clip
    after each, as a pixel stage (joined to the colour pass, one clip, where geometry or colour
    follows it and it has no hue: :meth:`Walk.before_stages`); ``RandomApply`` of it sets its
    ``probability``."""
    entry: dict[str, Any] = {"type": "color_jitter", "probability": 1.0}
    for name in ("brightness", "contrast", "saturation", "hue"):
        value = getattr(transform, name)
        if value is not None:
            entry[name] = _pair(value)
    if len(entry) == 2:  # every factor is the identity: torchvision does nothing
        return
    walk.pixels(transform, entry)


POLICY_NOTE = (
    "daliaug runs all its geometric ops first (one warp, the pipeline's interpolation: "
    "torchvision's default is nearest), then its colour ops (one clip), then its pixel ops, and "
    "translates without torchvision's int() truncation (see daliaug.transforms.policy)"
)


def _policy(transform: Any, walk: Walk, entry: dict[str, Any]) -> None:
    """A policy adds to the warp, the colour pass and a pixel stage: it must come before the
    pixel stages and find the images in torchvision's range (``num_ops=0`` does nothing)."""
    walk.before_stages(transform)
    if entry.get("num_ops") == 0:
        return
    fill = _fill(transform, walk)
    if entry["type"] != "aug_mix":  # its chains resample on their own
        walk.fill(transform, fill)
    walk.pixels(transform, {**entry, "fill": fill})
    walk.notes.append(f"{label(transform)}: {POLICY_NOTE}")


@converts("RandAugment")
def _rand_augment(transform: Any, walk: Walk) -> None:
    """``rand_augment``: torchvision's fourteen ops and magnitude tables."""
    entry = {
        "type": "rand_augment",
        "num_ops": int(transform.num_ops),
        "magnitude": int(transform.magnitude),
        "num_magnitude_bins": int(transform.num_magnitude_bins),
    }
    _policy(transform, walk, entry)


@converts("TrivialAugmentWide")
def _trivial_augment(transform: Any, walk: Walk) -> None:
    entry = {"type": "trivial_augment", "num_magnitude_bins": int(transform.num_magnitude_bins)}
    _policy(transform, walk, entry)


@converts("AutoAugment")
def _auto_augment(transform: Any, walk: Walk) -> None:
    policy = str(getattr(transform.policy, "value", transform.policy))
    if policy != "imagenet":
        raise Unsupported(
            f"{label(transform)}: policy={policy!r}; daliaug has torchvision's 'imagenet' policy"
        )
    _policy(transform, walk, {"type": "auto_augment", "policy": "imagenet"})


@converts("AugMix")
def _aug_mix(transform: Any, walk: Walk) -> None:
    entry = {
        "type": "aug_mix",
        "severity": int(transform.severity),
        "mixture_width": int(transform.mixture_width),
        "chain_depth": int(transform.chain_depth),
        "alpha": float(transform.alpha),
        "all_ops": bool(transform.all_ops),
    }
    _policy(transform, walk, entry)


@converts("RandomErasing")
def _random_erasing(transform: Any, walk: Walk) -> None:
    """``random_erasing`` with torchvision's ``scale`` and ``ratio``; its value is read through
    the value frame (0 after ``Normalize`` is each channel's mean); ``value='random'`` (normal
    noise per pixel) is refused."""
    value = transform.value
    if isinstance(value, str) or value is None:  # torchvision keeps 'random' as None
        raise Unsupported(
            f"{label(transform)}: value='random' fills with normal noise per pixel; daliaug "
            "fills with a number or one per channel"
        )
    values = np.broadcast_to(np.asarray(value, np.float64), (walk.channels,))
    levels = (values - walk.offset) / walk.scale
    if np.any(levels < PIPELINE_RANGE[0] - 1e-3) or np.any(levels > PIPELINE_RANGE[1] + 1e-3):
        raise Unsupported(
            f"{label(transform)}: value={list(value)} is {np.round(levels, 3).tolist()} on the "
            "pipeline's 0..255 values; daliaug fills within them"
        )
    entry = {
        "type": "random_erasing",
        "probability": float(transform.p),
        "scale": _pair(transform.scale),
        "ratio": _pair(transform.ratio),
        "value": [float(v) for v in np.clip(levels, *PIPELINE_RANGE)],
    }
    walk.pixels(transform, entry, in_range=False)
    walk.notes.append(
        f"{label(transform)}: daliaug draws the box once and cuts it to the image (torchvision "
        "redraws up to 10 times, then erases nothing)"
    )
