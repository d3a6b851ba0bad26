"""Keras' ``RandomShear``: both shears at once, about the top-left pixel, with a random sign."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, model_validator

from daliaug.algebra import Affine, Canvas, Math, Random, mul, sub
from daliaug.transforms.base import Fill, GeometricTransform, Params, SymmetricRange


def _within_one(r: tuple[float, float]) -> tuple[float, float]:
    if max(abs(r[0]), abs(r[1])) > 1.0:
        raise ValueError(f"shear factors must lie within [-1, 1], got {list(r)}")
    return r


ShearFactor = Annotated[SymmetricRange, AfterValidator(_within_one)]


class KerasShear(GeometricTransform):
    """Shear as Keras' ``RandomShear``: ``sign`` is -1 or +1 with probability 0.5,
    ``shear_x ~ U(x_factor)``, ``shear_y ~ U(y_factor)``, and each output pixel at index
    ``(x, y)`` (column, row) samples the source at ``(x + s*shear_x*y, y + s*shear_y*x)``: a
    shear about the top-left pixel's centre, not the image centre. A single number ``a`` means
    ``[-a, a]``. Revealed borders take ``fill``.
    """

    type: Literal["keras_shear"] = "keras_shear"
    x_factor: ShearFactor = (0.0, 0.0)
    y_factor: ShearFactor = (0.0, 0.0)
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("sign", "shear_x", "shear_y")
    axis_aligned: ClassVar[bool] = False

    @model_validator(mode="after")
    def _invertible(self) -> KerasShear:
        x = max(abs(v) for v in self.x_factor)
        y = max(abs(v) for v in self.y_factor)
        if x * y >= 1.0:
            raise ValueError(
                f"x_factor {list(self.x_factor)} and y_factor {list(self.y_factor)} can shear "
                "the image flat (shear_x * shear_y must stay below 1)"
            )
        return self

    def draw(self, rng: Random) -> Params:
        return {
            "sign": sub(1.0, mul(2.0, rng.bernoulli(0.5))),
            "shear_x": rng.uniform(*self.x_factor),
            "shear_y": rng.uniform(*self.y_factor),
        }

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        sampled = Affine.about(
            0.5, 0.5, (1.0, mul(p["sign"], p["shear_x"]), mul(p["sign"], p["shear_y"]), 1.0)
        )
        return sampled.inverse(), canvas
