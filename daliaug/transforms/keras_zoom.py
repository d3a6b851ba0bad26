"""Keras' ``RandomZoom``: each output pixel samples the source ``zoom`` times as far from the
centre."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import Affine, Canvas, Math, Random, div, mul
from daliaug.fields import bounded
from daliaug.transforms.base import MAX_FACTOR, Fill, GeometricTransform, Params, SymmetricRange


def _above_minus_one(r: tuple[float, float]) -> tuple[float, float]:
    if r[0] <= -1.0:
        raise ValueError(f"zoom factors must be > -1 (a factor f samples 1 + f), got {list(r)}")
    return r


ZoomFactor = Annotated[
    SymmetricRange, AfterValidator(_above_minus_one), bounded(-1.0, MAX_FACTOR, "zoom factors")
]


class KerasZoom(GeometricTransform):
    """Zoom as Keras' ``RandomZoom``: ``height_zoom ~ U(1 + height_factor)`` and, drawn apart,
    ``width_zoom ~ U(1 + width_factor)`` (the same value as ``height_zoom`` when
    ``width_factor`` is not given); each output pixel samples the source at ``zoom`` times its
    distance from the centre, so a factor above 0 zooms out (the content shrinks) and below 0
    zooms in. A single number ``a`` means ``[-a, a]``. Note the direction: ``zoom``'s factor
    ``z`` magnifies, so it is ``1 / (1 + f)`` here, and ``zoom`` draws ``z`` uniformly.
    Revealed borders take ``fill``.
    """

    type: Literal["keras_zoom"] = "keras_zoom"
    height_factor: ZoomFactor
    width_factor: ZoomFactor | None = None
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("height_zoom", "width_zoom")
    axis_aligned: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        low, high = self.height_factor
        height = rng.uniform(1.0 + low, 1.0 + high)
        if self.width_factor is None:
            return {"height_zoom": height, "width_zoom": height}
        low, high = self.width_factor
        return {"height_zoom": height, "width_zoom": rng.uniform(1.0 + low, 1.0 + high)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        linear = (div(1.0, p["width_zoom"]), 0.0, 0.0, div(1.0, p["height_zoom"]))
        return Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), linear), canvas
