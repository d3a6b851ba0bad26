"""Keras' ``RandomFlip``: one coin per sample, flipping the axes its ``mode`` names."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Affine, Canvas, Math, Random, mul, sub
from daliaug.transforms.base import GeometricTransform, Params

FlipMode = Literal["horizontal", "vertical", "horizontal_and_vertical"]


class KerasFlip(GeometricTransform):
    """Flip with probability 0.5 (``flip ~ Bernoulli(0.5)``, as Keras' ``uniform <= 0.5``) the
    axes ``mode`` names: left-right, top-bottom, or both at once with the same coin (a half
    turn), as Keras' ``RandomFlip`` does; ``flip`` (independent coins per axis) is the other
    reading of ``horizontal_and_vertical``."""

    type: Literal["keras_flip"] = "keras_flip"
    mode: FlipMode = "horizontal_and_vertical"

    params: ClassVar[tuple[str, ...]] = ("flip",)
    axis_aligned: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"flip": rng.bernoulli(0.5)}

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        fx = p["flip"] if self.mode != "vertical" else 0.0
        fy = p["flip"] if self.mode != "horizontal" else 0.0
        return Affine(
            a=sub(1.0, mul(fx, 2.0)),
            c=mul(fx, canvas.w),
            e=sub(1.0, mul(fy, 2.0)),
            f=mul(fy, canvas.h),
        ), canvas
