"""What the augmentation policies share (``rand_augment``, ``trivial_augment``,
``auto_augment``): torchvision's operations and magnitude tables, and how an operation chosen
per sample becomes a contribution to each stage of the plan.

Why a policy is one transform of three kinds: parameters are drawn on the host per sample, so
a policy draws, for each of its *slots* (the operations it applies one after the other), a
one-hot choice over its operations and each operation's signed magnitude. Every operation is
then a contribution to one of the fused stages, weighted by its flag (exact: products with 0
or 1 and sums with 0 round nothing):

* geometric ops (shear, translate, rotate): the slot's affine map is ``sum flag_k * A_k``
  plus the identity for the other ops, composed into the one fused warp (masks follow it);
* colour ops (brightness, color, contrast, invert): the slot's colour matrix, the same way,
  composed into the one colour pass (contrast weighs the image's grey mean, ``colour_mean``);
* pixel ops (sharpness, posterize, solarize, auto_contrast, equalize): a pixel stage,
  ``ops.choose([(flag, op), ...], images)`` per slot (the DALI engine runs an ``op`` only for
  the samples whose flag is 1, by DALI's conditional execution; the TF engine, sample by
  sample, runs the one chosen).

The order therefore differs from torchvision, which applies the slots' operations in turn and
rounds and clips to uint8 after each: here all geometric ops of all slots come first (in slot
order, one resampling), then all colour ops (in slot order, one clip at the end), then the
pixel ops (in slot order). Two ops of different kinds in one sample run in kind order, not
slot order. Other differences: bilinear sampling (torchvision's default is nearest),
translations by the table value in pixels without torchvision's ``int()`` truncation (DALI's
``auto_aug`` does not truncate either), shear about the canvas' top-left corner as torchvision.

A policy may also choose among other daliaug transforms (Keras' ``RandAugment`` layers): its
:meth:`PolicyTransform.values` then gives a :class:`Bound`, whose contribution is the
transform's own warp, colour map or pixel stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Literal

from daliaug.algebra import Affine, Canvas, ColourMatrix, Math, Random, Scalar, add, mul, sub
from daliaug.kernels import Kernels
from daliaug.transforms.base import (
    ColourTransform,
    Fill,
    GeometricTransform,
    Params,
    PixelTransform,
    radians,
)
from daliaug.transforms.saturation import LUMA

RAND_AUGMENT_OPS = (
    "identity",
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
    "rotate",
    "brightness",
    "color",
    "contrast",
    "sharpness",
    "posterize",
    "solarize",
    "auto_contrast",
    "equalize",
)
"""torchvision's RandAugment and TrivialAugmentWide operations (DALI's ``auto_aug`` has the
same fourteen)."""
OpName = Literal[(*RAND_AUGMENT_OPS, "invert")]  # type: ignore[valid-type]
"""An operation a policy may name (AutoAugment's ImageNet policy also inverts)."""

GEOMETRIC_OPS = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate", "shear", "translate")
COLOUR_OPS = ("brightness", "color", "contrast", "invert")
PIXEL_OPS = ("sharpness", "posterize", "solarize", "auto_contrast", "equalize", "solarization")
"""The stage each operation contributes to (``shear``, ``translate`` and ``solarization`` are
Keras' own: see :mod:`daliaug.transforms.keras_rand_augment`)."""
SIGNED_OPS = (*GEOMETRIC_OPS, "brightness", "color", "contrast", "sharpness")
"""Ops whose magnitude takes a random sign (each sign equally likely)."""
UNMAGNIFIED_OPS = ("identity", "auto_contrast", "equalize", "invert")


def magnitudes(op: str, bins: int, wide: bool = False) -> list[float]:
    """torchvision's magnitude table of ``op`` for ``bins`` bins (unsigned), with
    TrivialAugmentWide's wider ranges when ``wide``. Translations are fractions of the side
    (150/331 at the top bin) or, when ``wide``, pixels (32 at the top bin); shears are the
    shear factor (``tan`` of the angle), rotations degrees, enhancements the offset from a
    factor of 1, posterize the bits kept, solarize the threshold."""
    top = {
        "shear_x": 0.99 if wide else 0.3,
        "shear_y": 0.99 if wide else 0.3,
        "translate_x": 32.0 if wide else 150.0 / 331.0,
        "translate_y": 32.0 if wide else 150.0 / 331.0,
        "rotate": 135.0 if wide else 30.0,
        "brightness": 0.99 if wide else 0.9,
        "color": 0.99 if wide else 0.9,
        "contrast": 0.99 if wide else 0.9,
        "sharpness": 0.99 if wide else 0.9,
    }
    last = max(bins - 1, 1)
    if op in top:
        return [top[op] * b / last for b in range(bins)]
    if op == "posterize":  # torch's round: half to even, like Python's
        return [8.0 - round(b / (last / (6 if wide else 4))) for b in range(bins)]
    if op == "solarize":
        return [255.0 - 255.0 * b / last for b in range(bins)]
    return [0.0] * bins


@dataclass(frozen=True)
class Bound:
    """An operation's values given as a daliaug transform and its parameters for one sample:
    its contribution is that transform's own warp, colour map or pixel stage (a policy whose
    operations are other transforms passes these as values, see :meth:`PolicyTransform.values`)."""

    transform: Any
    params: Params


def one_hot(rng: Random, count: int) -> list[Scalar]:
    """``count`` flags, exactly one of them 1, each equally likely: flag ``k`` is 1 with
    probability ``1 / (count - k)`` when no earlier flag is."""
    flags: list[Scalar] = []
    left: Scalar = 1.0
    for k in range(count):
        flag = mul(left, rng.bernoulli(1.0 / (count - k)))
        flags.append(flag)
        left = sub(left, flag)
    return flags


def signed(rng: Random, op: str, value: Scalar) -> Scalar:
    """``value`` with a random sign for the signed ops."""
    return mul(value, rng.choice([-1.0, 1.0])) if op in SIGNED_OPS else value


def _weighted(terms: Sequence[tuple[Scalar, Sequence[Scalar]]], rest: Sequence[Scalar]) -> list:
    """``sum flag * entries`` over ``terms`` plus ``(1 - sum flag) * rest``, entrywise."""
    left: Scalar = 1.0
    total: list[Scalar] = [0.0] * len(rest)
    for flag, entries in terms:
        total = [add(t, mul(flag, e)) for t, e in zip(total, entries, strict=True)]
        left = sub(left, flag)
    return [add(t, mul(left, r)) for t, r in zip(total, rest, strict=True)]


class PolicyTransform(GeometricTransform, ColourTransform, PixelTransform):
    """A policy: ``slots`` operations per sample, each chosen from :attr:`operations` with a
    magnitude (see the module docstring). Subclasses define the draws (:meth:`draw_slots`)."""

    fill: Fill = 0.0

    axis_aligned: ClassVar[bool] = False
    needs_rgb: ClassVar[bool] = True
    uses_mean: ClassVar[bool] = True
    wide: ClassVar[bool] = False
    """Translations in pixels (TrivialAugmentWide) rather than fractions of the side."""

    @property
    def operations(self) -> tuple[str, ...]:
        raise NotImplementedError

    @property
    def slots(self) -> int:
        raise NotImplementedError

    @property
    def params(self) -> tuple[str, ...]:  # type: ignore[override]
        names: list[str] = []
        for j in range(self.slots):
            for op in self.operations:
                names.append(f"{j}_{op}")
                if op not in UNMAGNIFIED_OPS:
                    names.append(f"{j}_{op}_mag")
        return tuple(names)

    def draw_slots(self, rng: Random) -> list[dict[str, tuple[Scalar, Scalar]]]:
        """Per slot, each operation's ``(flag, signed magnitude)``; at most one flag is 1."""
        raise NotImplementedError

    def draw(self, rng: Random) -> Params:
        drawn: Params = {}
        for j, slot in enumerate(self.draw_slots(rng)):
            for op in self.operations:
                flag, value = slot[op]
                drawn[f"{j}_{op}"] = flag
                if op not in UNMAGNIFIED_OPS:
                    drawn[f"{j}_{op}_mag"] = value
        return drawn

    def values(self, p: Params, j: int, op: str) -> Any:
        """The values ``op`` runs with in slot ``j``: its signed magnitude (a policy whose
        operations are other transforms gives a :class:`Bound`)."""
        return p.get(f"{j}_{op}_mag", 0.0)

    def _chosen(self, p: Params, j: int, kinds: tuple[str, ...]) -> list[tuple[str, Any, Any]]:
        return [
            (op, p[f"{j}_{op}"], self.values(p, j, op)) for op in self.operations if op in kinds
        ]

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        forward = Affine()
        for j in range(self.slots):
            terms = [
                (flag, _op_affine(op, v, canvas, m, self.wide))
                for op, flag, v in self._chosen(p, j, GEOMETRIC_OPS)
            ]
            forward = Affine(*_weighted(terms, Affine())).then_after(forward)
        return forward, canvas

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        total = ColourMatrix.identity(channels)
        identity = _entries(ColourMatrix.identity(channels))
        for j in range(self.slots):
            terms = [
                (flag, _entries(_op_colour(op, v, channels, m)))
                for op, flag, v in self._chosen(p, j, COLOUR_OPS)
            ]
            step = _from_entries(_weighted(terms, identity), channels)
            total = step.then_after(total)
        return total

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        for j in range(self.slots):
            options = [
                (flag, partial(_op_pixels, op, v, ops=ops))
                for op, flag, v in self._chosen(p, j, PIXEL_OPS)
            ]
            images = ops.choose(options, images)
        return images


def _op_affine(op: str, v: Scalar | Bound, canvas: Canvas, m: Math, wide: bool) -> Affine:
    """The source-to-destination map of a geometric op with signed magnitude ``v``."""
    if isinstance(v, Bound):
        return v.transform.warp(v.params, canvas, m)[0]
    if op == "shear_x":  # torchvision: output x samples input x + v*y (about the origin)
        return Affine(b=mul(v, -1.0))
    if op == "shear_y":
        return Affine(d=mul(v, -1.0))
    if op == "translate_x":
        return Affine.translate(v if wide else mul(v, canvas.w), 0.0)
    if op == "translate_y":
        return Affine.translate(0.0, v if wide else mul(v, canvas.h))
    t = radians(v)  # rotate: counter-clockwise about the centre, as the rotation transform
    cos, sin = m.cos(t), m.sin(t)
    return Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), (cos, sin, mul(sin, -1.0), cos))


def _op_colour(op: str, v: Scalar | Bound, channels: int, m: Math) -> ColourMatrix:
    """The colour map of a colour op with signed magnitude ``v`` (factor ``1 + v``):
    torchvision's ``adjust_brightness``, ``adjust_saturation`` (blend with the luma),
    ``adjust_contrast`` (blend with the luma's mean over the image) and ``invert``."""
    if isinstance(v, Bound):
        return v.transform.colour(v.params, channels, m)
    factor = add(1.0, v)
    rest = sub(1.0, factor)
    if op == "brightness":
        return ColourMatrix.diagonal(factor, channels)
    if op == "invert":
        return ColourMatrix.diagonal(-1.0, channels, offset=255.0)
    grey = tuple(tuple(mul(rest, w) for w in LUMA) for _ in range(3))
    own = ColourMatrix.diagonal(factor, channels)
    if op == "color":
        return ColourMatrix.linear(
            tuple(
                tuple(add(a, b) for a, b in zip(r, g, strict=True))
                for r, g in zip(own.matrix, grey, strict=True)
            )
        )
    return ColourMatrix(own.rows, grey)  # contrast


def _entries(c: ColourMatrix) -> list[Scalar]:
    return c.flat() + c.flat_means()


def _from_entries(entries: Sequence[Scalar], channels: int) -> ColourMatrix:
    width = channels + 1
    rows = tuple(tuple(entries[i * width : (i + 1) * width]) for i in range(channels))
    flat = entries[channels * width :]
    means = tuple(tuple(flat[i * channels : (i + 1) * channels]) for i in range(channels))
    return ColourMatrix(rows, means)


def _op_pixels(op: str, v: Any, images: Any, ops: Kernels) -> Any:
    """A pixel op with magnitude ``v``: PIL's sharpness (factor ``1 + v``), posterize (``v``
    bits kept), solarize (threshold ``v``), autocontrast, equalize."""
    if isinstance(v, Bound):
        return v.transform.pixels(images, v.params, ops)
    if op == "sharpness":
        return ops.sharpness(images, 1.0 + v)
    if op == "posterize":
        return ops.posterize(images, v)
    if op == "solarize":
        return ops.solarize(images, v)
    if op == "auto_contrast":
        return ops.auto_contrast(images)
    return ops.equalize(images)
