"""Grayscale: replace every channel by the luma, for a random share of the samples."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math, Random, Scalar, add, mul, sub
from daliaug.transforms.base import ColourTransform, Params, Probability

GREY_WEIGHTS = (0.2989, 0.587, 0.114)
"""The luma weights of Keras' and torchvision's ``rgb_to_grayscale`` (``tf.image``'s too)."""


def towards_grey(amount: Scalar) -> ColourMatrix:
    """``out = (1 - amount) * in + amount * grey(in)`` on each RGB channel."""
    keep = sub(1.0, amount)
    return ColourMatrix.linear(
        tuple(
            tuple(add(keep if i == j else 0.0, mul(amount, GREY_WEIGHTS[j])) for j in range(3))
            for i in range(3)
        )
    )


class Grayscale(ColourTransform):
    """Every channel becomes ``0.2989 R + 0.587 G + 0.114 B`` when ``grey ~
    Bernoulli(probability)`` is 1 (Keras' ``RandomGrayscale``); the image keeps its three
    channels."""

    type: Literal["grayscale"] = "grayscale"
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("grey",)
    needs_rgb: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"grey": rng.bernoulli(self.probability)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return towards_grey(p["grey"])
