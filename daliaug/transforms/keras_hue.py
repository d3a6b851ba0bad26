"""Keras' ``RandomHue``: the HSV hue of every pixel turned by a random amount."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator

from daliaug.algebra import Random, mul, sub
from daliaug.fields import NumberOrRange, as_float, bounded, is_number
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, ordered


def _from_zero(v: Any) -> Any:
    """A single number ``f`` means ``[0, f]`` (Keras' factor bounds for hue are ``(0, 1)``)."""
    if is_number(v):
        return (0.0, abs(as_float(v)))
    return v


class KerasHue(PixelTransform):
    """Per sample ``u ~ U(factor)`` and a sign ``s = ±1`` (each with p = 0.5); per pixel, in HSV
    (TensorFlow's ``rgb_to_hsv``), ``H' = H + s * u / 2`` turns, brought back into [0, 1] by
    adding or subtracting one turn, saturation and value kept, back to RGB: Keras'
    ``RandomHue``. A single number ``f`` means ``[0, f]``; factors lie within [0, 1] (1: up to
    half a turn either way).

    Example: ``{"type": "keras_hue", "factor": 0.2}``."""

    type: Literal["keras_hue"] = "keras_hue"
    factor: Annotated[
        tuple[float, float],
        BeforeValidator(_from_zero, json_schema_input_type=NumberOrRange),
        AfterValidator(ordered),
        bounded(0.0, 1.0, "hue factors"),
    ]

    params: ClassVar[tuple[str, ...]] = ("hue",)
    needs_rgb: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        sign = sub(1.0, mul(rng.bernoulli(0.5), 2.0))
        return {"hue": mul(mul(sign, rng.uniform(*self.factor)), 0.5)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.keras_hue(images, p["hue"])
