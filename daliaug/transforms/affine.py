"""torchvision's ``RandomAffine``: rotation, whole-pixel translation, scale and shear in one map
about the canvas centre."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from daliaug.algebra import Affine, Canvas, Math, Random, Scalar, add, div, mul, neg, sub
from daliaug.fields import bounded
from daliaug.transforms.base import (
    MAX_FACTOR,
    AngleRange,
    Fill,
    GeometricTransform,
    Params,
    ordered,
    radians,
)

ShearRange = Annotated[
    tuple[float, float], AfterValidator(ordered), bounded(-80.0, 80.0, "shear angles")
]
"""A shear range in degrees (within ±80: ``tan`` of the angle stays finite)."""


class RandomAffine(GeometricTransform):
    """Per sample ``angle ~ U(degrees)``, a translation of ``round(U(±translate[0]·W))``
    and ``round(U(±translate[1]·H))`` whole pixels, ``s ~ U(scale)``, shears ``sx ~
    U(shear_x)``, ``sy ~ U(shear_y)`` degrees; the map is torchvision's ``affine``: ``x' = T +
    C + s·R(angle)·SHy(sy)·SHx(sx)·(x − C)`` about the canvas centre ``C`` (positive angles
    turn counter-clockwise, as torchvision's). Revealed area takes ``fill``.

    Example: ``{"type": "random_affine", "degrees": 15, "translate": [0.1, 0.1], "scale":
    [0.9, 1.1], "shear_x": [-10, 10]}``."""

    type: Literal["random_affine"] = "random_affine"
    degrees: AngleRange = (0.0, 0.0)
    translate: tuple[
        Annotated[float, Field(ge=0.0, le=1.0)], Annotated[float, Field(ge=0.0, le=1.0)]
    ] = (0.0, 0.0)
    scale: Annotated[
        tuple[float, float],
        AfterValidator(ordered),
        bounded(1.0 / MAX_FACTOR, MAX_FACTOR, "scales"),
    ] = (1.0, 1.0)
    shear_x: ShearRange = (0.0, 0.0)
    shear_y: ShearRange = (0.0, 0.0)
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = ("angle", "tx", "ty", "scale", "shear_x", "shear_y")
    axis_aligned: ClassVar[bool] = False

    def draw(self, rng: Random) -> Params:
        """The translations as fractions ``U(-1, 1)`` of their bound (the side is the
        canvas', known at :meth:`warp`)."""
        return {
            "angle": rng.uniform(*self.degrees),
            "tx": rng.uniform(-1.0, 1.0),
            "ty": rng.uniform(-1.0, 1.0),
            "scale": rng.uniform(*self.scale),
            "shear_x": rng.uniform(*self.shear_x),
            "shear_y": rng.uniform(*self.shear_y),
        }

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        tx = m.round(mul(p["tx"], mul(canvas.w, self.translate[0])))
        ty = m.round(mul(p["ty"], mul(canvas.h, self.translate[1])))
        linear = rotate_scale_shear(p["angle"], p["scale"], p["shear_x"], p["shear_y"], m)
        about = Affine.about(mul(canvas.w, 0.5), mul(canvas.h, 0.5), linear)
        return Affine.translate(tx, ty).then_after(about), canvas


def rotate_scale_shear(
    angle: Scalar, scale: Scalar, shear_x: Scalar, shear_y: Scalar, m: Math
) -> tuple[Scalar, Scalar, Scalar, Scalar]:
    """torchvision's ``RotateScaleShear`` (``_get_inverse_affine_matrix``), ``(a, b, d, e)``
    of the forward map in image coordinates (y down)."""
    rot, sx, sy = radians(angle), radians(shear_x), radians(shear_y)
    cos_sy = m.cos(sy)
    tan_sx = m.tan(sx)
    cos_rs, sin_rs = m.cos(sub(rot, sy)), m.sin(sub(rot, sy))
    a = div(cos_rs, cos_sy)
    b = sub(neg(div(mul(cos_rs, tan_sx), cos_sy)), m.sin(rot))
    c = div(sin_rs, cos_sy)
    d = add(neg(div(mul(sin_rs, tan_sx), cos_sy)), m.cos(rot))
    return mul(a, scale), mul(b, scale), mul(c, scale), mul(d, scale)
