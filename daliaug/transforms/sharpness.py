"""Sharpness: each image blended with its smoothed self by a random factor."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar, Literal

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import FactorRange, Params, PixelTransform, Probability


class Sharpness(PixelTransform):
    """``out = clip(smooth + factor * (in - smooth), 0, 255)`` with ``smooth`` PIL's
    ``ImageFilter.SMOOTH`` of the image (its one-pixel border kept), ``factor ~ U(factor)``
    when ``sharpness ~ Bernoulli(probability)`` is 1, else ``out = in``: 0 smooths, 1 keeps,
    above 1 sharpens (PIL's ``ImageEnhance.Sharpness`` in float, torchvision's
    ``RandomAdjustSharpness`` with a drawn factor; Keras' ``RandomSharpness`` with
    ``factor = [low / 2, high / 2]``, as it doubles its draw). A single number ``d`` means
    ``[max(0, 1 - d), 1 + d]``.

    Example: ``{"type": "sharpness", "factor": [0.1, 1.9], "probability": 0.5}``."""

    type: Literal["sharpness"] = "sharpness"
    factor: FactorRange = (0.1, 1.9)
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("sharpness", "factor")

    def draw(self, rng: Random) -> Params:
        return {"sharpness": rng.bernoulli(self.probability), "factor": rng.uniform(*self.factor)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.select(p["sharpness"], partial(ops.sharpness, factor=p["factor"]), images)
