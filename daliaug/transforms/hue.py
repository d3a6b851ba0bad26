"""Hue: rotate the chroma plane of the YIQ colour space."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np

from daliaug.algebra import ColourMatrix, Math, Random, add, mul
from daliaug.transforms.base import AngleRange, ColourTransform, Params, radians

_RGB_TO_YIQ = np.array(
    [[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], dtype=np.float64
)
_YIQ_TO_RGB = np.linalg.inv(_RGB_TO_YIQ)
# hue(t) = YIQ_TO_RGB @ R(t) @ RGB_TO_YIQ with R(t) rotating (I, Q) by t, which expands to
# FIXED + cos(t) * COS + sin(t) * SIN with these constant 3x3 matrices.
_FIXED = np.outer(_YIQ_TO_RGB[:, 0], _RGB_TO_YIQ[0])
_COS = np.outer(_YIQ_TO_RGB[:, 1], _RGB_TO_YIQ[1]) + np.outer(_YIQ_TO_RGB[:, 2], _RGB_TO_YIQ[2])
_SIN = np.outer(_YIQ_TO_RGB[:, 2], _RGB_TO_YIQ[1]) - np.outer(_YIQ_TO_RGB[:, 1], _RGB_TO_YIQ[2])


class Hue(ColourTransform):
    """Rotate hue by ``degrees ~ U(degrees)``: the (I, Q) chroma plane of YIQ turns by that
    angle while luma Y stays. A single number ``a`` means ``[-a, a]``.
    """

    type: Literal["hue"] = "hue"
    degrees: AngleRange

    params: ClassVar[tuple[str, ...]] = ("degrees",)
    needs_rgb: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"degrees": rng.uniform(*self.degrees)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        t = radians(p["degrees"])
        cos, sin = m.cos(t), m.sin(t)
        return ColourMatrix.linear(
            tuple(
                tuple(
                    add(
                        add(float(_FIXED[i, j]), mul(cos, float(_COS[i, j]))),
                        mul(sin, float(_SIN[i, j])),
                    )
                    for j in range(3)
                )
                for i in range(3)
            )
        )
