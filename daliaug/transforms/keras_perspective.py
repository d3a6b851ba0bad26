"""Keras' ``RandomPerspective``: each image seen through a projective map whose corners move by
random fractions of their own coordinates."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from daliaug.algebra import Math, Random, Scalar, add, mul
from daliaug.kernels import Kernels
from daliaug.transforms.base import Effects, Params, PixelTransform, Probability
from daliaug.transforms.perspective import MATRIX, corners_map, projected

MOVES = ("tr_x", "br_x", "br_y", "bl_y")
"""The corner coordinates that move: the others are 0 (top-left corner, top row, left
column), which a relative move keeps."""


class KerasPerspective(PixelTransform):
    """When ``perspective ~ Bernoulli(probability)`` is 1, each corner pixel centre ``(x, y)``
    of the output (index coordinates: ``(0, 0)`` to ``(W - 1, H - 1)``) moves to ``(x (1 +
    fx), y (1 + fy))`` with ``fx, fy ~ U(-scale / 2, scale / 2)`` per corner and axis
    (real-valued, outward or inward; the top-left corner never moves, nor the top and left
    corners' zero coordinates), and the image is resampled (``interpolation``, ``fill``
    outside) so that its corners land there: Keras' ``RandomPerspective``, which applies
    with probability ``p ~ U(factor)`` (here a Bernoulli of its mean). It runs on the warped,
    recoloured image (a second resampling, after the fused affine warp); segmentation masks
    follow it (nearest, the source's ``mask_fill``). ``perspective`` is torchvision's form.

    Example: ``{"type": "keras_perspective", "scale": 0.5, "probability": 1.0}``."""

    type: Literal["keras_perspective"] = "keras_perspective"
    scale: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    probability: Probability = 0.5
    fill: Annotated[float, Field(ge=0.0, le=255.0)] = 0.0
    interpolation: Literal["bilinear", "nearest"] = "bilinear"

    params: ClassVar[tuple[str, ...]] = ("perspective", *MOVES)
    stage_params: ClassVar[tuple[str, ...] | None] = MATRIX
    effects: ClassVar[Effects] = Effects.all("follows")

    def draw(self, rng: Random) -> Params:
        half = self.scale / 2
        return {
            "perspective": rng.bernoulli(self.probability),
            **{name: rng.uniform(-half, half) for name in MOVES},
        }

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if min(size) < 2:
            return [
                f"type: keras_perspective needs outputs of at least 2x2 pixels, got {list(size)}"
            ]
        return []

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The destination-to-source map: the moved corners onto the image's corners."""
        far_x, far_y = size[1] - 1.0, size[0] - 1.0

        def moved(far: float, name: str) -> Scalar:
            return add(far, mul(far, p[name]))

        x = [0.0, moved(far_x, "tr_x"), moved(far_x, "br_x"), 0.0]
        y = [0.0, 0.0, moved(far_y, "br_y"), moved(far_y, "bl_y")]
        return corners_map(x, y, size, p["perspective"])

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        nearest = self.interpolation == "nearest"
        return ops.perspective(images, [p[k] for k in MATRIX], self.fill, nearest)

    def masks(self, masks: Any, p: Params, ops: Kernels, fill: float) -> Any:
        return ops.perspective(masks, [p[k] for k in MATRIX], fill, True)

    def points(self, xy: np.ndarray, p: Params) -> np.ndarray:
        return projected(xy, p)
