"""Keras' ``CenterCrop``: a centred window, or Keras' aspect-preserving resize when the image
is smaller than the window."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Box, Canvas, Math, add, mul, sub
from daliaug.fields import Size
from daliaug.transforms.base import CropTransform, Params
from daliaug.transforms.keras_resize import aspect_window, select


class KerasCenterCrop(CropTransform):
    """Cut the ``size`` window at ``y = floor((H - h) / 2)``, ``x = floor((W - w) / 2)`` (Keras'
    ``//``; ``center_crop`` rounds half up instead); where the image is smaller than the window
    along either side, resize its largest centred window of the target's aspect ratio to
    ``size`` instead, as Keras' ``CenterCrop`` does (``smart_resize``)."""

    type: Literal["keras_center_crop"] = "keras_center_crop"
    size: Size

    decodes_roi: ClassVar[bool] = True

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        h, w = float(self.size[0]), float(self.size[1])
        fits = m.clip(add(m.minimum(sub(canvas.h, h), sub(canvas.w, w)), 1.0), 0.0, 1.0)
        window = aspect_window(canvas, self.size, m)
        return Box(
            y=select(fits, m.floor(mul(sub(canvas.h, h), 0.5)), window.y),
            x=select(fits, m.floor(mul(sub(canvas.w, w), 0.5)), window.x),
            h=select(fits, h, window.h),
            w=select(fits, w, window.w),
        )

    def crop_output(self, box: Box) -> Canvas:
        return Canvas(float(self.size[0]), float(self.size[1]))
