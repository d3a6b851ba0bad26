"""torchvision's ``ColorJitter``: brightness, contrast, saturation and hue, in a random order
per image, clipped after each.

Why one transform rather than four: torchvision draws a permutation of the four per call and
clips to the value range after each, so the result depends on the order (hue, in HSV, is not
affine: it commutes with neither contrast nor saturation). daliaug draws the permutation per
sample as one-hot flags over the orders of the given factors (as the policies draw their ops)
and, with ``clip: each``, runs the slots one after the other as a pixel stage: per slot one
clipped colour map (``ops.recolour``; made on the host from the flags, the identity in a hue
slot), then the HSV turn where the slot turns hue (``ops.keras_hue``, which is torchvision's
``adjust_hue``: ``H' = (H + f) mod 1``).

With ``clip: once`` (no hue) the three join the one colour pass instead, so geometry and
colour may follow it: without the clips between them they commute (brightness scales, and
saturation keeps each pixel's grey, hence the mean contrast blends with), so the order does
not matter and only the one clip at the end differs from torchvision's clip after each.
"""

from __future__ import annotations

from itertools import permutations
from typing import Annotated, Any, ClassVar, Literal

from pydantic import model_validator

from daliaug.algebra import ColourMatrix, Math, Random, Scalar, add, mul, sub
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import (
    ColourTransform,
    FactorRange,
    Params,
    PixelTransform,
    Probability,
    SymmetricRange,
)
from daliaug.transforms.policy import one_hot

GREY = (0.2989, 0.587, 0.114)
"""torchvision's ``rgb_to_grayscale`` weights (its contrast and saturation blend with them)."""
FACTORS = ("brightness", "contrast", "saturation", "hue")
"""torchvision's order of the four (its ``fn_idx`` 0..3)."""
ENTRIES = 21
"""A 3-channel colour map's entries for ``ops.recolour``: ``[M | t]`` (12) and ``N`` (9)."""

HueRange = Annotated[SymmetricRange, bounded(-0.5, 0.5, "hue factors (turns)")]
"""A hue range in turns within [-0.5, 0.5] (torchvision's bound); one number ``h``:
``[-h, h]``."""


class ColorJitter(ColourTransform, PixelTransform):
    """Per image: ``b ~ U(brightness)``, ``c ~ U(contrast)``, ``s ~ U(saturation)``,
    ``h ~ U(hue)`` (each only if given) and a uniformly random order of the given ones, all
    with ``probability`` (torchvision's ``RandomApply([ColorJitter(...)], p)``), each
    applied in turn, clipped to 0..255: ``b·in``; ``c·in + (1 − c)·mean(grey)`` (``grey`` with
    torchvision's weights 0.2989, 0.587, 0.114, its mean over the image); ``s·in + (1 −
    s)·grey``; the HSV hue turned by ``h`` (``(H + h) mod 1``). torchvision's ``ColorJitter``
    (``clip: each``); ``clip: once`` joins the one colour pass (no hue; one clip at the end).

    Example: ``{"type": "color_jitter", "brightness": 0.4, "contrast": 0.4, "saturation": 0.4,
    "hue": [-0.1, 0.1]}``."""

    type: Literal["color_jitter"] = "color_jitter"
    brightness: FactorRange | None = None
    contrast: FactorRange | None = None
    saturation: FactorRange | None = None
    hue: HueRange | None = None
    clip: Literal["each", "once"] = "each"
    probability: Probability = 1.0

    needs_rgb: ClassVar[bool] = True
    uses_mean: ClassVar[bool] = True

    @model_validator(mode="after")
    def _given(self) -> ColorJitter:
        if not self.given:
            raise ValueError("give at least one of brightness, contrast, saturation, hue")
        if self.clip == "once" and self.hue is not None:
            raise ValueError("clip: once joins the colour pass, which has no HSV hue")
        return self

    @property
    def given(self) -> tuple[str, ...]:
        """The factors drawn, in torchvision's order."""
        return tuple(name for name in FACTORS if getattr(self, name) is not None)

    @property
    def orders(self) -> list[tuple[str, ...]]:
        """Every order of the given factors (one drawn per sample, each equally likely)."""
        return list(permutations(self.given))

    @property
    def params(self) -> tuple[str, ...]:  # type: ignore[override]
        slots = len(self.given) if self.clip == "each" else 0
        flags = [f"{j}_{name}" for j in range(slots) for name in self.given]
        return (*self.given, *flags)

    @property
    def stage_params(self) -> tuple[str, ...]:  # type: ignore[override]
        """Per slot its colour map's entries (``ops.recolour``'s 21: the identity where the
        slot turns hue) and whether it turns hue, then the hue factor; none with ``clip:
        once`` (the colour pass takes the factors)."""
        if self.clip == "once":
            return ()
        names = [f"{j}_{k}" for j in range(len(self.given)) for k in range(ENTRIES)]
        if self.hue is not None:
            names += [f"{j}_turns" for j in range(len(self.given))] + ["turn"]
        return tuple(names)

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """Each slot's map: the flag-weighted sum of the given colour factors' maps, plus the
        identity's where none was chosen (a hue slot; exact: the flags are 0 or 1); none with
        ``clip: once`` (the colour pass takes the factors)."""
        out: Params = {}
        if self.clip == "once":
            return out
        identity = _entries(ColourMatrix.identity(3))
        for j in range(len(self.given)):
            total: list[Scalar] = [0.0] * ENTRIES
            left: Scalar = 1.0
            for name in self.given:
                if name == "hue":
                    continue
                flag = p[f"{j}_{name}"]
                entries = _entries(_colour(name, p[name], 3))
                total = [add(t, mul(flag, e)) for t, e in zip(total, entries, strict=True)]
                left = sub(left, flag)
            for k, (t, i) in enumerate(zip(total, identity, strict=True)):
                out[f"{j}_{k}"] = add(t, mul(left, i))
            if self.hue is not None:
                out[f"{j}_turns"] = p[f"{j}_hue"]
        if self.hue is not None:
            out["turn"] = p["hue"]
        return out

    def draw(self, rng: Random) -> Params:
        applied = rng.bernoulli(self.probability)
        drawn: Params = {}
        for name in self.given:  # the identity (1; hue 0) where not applied
            rest = 0.0 if name == "hue" else sub(1.0, applied)
            drawn[name] = add(mul(applied, rng.uniform(*getattr(self, name))), rest)
        if self.clip == "once":
            return drawn
        chosen = [mul(applied, f) for f in one_hot(rng, len(self.orders))]
        for j in range(len(self.given)):
            for name in self.given:
                flags = [
                    f for f, order in zip(chosen, self.orders, strict=True) if order[j] == name
                ]
                total: Scalar = 0.0
                for f in flags:
                    total = add(total, f)
                drawn[f"{j}_{name}"] = total
        return drawn

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        total = ColourMatrix.identity(channels)
        if self.clip == "once":
            for name in self.given:
                total = _colour(name, p[name], channels).then_after(total)
        return total

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        """Slot by slot: its colour map (clipped), then its hue turn where it turns hue."""
        if self.clip == "once":
            return images

        def turn(x: Any) -> Any:
            return ops.keras_hue(x, p["turn"])

        for j in range(len(self.given)):
            images = ops.recolour(images, [p[f"{j}_{k}"] for k in range(ENTRIES)])
            if self.hue is not None:
                images = ops.select(p[f"{j}_turns"], turn, images)
        return images


def _colour(name: str, factor: Scalar, channels: int) -> ColourMatrix:
    """torchvision's ``adjust_<name>`` as a colour map (brightness, contrast, saturation)."""
    own = ColourMatrix.diagonal(factor, channels)
    if name == "brightness":
        return own
    rest = sub(1.0, factor)
    grey = tuple(tuple(mul(rest, w) for w in GREY) for _ in range(channels))
    if name == "contrast":
        return ColourMatrix(own.rows, grey)
    rows = tuple(
        (*(add(a, b) for a, b in zip(row[:channels], g, strict=True)), row[channels])
        for row, g in zip(own.rows, grey, strict=True)
    )
    return ColourMatrix(rows)


def _entries(colour: ColourMatrix) -> list[Scalar]:
    """``ops.recolour``'s entries of a 3-channel map: ``[M | t]`` then ``N``."""
    return [*colour.flat(), *colour.flat_means()]
