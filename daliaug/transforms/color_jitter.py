"""torchvision's ``ColorJitter``: brightness, contrast, saturation and hue, in a random order
per image, clipped after each.

Why one transform rather than four: torchvision draws a permutation of the four per call and
clips to the value range after each, so the result depends on the order (hue, in HSV, is not
affine: it commutes with neither contrast nor saturation). daliaug draws the permutation per
sample as one-hot flags over the orders of the given factors (as the policies draw their ops)
and, with ``clip: each``, runs the slots one after the other as a pixel stage: brightness,
contrast and saturation as one clipped colour map each (``ops.recolour``), hue as an HSV turn
(``ops.keras_hue``, which is torchvision's ``adjust_hue``: ``H' = (H + f) mod 1``).

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
        if self.clip == "once":
            return images
        for j in range(len(self.given)):
            options = [(p[f"{j}_{name}"], _step(name, p[name], ops)) for name in self.given]
            images = ops.choose(options, images)
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


def _step(name: str, factor: Scalar, ops: Kernels) -> Any:
    """One slot's operation on the images that chose it, clipped to 0..255."""
    if name == "hue":
        return lambda images: ops.keras_hue(images, factor)
    colour = _colour(name, factor, 3)
    entries = [*colour.flat(), *colour.flat_means()]
    return lambda images: ops.recolour(images, entries)
