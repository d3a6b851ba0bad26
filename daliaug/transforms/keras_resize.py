"""Keras' ``Resizing`` with ``crop_to_aspect_ratio`` or ``pad_to_aspect_ratio`` (a plain
``Resizing`` is ``resize``)."""

from __future__ import annotations

from typing import Literal

from daliaug.algebra import Box, Canvas, Math, Scalar, add, div, mul, sub
from daliaug.fields import Size
from daliaug.transforms.base import CropTransform, Fill, Params

_NUDGE = 1e-3
"""Added before flooring a quotient of whole numbers, so that a float32 rounding just below a
whole number does not lose it (the next possible value is at least ``1 / side`` above)."""


def floor_quotient(m: Math, a: Scalar, b: float) -> Scalar:
    """``floor(a / b)`` for whole numbers ``a`` and ``b``, as Keras' ``int(a / b)``."""
    return m.floor(add(div(a, b), _NUDGE))


def select(flag: Scalar, yes: Scalar, no: Scalar) -> Scalar:
    """``yes`` where ``flag`` is 1, ``no`` where it is 0 (arithmetic, for every backend)."""
    return add(no, mul(flag, sub(yes, no)))


def aspect_window(canvas: Canvas, size: tuple[int, int], m: Math) -> Box:
    """Keras' ``smart_resize`` window: the largest centred window with the aspect ratio of
    ``size`` (``[height, width]``), its corner and sides rounded down as Keras' ``int``."""
    h, w = float(size[0]), float(size[1])
    crop_h = m.maximum(m.minimum(canvas.h, floor_quotient(m, mul(canvas.w, h), w)), 1.0)
    crop_w = m.maximum(m.minimum(canvas.w, floor_quotient(m, mul(canvas.h, w), h)), 1.0)
    y = m.floor(mul(sub(canvas.h, crop_h), 0.5))
    x = m.floor(mul(sub(canvas.w, crop_w), 0.5))
    return Box(y=y, x=x, h=crop_h, w=crop_w)


class KerasResize(CropTransform):
    """Resize to ``size`` keeping the aspect ratio as Keras' ``Resizing`` does: ``crop`` takes
    the largest centred window of ``size``'s aspect ratio (:func:`aspect_window`) and resizes
    it; ``pad`` pads the image on both sides of its short axis by ``floor((P - S) / 2)``
    pixels each, ``P = max(S, int(L * s / l))`` (``S``, ``L``: the short and long side, ``s``,
    ``l``: the target's), with ``fill``, then resizes. Bilinear without antialiasing, as
    ``tf.image.resize``.
    """

    type: Literal["keras_resize"] = "keras_resize"
    size: Size
    aspect: Literal["crop", "pad"]
    fill: Fill = 0.0

    @property
    def reveals(self) -> bool:
        """Only padding reveals area outside the image."""
        return self.aspect == "pad"

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        if self.aspect == "crop":
            return aspect_window(canvas, self.size, m)
        h, w = float(self.size[0]), float(self.size[1])
        padded_h = m.maximum(canvas.h, floor_quotient(m, mul(canvas.w, h), w))
        padded_w = m.maximum(canvas.w, floor_quotient(m, mul(canvas.h, w), h))
        top = m.floor(mul(sub(padded_h, canvas.h), 0.5))
        left = m.floor(mul(sub(padded_w, canvas.w), 0.5))
        return Box(
            y=mul(top, -1.0),
            x=mul(left, -1.0),
            h=add(canvas.h, mul(top, 2.0)),
            w=add(canvas.w, mul(left, 2.0)),
        )

    def crop_output(self, box: Box) -> Canvas:
        return Canvas(float(self.size[0]), float(self.size[1]))
