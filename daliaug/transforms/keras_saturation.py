"""Keras' ``RandomSaturation``: the HSV saturation of every pixel scaled by a random factor."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import Random, add, div, sub
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, SymmetricRange, ordered

KERAS_EPSILON = 1e-7
"""Keras' ``backend.epsilon()``, in the factor's denominator."""

MAX_SATURATION = 1000.0
"""The widest saturation clip the transform takes."""


def _within_one(r: tuple[float, float]) -> tuple[float, float]:
    if r[0] < -1 or r[1] > 1:
        raise ValueError(f"saturation factors must lie within [-1, 1], got {list(r)}")
    return r


class KerasSaturation(PixelTransform):
    """Per sample ``u ~ U(factor)`` and ``k = u / (1 - u + 1e-7)``; per pixel, in HSV
    (TensorFlow's ``rgb_to_hsv``), ``S' = clip(k * S, *saturation_range)``, hue and value kept,
    back to RGB and clipped to 0..255: Keras' ``RandomSaturation``. ``u = 0.5`` keeps the
    image, ``u <= 0`` makes it grey, ``u -> 1`` saturates fully. A single number ``f`` means
    ``[-f, f]``, as in Keras' code (so ``u < 0``, grey, for half the samples). Keras clips
    ``S'`` to its layer's ``value_range``, ``[0, 255]`` by default, so ``S'`` may exceed 1
    (channels pushed below 0, which daliaug clips and Keras leaves): ``saturation_range`` is
    that range (``[0, 1]`` keeps colours in gamut).

    Example: ``{"type": "keras_saturation", "factor": 0.5}``."""

    type: Literal["keras_saturation"] = "keras_saturation"
    factor: Annotated[SymmetricRange, AfterValidator(_within_one)]
    saturation_range: Annotated[
        tuple[float, float],
        AfterValidator(ordered),
        bounded(-MAX_SATURATION, MAX_SATURATION, "saturations"),
    ] = (0.0, 255.0)

    params: ClassVar[tuple[str, ...]] = ("saturation",)
    needs_rgb: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        u = rng.uniform(*self.factor)
        return {"saturation": div(u, add(sub(1.0, u), KERAS_EPSILON))}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.keras_saturation(images, p["saturation"], *self.saturation_range)
