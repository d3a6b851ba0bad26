"""Brightness: multiply all channels by a random factor."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math, Random
from daliaug.transforms.base import ColourTransform, FactorRange, Params


class Brightness(ColourTransform):
    """``out = factor * in`` with ``factor ~ U(factor)``; a single number ``d`` means
    ``[max(0, 1 - d), 1 + d]`` (``ImageDataGenerator``'s ``brightness_range`` is the pair form).
    """

    type: Literal["brightness"] = "brightness"
    factor: FactorRange

    params: ClassVar[tuple[str, ...]] = ("factor",)

    def draw(self, rng: Random) -> Params:
        return {"factor": rng.uniform(*self.factor)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        b = p["factor"]
        return ColourMatrix.linear(
            tuple(tuple(b if i == j else 0.0 for j in range(channels)) for i in range(channels))
        )
