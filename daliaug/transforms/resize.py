"""Resize to a fixed size, or so that the shorter side has a given length."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import model_validator

from daliaug.algebra import Affine, Canvas, Math, div, mul
from daliaug.fields import Side, Size
from daliaug.transforms.base import GeometricTransform, Params


class Resize(GeometricTransform):
    """Scale the canvas to ``size`` ([height, width]), or keep the aspect ratio and scale the
    shorter side to ``shorter_side`` (the other side is ``round(side * shorter_side / min(H, W))``).

    Resampling is bilinear without antialiasing, as in ``tf.image.resize``'s default.
    """

    type: Literal["resize"] = "resize"
    size: Size | None = None
    shorter_side: Side | None = None

    axis_aligned: ClassVar[bool] = True

    @model_validator(mode="after")
    def _exactly_one(self) -> Resize:
        if (self.size is None) == (self.shorter_side is None):
            raise ValueError("give exactly one of 'size' or 'shorter_side'")
        return self

    def target(self, canvas: Canvas, m: Math) -> Canvas:
        if self.size is not None:
            return Canvas(float(self.size[0]), float(self.size[1]))
        k = div(float(self.shorter_side), m.minimum(canvas.h, canvas.w))
        return Canvas(m.round(mul(canvas.h, k)), m.round(mul(canvas.w, k)))

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        out = self.target(canvas, m)
        return Affine.scale(div(out.w, canvas.w), div(out.h, canvas.h)), out
