"""Brightness: multiply all channels by a random factor."""

from __future__ import annotations

from typing import Literal

from daliaug.algebra import ColourMatrix, Math
from daliaug.transforms.base import FactorTransform, Params


class Brightness(FactorTransform):
    """``out = factor * in`` (``ImageDataGenerator``'s ``brightness_range`` is the pair form of
    ``factor``)."""

    type: Literal["brightness"] = "brightness"

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return ColourMatrix.diagonal(p["factor"], channels)
