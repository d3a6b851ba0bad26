"""Center crop: a fixed-size window in the middle of the canvas."""

from __future__ import annotations

from typing import Literal

from daliaug.algebra import Box, Canvas, Math, mul, sub
from daliaug.fields import Size
from daliaug.transforms.base import CropTransform, Fill, Params


class CenterCrop(CropTransform):
    """Cut a ``size`` window centred on the canvas (no parameters, nothing random).

    The window's corner is ``x = round((W - w) / 2)``, ``y = round((H - h) / 2)``. Where the
    canvas is smaller than the window, the uncovered area takes ``fill``.
    """

    type: Literal["center_crop"] = "center_crop"
    size: Size
    fill: Fill = 0.0

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        h, w = float(self.size[0]), float(self.size[1])
        x = m.round(mul(sub(canvas.w, w), 0.5))
        y = m.round(mul(sub(canvas.h, h), 0.5))
        return Box(y=y, x=x, h=h, w=w)
