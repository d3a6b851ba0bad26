"""Keras' ``RandomBrightness``: add a random share of the value range."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import ColourMatrix, Math, Random, mul
from daliaug.transforms.base import ColourTransform, Params, SymmetricRange


def _within_one(r: tuple[float, float]) -> tuple[float, float]:
    if max(abs(r[0]), abs(r[1])) > 1.0:
        raise ValueError(f"brightness factors must lie within [-1, 1], got {list(r)}")
    return r


class KerasBrightness(ColourTransform):
    """``out = in + 255 * delta``, ``delta ~ U(factor)``, on every channel, clipped to 0..255
    with the colour pass: Keras' ``RandomBrightness`` on ``value_range=(0, 255)``. A single
    number ``a`` means ``[-a, a]``. (``brightness`` multiplies instead.)"""

    type: Literal["keras_brightness"] = "keras_brightness"
    factor: Annotated[SymmetricRange, AfterValidator(_within_one)]

    params: ClassVar[tuple[str, ...]] = ("delta",)

    def draw(self, rng: Random) -> Params:
        return {"delta": rng.uniform(*self.factor)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return ColourMatrix.diagonal(1.0, channels, offset=mul(p["delta"], 255.0))
