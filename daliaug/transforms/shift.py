"""Shift (translation) by a fraction of the canvas size."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Affine, Canvas, Math, Random, mul
from daliaug.transforms.base import Fill, FractionRange, GeometricTransform, Params


class Shift(GeometricTransform):
    """Move the content by ``dx * W`` right and ``dy * H`` down, ``dx ~ U(x)``, ``dy ~ U(y)``.

    A single number ``a`` means ``[-a, a]`` (``ImageDataGenerator``'s ``width_shift_range`` as
    a fraction). Revealed borders take ``fill``.
    """

    type: Literal["shift"] = "shift"
    x: FractionRange = (0.0, 0.0)
    y: FractionRange = (0.0, 0.0)
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("dx", "dy")
    axis_aligned: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"dx": rng.uniform(*self.x), "dy": rng.uniform(*self.y)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        return Affine.translate(mul(p["dx"], canvas.w), mul(p["dy"], canvas.h)), canvas
