"""Solarize: values at or above a threshold inverted, for a random share of the samples."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability


class Solarize(PixelTransform):
    """``out = 255 - in`` where ``in >= threshold`` when ``solarize ~ Bernoulli(probability)``
    is 1, else ``out = in`` (PIL's ``ImageOps.solarize``, torchvision's ``RandomSolarize``;
    Keras' ``Solarization`` with ``threshold_factor`` fixed: ``threshold = 255 *
    threshold_factor``).

    Example: ``{"type": "solarize", "threshold": 128, "probability": 0.5}``."""

    type: Literal["solarize"] = "solarize"
    threshold: Annotated[float, Field(ge=0.0, le=256.0)] = 128.0
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("solarize",)

    def draw(self, rng: Random) -> Params:
        return {"solarize": rng.bernoulli(self.probability)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.select(p["solarize"], partial(ops.solarize, threshold=self.threshold), images)
