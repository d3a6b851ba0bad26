"""Contrast: stretch all channels about mid-grey."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math, Random, mul, sub
from daliaug.transforms.base import ColourTransform, FactorRange, Params

MID_GREY = 128.0


class Contrast(ColourTransform):
    """``out = factor * (in - 128) + 128`` with ``factor ~ U(factor)``; a single number ``d``
    means ``[max(0, 1 - d), 1 + d]``. The centre is the fixed mid-grey 128 (as DALI's
    ``contrast_center`` for 8-bit images), not the image mean.
    """

    type: Literal["contrast"] = "contrast"
    factor: FactorRange

    params: ClassVar[tuple[str, ...]] = ("factor",)

    def draw(self, rng: Random) -> Params:
        return {"factor": rng.uniform(*self.factor)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        c = p["factor"]
        offset = mul(sub(1.0, c), MID_GREY)
        return ColourMatrix.linear(
            tuple(tuple(c if i == j else 0.0 for j in range(channels)) for i in range(channels)),
            (offset,) * channels,
        )
