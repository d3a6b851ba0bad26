"""Horizontal and vertical flips."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Affine, Canvas, Math, Random, mul, sub
from daliaug.transforms.base import GeometricTransform, Params, Probability


class Flip(GeometricTransform):
    """Mirror left-right with probability ``horizontal`` and top-bottom with probability
    ``vertical``; ``flip_x, flip_y ~ Bernoulli`` are 1.0 for a flip, else 0.0.
    """

    type: Literal["flip"] = "flip"
    horizontal: Probability = 0.5
    vertical: Probability = 0.0

    params: ClassVar[tuple[str, ...]] = ("flip_x", "flip_y")
    axis_aligned: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"flip_x": rng.bernoulli(self.horizontal), "flip_y": rng.bernoulli(self.vertical)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        fx, fy = p["flip_x"], p["flip_y"]
        # x' = x when not flipped, W - x when flipped.
        return Affine(
            a=sub(1.0, mul(fx, 2.0)),
            c=mul(fx, canvas.w),
            e=sub(1.0, mul(fy, 2.0)),
            f=mul(fy, canvas.h),
        ), canvas
