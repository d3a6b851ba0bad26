"""Perspective: each image seen through a random projective map (torchvision's
``RandomPerspective``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from daliaug.algebra import Math, Random, Scalar, add, div, mul, sub
from daliaug.kernels import Kernels
from daliaug.transforms.base import Effects, Params, PixelTransform, Probability

CORNERS = ("tl_x", "tl_y", "tr_x", "tr_y", "br_x", "br_y", "bl_x", "bl_y")
"""The corners' inward offsets, each drawn as a fraction of its largest value."""
MATRIX = tuple(f"m{k}" for k in range(8))
"""The destination-to-source map ``[[m0, m1, m2], [m3, m4, m5], [m6, m7, 1]]``."""


class Perspective(PixelTransform):
    """When ``perspective ~ Bernoulli(probability)`` is 1, the output's corners move inward by
    whole pixels, ``floor(u * (d + 1))`` with ``u ~ U[0, 1)`` per corner and axis and ``d =
    floor(distortion_scale * floor(side / 2))``, and the image is resampled (bilinear, ``fill``
    outside) so that its corners land there: the projective map of the image's corner pixel
    centres onto the moved ones (torchvision's ``RandomPerspective``; Keras'
    ``RandomPerspective`` moves each corner point ``p`` to ``p * (1 + U(-scale/2, scale/2))``
    per coordinate: real-valued, outward too, its top-left corner never moves).
    It runs on the warped, recoloured image (a second resampling, after the fused affine warp),
    and segmentation masks follow it (nearest, the source's ``mask_fill``).
    ``distortion_scale`` is below 1 so the corners never meet.

    Example: ``{"type": "perspective", "distortion_scale": 0.5, "probability": 0.5}``."""

    type: Literal["perspective"] = "perspective"
    distortion_scale: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.5
    probability: Probability = 0.5
    fill: Annotated[float, Field(ge=0.0, le=255.0)] = 0.0
    half_pixel: bool = False
    """Evaluate the map half a pixel down and right of each pixel centre and step half a pixel
    back after it, as torchvision's tensor kernel does (PIL's convention)."""

    params: ClassVar[tuple[str, ...]] = ("perspective", *CORNERS)
    stage_params: ClassVar[tuple[str, ...] | None] = MATRIX
    effects: ClassVar[Effects] = Effects.all("follows")

    def draw(self, rng: Random) -> Params:
        return {
            "perspective": rng.bernoulli(self.probability),
            **{name: rng.uniform(0.0, 1.0) for name in CORNERS},
        }

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if min(size) < 2:
            return [f"type: perspective needs outputs of at least 2x2 pixels, got {list(size)}"]
        return []

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The destination-to-source map in pixel-index coordinates (pixel centres at whole
        numbers), the identity when not drawn (:func:`corners_map` of the moved corners)."""
        height, width = size
        reach = {
            "x": self.distortion_scale * (width // 2) // 1,
            "y": self.distortion_scale * (height // 2) // 1,
        }

        def inward(name: str) -> Scalar:
            return m.floor(mul(p[name], reach[name[-1]] + 1.0))

        far_x, far_y = width - 1.0, height - 1.0
        x = [inward("tl_x"), sub(far_x, inward("tr_x")), sub(far_x, inward("br_x")), inward("bl_x")]
        y = [inward("tl_y"), inward("tr_y"), sub(far_y, inward("br_y")), sub(far_y, inward("bl_y"))]
        matrix = corners_map(x, y, size, p["perspective"])
        return half_pixel(matrix) if self.half_pixel else matrix

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.perspective(images, [p[k] for k in MATRIX], self.fill, False)

    def masks(self, masks: Any, p: Params, ops: Kernels, fill: float) -> Any:
        return ops.perspective(masks, [p[k] for k in MATRIX], fill, True)

    def points(self, xy: np.ndarray, p: Params) -> np.ndarray:
        return projected(xy, p)


def projected(xy: np.ndarray, p: Params) -> np.ndarray:
    """Points ``xy`` (``(B, N, 2)``, pixel corners) through the inverse of the per-sample
    destination-to-source map ``p`` (:data:`MATRIX`, pixel indices): where they land."""
    m = np.stack([np.broadcast_to(np.asarray(p[k], np.float64), (len(xy),)) for k in MATRIX], 1)
    forward = np.linalg.inv(np.concatenate([m, np.ones((len(xy), 1))], 1).reshape(-1, 3, 3))
    index = np.concatenate([xy - 0.5, np.ones((*xy.shape[:2], 1))], axis=-1)
    out = np.einsum("bij,bnj->bni", forward, index)
    return (out[..., :2] / out[..., 2:] + 0.5).astype(np.float32)


def half_pixel(p: Params) -> Params:
    """The map ``p`` (:data:`MATRIX`) between coordinates half a pixel on: ``T(-1/2) p
    T(1/2)``, normalized."""
    m = [p[k] for k in MATRIX]
    last = add(mul(add(m[6], m[7]), 0.5), 1.0)
    x = sub(add(mul(add(m[0], m[1]), 0.5), m[2]), mul(last, 0.5))
    y = sub(add(mul(add(m[3], m[4]), 0.5), m[5]), mul(last, 0.5))
    rows = (
        sub(m[0], mul(m[6], 0.5)),
        sub(m[1], mul(m[7], 0.5)),
        x,
        sub(m[3], mul(m[6], 0.5)),
        sub(m[4], mul(m[7], 0.5)),
        y,
        m[6],
        m[7],
    )
    return {name: div(v, last) for name, v in zip(MATRIX, rows, strict=True)}


def corners_map(x: list[Scalar], y: list[Scalar], size: tuple[int, int], on: Scalar) -> Params:
    """The destination-to-source map (:data:`MATRIX`, pixel-index coordinates) taking the
    output points ``(x[k], y[k])``, in the order top-left, top-right, bottom-right,
    bottom-left, onto the corner pixel centres of an image of ``size`` (height, width); the
    identity where ``on`` is 0. The unit square to the points (Heckbert's closed form),
    inverted by its adjugate, then scaled onto the image's corners."""
    height, width = size
    far_x, far_y = width - 1.0, height - 1.0
    a, b, c, d, e, f, g, h = _square_to_quad(x, y)
    adjugate = (
        sub(e, mul(f, h)),
        sub(mul(c, h), b),
        sub(mul(b, f), mul(c, e)),
        sub(mul(f, g), d),
        sub(a, mul(c, g)),
        sub(mul(c, d), mul(a, f)),
        sub(mul(d, h), mul(e, g)),
        sub(mul(b, g), mul(a, h)),
    )
    norm = sub(mul(a, e), mul(b, d))
    scales = (far_x, far_x, far_x, far_y, far_y, far_y, 1.0, 1.0)
    identity = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    return {
        name: add(mul(on, div(mul(v, s), norm)), mul(sub(1.0, on), i))
        for name, v, s, i in zip(MATRIX, adjugate, scales, identity, strict=True)
    }


def _square_to_quad(x: list[Scalar], y: list[Scalar]) -> tuple[Scalar, ...]:
    """``a, b, c, d, e, f, g, h`` of the projective map taking the unit square's corners
    ``(0, 0), (1, 0), (1, 1), (0, 1)`` to ``(x[k], y[k])`` (Heckbert 1989)."""
    sx = add(sub(x[0], x[1]), sub(x[2], x[3]))
    sy = add(sub(y[0], y[1]), sub(y[2], y[3]))
    dx1, dx2 = sub(x[1], x[2]), sub(x[3], x[2])
    dy1, dy2 = sub(y[1], y[2]), sub(y[3], y[2])
    den = sub(mul(dx1, dy2), mul(dx2, dy1))
    g = div(sub(mul(sx, dy2), mul(dx2, sy)), den)
    h = div(sub(mul(dx1, sy), mul(sx, dy1)), den)
    a = add(sub(x[1], x[0]), mul(g, x[1]))
    b = add(sub(x[3], x[0]), mul(h, x[3]))
    d = add(sub(y[1], y[0]), mul(g, y[1]))
    e = add(sub(y[3], y[0]), mul(h, y[3]))
    return a, b, x[0], d, e, y[0], g, h
