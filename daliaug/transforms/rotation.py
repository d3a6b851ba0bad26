"""Rotation about the canvas centre."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Affine, Canvas, Math, Random, mul, neg
from daliaug.transforms.base import AngleRange, Fill, GeometricTransform, Params, radians


class Rotation(GeometricTransform):
    """Rotate by ``angle ~ U(angle)`` degrees about the canvas centre; positive turns the
    content counter-clockwise, as ``np.rot90`` and Keras' ``RandomRotation`` do. A single
    number ``a`` means ``[-a, a]``. Revealed corners take ``fill``.
    """

    type: Literal["rotation"] = "rotation"
    angle: AngleRange
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("angle",)
    axis_aligned: ClassVar[bool] = False

    def draw(self, rng: Random) -> Params:
        return {"angle": rng.uniform(*self.angle)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        t = radians(p["angle"])
        cos, sin = m.cos(t), m.sin(t)
        # y points down, so a visually counter-clockwise turn is this matrix.
        linear = (cos, sin, neg(sin), cos)
        return Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), linear), canvas
