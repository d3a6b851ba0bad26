"""Contrast: stretch all channels about mid-grey."""

from __future__ import annotations

from typing import Literal

from daliaug.algebra import ColourMatrix, Math, mul, sub
from daliaug.transforms.base import FactorTransform, Params

MID_GREY = 128.0


class Contrast(FactorTransform):
    """``out = factor * (in - 128) + 128``. The centre is the fixed mid-grey 128 (as DALI's
    ``contrast_center`` for 8-bit images), not the image mean."""

    type: Literal["contrast"] = "contrast"

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        c = p["factor"]
        return ColourMatrix.diagonal(c, channels, offset=mul(sub(1.0, c), MID_GREY))
