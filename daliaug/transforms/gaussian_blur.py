"""Gaussian blur with a random sigma, for a random share of the samples."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from daliaug.algebra import Random
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability, ordered

MAX_SIGMA = 100.0
"""The largest blur sigma, in pixels."""


def _odd(size: int) -> int:
    if size % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {size}")
    return size


class GaussianBlur(PixelTransform):
    """Each image correlated with a normalized ``kernel_size`` x ``kernel_size`` Gaussian of
    ``sigma ~ U(sigma)`` (the same in both axes; the border mirrored without repeating the
    edge pixel, ``dcb|abcd``) when ``blur ~ Bernoulli(probability)`` is 1, else ``out = in``
    (torchvision's ``GaussianBlur`` applied to a ``probability`` share; Keras'
    ``RandomGaussianBlur`` pads with zeros and draws one sigma per batch). The kernel must be
    smaller than twice the output's height and width.

    Example: ``{"type": "gaussian_blur", "kernel_size": 5, "sigma": [0.1, 2.0]}``."""

    type: Literal["gaussian_blur"] = "gaussian_blur"
    kernel_size: Annotated[int, Field(ge=1, le=255), AfterValidator(_odd)] = 5
    sigma: Annotated[
        tuple[float, float], AfterValidator(ordered), bounded(0.0, MAX_SIGMA, "sigmas")
    ] = (0.1, 2.0)
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("blur", "sigma")

    def draw(self, rng: Random) -> Params:
        return {"blur": rng.bernoulli(self.probability), "sigma": rng.uniform(*self.sigma)}

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if self.kernel_size >= 2 * min(size):
            return [
                f"kernel_size: {self.kernel_size} must be smaller than twice the output's "
                f"height and width (image_size {list(size)})"
            ]
        return []

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        blur = partial(ops.gaussian_blur, sigma=p["sigma"], size=self.kernel_size)
        return ops.select(p["blur"], blur, images)
