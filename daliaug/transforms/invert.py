"""Invert: ``255 - x`` on every channel, for a random share of the samples."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math, Random, mul, sub
from daliaug.transforms.base import ColourTransform, Params, Probability


class Invert(ColourTransform):
    """``out = 255 - in`` when ``invert ~ Bernoulli(probability)`` is 1, else ``out = in``
    (Keras' ``RandomInvert``, torchvision's ``RandomInvert``)."""

    type: Literal["invert"] = "invert"
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("invert",)

    def draw(self, rng: Random) -> Params:
        return {"invert": rng.bernoulli(self.probability)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        b = p["invert"]
        return ColourMatrix.diagonal(sub(1.0, mul(b, 2.0)), channels, offset=mul(b, 255.0))
