"""Keras' ``ImageDataGenerator`` random affine: rotation, shifts, shear, zoom and flips, drawn,
composed and centred as ``ImageDataGenerator`` does (its quirks optional)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, field_validator

from daliaug.algebra import Affine, Canvas, Math, Random, Scalar, mul, neg, sub
from daliaug.fields import MAX_SIDE, STRICT, NumberOrRange, as_float, is_number
from daliaug.transforms.base import (
    MAX_DEGREES,
    ZOOMS,
    Fill,
    GeometricTransform,
    Params,
    ordered,
    radians,
)


class ShiftRange(BaseModel):
    """A shift range as ``ImageDataGenerator`` reads ``width_shift_range``: ``U(-range, range)``
    for a number, or one of the ``range`` values times a random sign for a list; ``pixels``, or
    a fraction of the image side."""

    model_config = STRICT

    range: float | tuple[float, ...] = 0.0
    pixels: bool = False

    @field_validator("range")
    @classmethod
    def _within_a_side(cls, v: float | tuple[float, ...]) -> float | tuple[float, ...]:
        if max(map(abs, v if isinstance(v, tuple) else (v,)), default=0.0) > MAX_SIDE:
            raise ValueError(f"shifts must lie within [-{MAX_SIDE}, {MAX_SIDE}] pixels")
        return v

    def draw(self, rng: Random) -> Scalar:
        if isinstance(self.range, tuple):
            return mul(rng.choice(self.range), rng.choice([-1.0, 1.0]))
        return rng.uniform(-abs(self.range), abs(self.range))


def keras_shift(v: Any) -> Any:
    """Keras' reading of a shift range: nothing for a false value; an integer ``n`` picks whole
    pixels from ``0..n-1``; a list picks one of its values; a number draws uniformly; in pixels
    when the largest value is at least 1, else as a fraction of the side."""
    v = v.tolist() if isinstance(v, np.ndarray) else v
    values = v if isinstance(v, (list, tuple)) else [v]
    if isinstance(v, (Mapping, ShiftRange)) or not all(map(is_number, values)):
        return v  # the model says what is wrong with anything else
    floats = [as_float(x) for x in values]
    if max(map(abs, floats), default=0.0) > MAX_SIDE:
        raise ValueError(f"shifts must lie within [-{MAX_SIDE}, {MAX_SIDE}] pixels")
    if isinstance(v, (list, tuple)):
        return {"range": floats, "pixels": bool(floats) and max(floats) >= 1} if floats else {}
    if isinstance(v, (int, np.integer)) and v > 0:
        return {"range": [float(x) for x in range(int(v))], "pixels": True}
    return {"range": floats[0], "pixels": floats[0] >= 1}


def keras_zoom(v: Any) -> Any:
    """Keras' ``zoom_range``: a number ``z`` means ``[1 - z, 1 + z]``."""
    if is_number(v):
        return (1.0 - as_float(v), 1.0 + as_float(v))
    return v


Shift = Annotated[
    ShiftRange,
    BeforeValidator(keras_shift, json_schema_input_type=float | list[float] | ShiftRange),
]
ZoomRange = Annotated[
    tuple[float, float],
    BeforeValidator(keras_zoom, json_schema_input_type=NumberOrRange),
    AfterValidator(ordered),
    ZOOMS,
]


class KerasAffine(GeometricTransform):
    """``ImageDataGenerator``'s geometry, field for field: ``theta ~ U(±rotation_range)``
    degrees, shifts from ``width_shift_range`` / ``height_shift_range`` (Keras' reading: see
    :func:`keras_shift`), ``shear ~ U(±shear_range)`` degrees, ``zx, zy ~ U(zoom_range)``
    drawn apart (a number ``z`` means ``[1 - z, 1 + z]``; ``> 1`` shrinks the content, the
    inverse of ``zoom``; unlike Keras, the factors must lie within [0.01, 100], as a zoom of 0
    has no inverse), and each flip with probability 0.5 when enabled.

    As Keras' ``apply_affine_transform``, each output point ``p`` samples the source at
    ``c + R(theta) (T(tx, ty) + Sh(shear) Z(zx, zy) (p - c))`` with ``R`` turning the content
    counter-clockwise, ``Sh = [[1, -sin], [0, cos]]`` and ``Z = diag(zx, zy)``, then flips the
    result (``x' = W - x``, ``y' = H - y``). With ``keras_quirks`` (default) the centre ``c`` is
    ``(H/2, W/2)`` in ``(x, y)``, and ``tx`` (columns) comes from ``height_shift_range`` as a
    fraction of ``H``, ``ty`` (rows) from ``width_shift_range`` as a fraction of ``W``, exactly as
    Keras 3's class does; without, ``c = (W/2, H/2)`` and each range moves along its own axis.
    Without a rotation or shear range the map only shifts, zooms and flips (``axis_aligned``).
    """

    type: Literal["keras_affine"] = "keras_affine"
    rotation_range: Annotated[float, Field(ge=-MAX_DEGREES, le=MAX_DEGREES)] = 0.0
    width_shift_range: Shift = ShiftRange()
    height_shift_range: Shift = ShiftRange()
    shear_range: Annotated[float, Field(gt=-90.0, lt=90.0)] = 0.0
    zoom_range: ZoomRange = (1.0, 1.0)
    horizontal_flip: bool = False
    vertical_flip: bool = False
    keras_quirks: bool = True
    fill: Fill = 0.0

    params: ClassVar[tuple[str, ...]] = (
        "theta",
        "tx",
        "ty",
        "shear",
        "zx",
        "zy",
        "flip_horizontal",
        "flip_vertical",
    )

    @property
    def axis_aligned(self) -> bool:  # type: ignore[override]
        """Without a rotation or shear range the map only shifts, zooms and flips."""
        return not self.rotation_range and not self.shear_range

    def _shifts(self) -> tuple[tuple[ShiftRange, int], tuple[ShiftRange, int]]:
        """``(range, side)`` of ``tx`` and of ``ty``; ``side`` indexes ``(h, w)``."""
        if self.keras_quirks:
            return (self.height_shift_range, 0), (self.width_shift_range, 1)
        return (self.width_shift_range, 1), (self.height_shift_range, 0)

    def draw(self, rng: Random) -> Params:
        (x_range, _), (y_range, _) = self._shifts()
        zoom = 1.0 if self.zoom_range == (1.0, 1.0) else None
        return {
            "theta": rng.uniform(-abs(self.rotation_range), abs(self.rotation_range)),
            "tx": x_range.draw(rng),
            "ty": y_range.draw(rng),
            "shear": rng.uniform(-abs(self.shear_range), abs(self.shear_range)),
            "zx": zoom or rng.uniform(*self.zoom_range),
            "zy": zoom or rng.uniform(*self.zoom_range),
            "flip_horizontal": rng.bernoulli(0.5 if self.horizontal_flip else 0.0),
            "flip_vertical": rng.bernoulli(0.5 if self.vertical_flip else 0.0),
        }

    def pixel_shifts(self, p: Params, canvas: Canvas) -> tuple[Scalar, Scalar]:
        """``tx`` and ``ty`` of ``p`` in pixels on ``canvas``."""
        out = []
        for (shift, side), key in zip(self._shifts(), ("tx", "ty"), strict=True):
            out.append(p[key] if shift.pixels else mul(p[key], canvas[side]))
        return out[0], out[1]

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        h, w = canvas
        cx, cy = (mul(h, 0.5), mul(w, 0.5)) if self.keras_quirks else (mul(w, 0.5), mul(h, 0.5))
        theta, shear = radians(p["theta"]), radians(p["shear"])
        cos, sin = m.cos(theta), m.sin(theta)
        tx, ty = self.pixel_shifts(p, canvas)
        sampled = (  # output point -> source point, as Keras' matrix
            Affine.translate(cx, cy)
            .then_after(Affine(a=cos, b=neg(sin), d=sin, e=cos))
            .then_after(Affine.translate(tx, ty))
            .then_after(Affine(b=neg(m.sin(shear)), e=m.cos(shear)))
            .then_after(Affine.scale(p["zx"], p["zy"]))
            .then_after(Affine.translate(neg(cx), neg(cy)))
        )
        fx, fy = p["flip_horizontal"], p["flip_vertical"]
        flip = Affine(
            a=sub(1.0, mul(fx, 2.0)), c=mul(fx, w), e=sub(1.0, mul(fy, 2.0)), f=mul(fy, h)
        )
        return flip.then_after(sampled.inverse()), canvas

    def to_keras(self, p: Mapping[str, float], shape: Sequence[int]) -> dict[str, Any]:
        """One sample's parameters as Keras' ``transform_parameters`` for an image of
        ``shape`` ``(h, w)``: shifts in pixels, flips as booleans."""
        out: dict[str, Any] = {k: float(p[k]) for k in ("theta", "shear", "zx", "zy")}
        tx, ty = self.pixel_shifts(dict(p), Canvas(float(shape[0]), float(shape[1])))
        out.update(tx=float(tx), ty=float(ty))
        out.update(flip_horizontal=bool(p["flip_horizontal"]))
        out.update(flip_vertical=bool(p["flip_vertical"]))
        return out

    def from_keras(self, keras: Mapping[str, Any], shape: Sequence[int]) -> dict[str, float]:
        """Keras' ``transform_parameters`` (missing keys as Keras defaults them) as this
        transform's parameters for an image of ``shape`` ``(h, w)``."""
        defaults = {"theta": 0.0, "tx": 0.0, "ty": 0.0, "shear": 0.0, "zx": 1.0, "zy": 1.0}
        out = {k: float(keras.get(k, v)) for k, v in defaults.items()}
        for (shift, side), key in zip(self._shifts(), ("tx", "ty"), strict=True):
            out[key] = out[key] if shift.pixels else out[key] / float(shape[side])
        out["flip_horizontal"] = float(bool(keras.get("flip_horizontal", False)))
        out["flip_vertical"] = float(bool(keras.get("flip_vertical", False)))
        return out
