"""Zoom: scale the content about the canvas centre, keeping the canvas size."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Affine, Canvas, Math, Random, mul
from daliaug.transforms.base import Fill, GeometricTransform, Params, ZoomFactorRange


class Zoom(GeometricTransform):
    """Magnify the content by ``zoom_x ~ U(factor)`` about the centre (``> 1`` zooms in); a
    single number ``d`` (below 1) means ``[1 - d, 1 + d]``; factors lie within [0.01, 100].

    With ``keep_aspect`` (default) ``zoom_y = zoom_x``; otherwise ``zoom_y`` is drawn
    independently from the same range, as Keras' ``ImageDataGenerator`` does. Note the
    direction: ``ImageDataGenerator``'s ``zoom_range`` value ``z`` corresponds to ``1 / z`` here.
    """

    type: Literal["zoom"] = "zoom"
    factor: ZoomFactorRange
    keep_aspect: bool = True
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("zoom_x", "zoom_y")
    axis_aligned: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        zx = rng.uniform(*self.factor)
        return {"zoom_x": zx, "zoom_y": zx if self.keep_aspect else rng.uniform(*self.factor)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        linear = (p["zoom_x"], 0.0, 0.0, p["zoom_y"])
        return Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), linear), canvas
