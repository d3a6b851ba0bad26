"""torchvision's ``RandomCrop``: a window at a random whole-pixel corner of the padded canvas."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Box, Canvas, Math, Random, Scalar, add, mul, sub
from daliaug.fields import Size
from daliaug.transforms.base import CropTransform, Fill, Params

Pad = Annotated[int, Field(ge=0, le=16384)]


class RandomCrop(CropTransform):
    """Pad the canvas by ``padding`` (left, right, top, bottom pixels; with ``pad_if_needed``
    each side of an axis also by what the padded canvas lacks of ``size``), then cut a
    ``size`` window at ``x = floor(u · (W' − w + 1))``, ``y = floor(v · (H' − h + 1))`` of it,
    ``u, v ~ U(0, 1)``: torchvision's ``RandomCrop``. The padding shows ``fill`` (``nearest``:
    torchvision's ``edge``; ``reflect``: its ``symmetric``, on the TF engine). Where the padded
    canvas is smaller than the window (torchvision raises), the window sits at its corner and
    the rest takes ``fill``.

    Example: ``{"type": "random_crop", "size": [32, 32], "padding": [4, 4, 4, 4]}``."""

    type: Literal["random_crop"] = "random_crop"
    size: Size
    padding: tuple[Pad, Pad, Pad, Pad] = (0, 0, 0, 0)
    pad_if_needed: bool = False
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("u", "v")

    def draw(self, rng: Random) -> Params:
        return {"u": rng.uniform(0.0, 1.0), "v": rng.uniform(0.0, 1.0)}

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        left, right, top, bottom = (float(v) for v in self.padding)
        h, w = float(self.size[0]), float(self.size[1])
        x = self._corner(p["u"], canvas.w, left, right, w, m)
        y = self._corner(p["v"], canvas.h, top, bottom, h, m)
        return Box(y=y, x=x, h=h, w=w)

    def _corner(
        self, u: Scalar, side: Scalar, before: float, after: float, length: float, m: Math
    ) -> Scalar:
        """The window's corner along one axis, in the unpadded canvas' pixels."""
        padded = add(side, before + after)
        if self.pad_if_needed:
            lacking = m.maximum(sub(length, padded), 0.0)
            before_all = add(lacking, before)
            padded = add(padded, mul(lacking, 2.0))
        else:
            before_all = before
        spare = m.maximum(sub(padded, length), 0.0)
        corner = m.minimum(m.floor(mul(u, add(spare, 1.0))), spare)
        return sub(corner, before_all)

    def crop_output(self, box: Box) -> Canvas:
        return Canvas(float(self.size[0]), float(self.size[1]))
