"""Random resized crop: a random window of random area and aspect ratio, resized."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import field_validator

from daliaug.algebra import Box, Canvas, Math, Random, add, div, mul, sub
from daliaug.fields import Size, bounded
from daliaug.transforms.base import MAX_FACTOR, CropTransform, Params, PositiveRange

RatioRange = Annotated[PositiveRange, bounded(1 / MAX_FACTOR, MAX_FACTOR, "aspect ratios")]


class RandomResizedCrop(CropTransform):
    """Crop a random window and resize it to ``size`` (default: the pipeline's ``image_size``).

    Per sample: area fraction ``s ~ U(scale)``, log aspect ratio ``r ~ U(log(ratio))`` and
    position ``u, v ~ U(0, 1)``. For a ``W x H`` source::

        w = clip(round(sqrt(s*W*H*exp(r))), 1, W)    h = clip(round(sqrt(s*W*H/exp(r))), 1, H)
        x = min(floor(u*(W - w + 1)), W - w)         y = min(floor(v*(H - h + 1)), H - h)

    ``round`` is round-half-up. There is no rejection loop: a window that would not fit is
    clipped to the image, so extreme ratios on small images lose some of their skew.
    """

    type: Literal["random_resized_crop"] = "random_resized_crop"
    scale: PositiveRange = (0.08, 1.0)
    ratio: RatioRange = (3 / 4, 4 / 3)
    size: Size | None = None

    params: ClassVar[tuple[str, ...]] = ("area", "log_ratio", "u", "v")
    decodes_roi: ClassVar[bool] = True

    @field_validator("scale")
    @classmethod
    def _scale_at_most_one(cls, v: tuple[float, float]) -> tuple[float, float]:
        if v[1] > 1.0:
            raise ValueError(f"scale is a fraction of the image area, at most 1, got {list(v)}")
        return v

    def draw(self, rng: Random) -> Params:
        lo, hi = self.ratio
        return {
            "area": rng.uniform(*self.scale),
            "log_ratio": rng.uniform(math.log(lo), math.log(hi)),
            "u": rng.uniform(0.0, 1.0),
            "v": rng.uniform(0.0, 1.0),
        }

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        area = mul(mul(p["area"], canvas.w), canvas.h)
        ratio = m.exp(p["log_ratio"])
        w = m.clip(m.round(m.sqrt(mul(area, ratio))), 1.0, canvas.w)
        h = m.clip(m.round(m.sqrt(div(area, ratio))), 1.0, canvas.h)
        x = m.minimum(m.floor(mul(p["u"], add(sub(canvas.w, w), 1.0))), sub(canvas.w, w))
        y = m.minimum(m.floor(mul(p["v"], add(sub(canvas.h, h), 1.0))), sub(canvas.h, h))
        return Box(y=y, x=x, h=h, w=w)

    def crop_output(self, box: Box) -> Canvas:
        assert self.size is not None, "size is filled in from image_size by the config"
        return Canvas(float(self.size[0]), float(self.size[1]))
