"""Horizontal shear about the canvas centre."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from daliaug.algebra import Affine, Canvas, Math, Random, mul
from daliaug.transforms.base import Fill, GeometricTransform, Params, SymmetricRange, radians


class Shear(GeometricTransform):
    """Shear by ``angle ~ U(angle)`` degrees: ``x' = x + tan(angle) * (y - H/2)``, so rows
    below the centre move right for a positive angle. A single number ``a`` means ``[-a, a]``.
    """

    type: Literal["shear"] = "shear"
    angle: SymmetricRange
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("angle",)
    axis_aligned: ClassVar[bool] = False

    @field_validator("angle")
    @classmethod
    def _below_90(cls, v: tuple[float, float]) -> tuple[float, float]:
        if max(abs(v[0]), abs(v[1])) >= 80:
            raise ValueError(f"shear angles must lie within (-80, 80) degrees, got {list(v)}")
        return v

    def draw(self, rng: Random) -> Params:
        return {"angle": rng.uniform(*self.angle)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        linear = (1.0, m.tan(radians(p["angle"])), 0.0, 1.0)
        return Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), linear), canvas
