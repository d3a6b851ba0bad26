"""Saturation: blend each pixel with its luma."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math, add, mul, sub
from daliaug.transforms.base import FactorTransform, Params

LUMA = (0.299, 0.587, 0.114)
"""Rec. 601 luma weights, the Y row of the YIQ transform that ``hue`` rotates in."""


class Saturation(FactorTransform):
    """``out = factor * in + (1 - factor) * luma(in)`` per channel; 0 gives greyscale, 1 the
    input."""

    type: Literal["saturation"] = "saturation"
    needs_rgb: ClassVar[bool] = True

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        s = p["factor"]
        grey = sub(1.0, s)
        return ColourMatrix.linear(
            tuple(
                tuple(add(s if i == j else 0.0, mul(grey, LUMA[j])) for j in range(3))
                for i in range(3)
            )
        )
