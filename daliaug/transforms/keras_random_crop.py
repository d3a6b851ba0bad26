"""Keras' ``RandomCrop``: a window at a random corner, with Keras' fallback for images that
are not larger than the window."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Box, Canvas, Math, Random, add, mul, sub
from daliaug.fields import Size
from daliaug.transforms.base import CropTransform, Params
from daliaug.transforms.keras_resize import aspect_window, select


class KerasRandomCrop(CropTransform):
    """Cut a ``size`` window at ``y = floor(v * (H - h + 1))``, ``x = floor(u * (W - w + 1))``,
    ``u, v ~ U(0, 1)``, where the image is larger than the window along both sides. Otherwise,
    as Keras' ``RandomCrop`` in training: the rows and columns of ``size`` from the corner of
    the image's largest centred window of the target aspect ratio (cut off at the image's
    edge), resized to ``size``. Keras draws one corner per batch; here each sample draws its
    own (the same distribution per sample)."""

    type: Literal["keras_random_crop"] = "keras_random_crop"
    size: Size

    params: ClassVar[tuple[str, ...]] = ("u", "v")
    decodes_roi: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"u": rng.uniform(0.0, 1.0), "v": rng.uniform(0.0, 1.0)}

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        h, w = float(self.size[0]), float(self.size[1])
        spare_h, spare_w = sub(canvas.h, h), sub(canvas.w, w)
        larger = m.clip(m.minimum(spare_h, spare_w), 0.0, 1.0)
        y = m.minimum(m.floor(mul(p["v"], add(spare_h, 1.0))), spare_h)
        x = m.minimum(m.floor(mul(p["u"], add(spare_w, 1.0))), spare_w)
        window = aspect_window(canvas, self.size, m)
        return Box(
            y=select(larger, y, window.y),
            x=select(larger, x, window.x),
            h=select(larger, h, m.minimum(h, sub(canvas.h, window.y))),
            w=select(larger, w, m.minimum(w, sub(canvas.w, window.x))),
        )

    def crop_output(self, box: Box) -> Canvas:
        return Canvas(float(self.size[0]), float(self.size[1]))
