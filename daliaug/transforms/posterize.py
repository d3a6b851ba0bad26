"""Posterize: each value reduced to its top bits, for a random share of the samples."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability


class Posterize(PixelTransform):
    """Each value rounded to ``uint8`` keeps its top ``bits`` bits (the others set to 0) when
    ``posterize ~ Bernoulli(probability)`` is 1, else ``out = in`` (PIL's
    ``ImageOps.posterize``, torchvision's ``RandomPosterize``; Keras' ``RandomPosterization``
    with ``factor`` fixed to one bit count and applied to a ``probability`` share).

    Example: ``{"type": "posterize", "bits": 4, "probability": 0.5}``."""

    type: Literal["posterize"] = "posterize"
    bits: Annotated[int, Field(ge=0, le=8)] = 4
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("posterize",)

    def draw(self, rng: Random) -> Params:
        return {"posterize": rng.bernoulli(self.probability)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.select(p["posterize"], partial(ops.posterize, bits=float(self.bits)), images)
