"""Equalize: each channel's histogram flattened, for a random share of the samples."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability


class Equalize(PixelTransform):
    """Histogram equalization of each channel of the image rounded to ``uint8`` when
    ``equalize ~ Bernoulli(probability)`` is 1, else ``out = in``. The table is OpenCV's
    ``equalizeHist`` (DALI's ``fn.equalize``; Keras' ``Equalization`` on one image), not PIL's
    ``ImageOps.equalize`` (torchvision's), whose table rounds differently.

    Example: ``{"type": "equalize", "probability": 0.5}``."""

    type: Literal["equalize"] = "equalize"
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("equalize",)

    def draw(self, rng: Random) -> Params:
        return {"equalize": rng.bernoulli(self.probability)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.select(p["equalize"], ops.equalize, images)
