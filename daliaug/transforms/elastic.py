"""Elastic distortion: each image resampled through a smooth random displacement field (Keras'
``RandomElasticTransform``), the field drawn on the host at low resolution."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from daliaug.algebra import Math, Random, Scalar, add, mul
from daliaug.fields import NumberOrRange, as_float, bounded, is_number
from daliaug.kernels import Kernels
from daliaug.transforms.base import (
    Effects,
    Params,
    PixelTransform,
    Probability,
    Refuses,
    ordered,
)

GRID = 24
"""The field's nodes per axis: a periodic ``GRID x GRID`` grid, one node every ``sigma``."""
NODES = tuple(f"n{k}" for k in range(GRID * GRID))
"""The field's node values, row by row (unit variance before the amplitude)."""
TAPS = tuple(math.exp(-(t**2) / 2) for t in range(-3, 4))
"""A Gaussian of one node's width, cut at three."""
WEIGHTS = tuple(w / math.sqrt(sum(v * v for v in TAPS)) for w in TAPS)
""":data:`TAPS` scaled so that the smoothed white noise keeps unit variance."""
ALPHA, SIGMA = 0.1, 0.05
"""Keras' amplitude ``alpha = 0.1 * scale * max(H, W)`` and blur ``sigma = 0.05 * scale *
min(H, W)`` (pixels)."""
NODE_STD = 1.0 / (2.0 * math.sqrt(math.pi) * (2.0 + math.exp(-0.25)) / 3.0)
"""The nodes' standard deviation in units of ``alpha``: Keras' field's, ``1 / (2 sqrt(pi))``
(white noise of standard deviation ``sigma`` blurred by a Gaussian of ``sigma``), over the
mean standard deviation of bilinear interpolation between nodes correlated ``exp(-1/4)``
(``(2 + exp(-1/4)) / 3`` per axis), so that the interpolated field has Keras' on average."""


def _from_zero(v: Any) -> Any:
    """A single number ``s`` means the range ``[0, s]`` (Keras' ``scale``)."""
    return (0.0, abs(as_float(v))) if is_number(v) else v


ScaleRange = Annotated[
    tuple[float, float],
    BeforeValidator(_from_zero, json_schema_input_type=NumberOrRange),
    AfterValidator(ordered),
    bounded(0.0, 1.0, "scales"),
]
Fill = Annotated[float, Field(ge=0.0, le=255.0)] | Literal["nearest", "reflect"]


class Elastic(PixelTransform):
    """When ``elastic ~ Bernoulli(probability)`` is 1, output pixel ``(x, y)`` takes the image
    at ``(x + d, y + d)``, where ``d(x, y)`` is a smooth Gaussian random field: Keras'
    ``RandomElasticTransform`` with ``factor`` (its mean as ``probability``) and ``scale``.
    Keras blurs white noise of standard deviation ``sigma`` with a Gaussian of ``sigma = 0.05
    * s * min(H, W)`` and multiplies it by ``alpha = 0.1 * s * max(H, W)``, ``s ~ U(scale)``
    (one per batch in Keras, per image here), and moves both axes by that one field (it draws
    them with one seed). Here the field is drawn on the host at low resolution: a periodic
    ``24 x 24`` grid of nodes, one every ``sigma`` pixels (at least 1), of white noise blurred
    by a Gaussian of one node (so neighbouring nodes correlate as Keras' field does at
    ``sigma``), interpolated bilinearly between nodes and scaled so that its mean standard
    deviation is Keras' ``alpha / (2 sqrt(pi))`` (:data:`NODE_STD`); it repeats every ``24
    sigma`` pixels (``1.2 s min(H, W)``). Keras' own field fades near the border (its blur
    pads with zeros), is some 5% stronger where ``sigma`` is a few pixels (its kernel, cut at
    ``3 int(sigma)``), and where ``sigma < 1`` is unblurred per-pixel noise. The image is
    resampled once (``interpolation``), outside the image ``fill``: a constant on the 0..255
    scale, ``"nearest"`` or Keras' default ``"reflect"``. Segmentation masks follow (nearest;
    a constant fill is the source's ``mask_fill``). DALI's ``remap`` runs it on the GPU only:
    without one, ``backend: auto`` runs the TensorFlow engine (with a ``BackendWarning`` where
    DALI's CPU operators would have been chosen).

    Example: ``{"type": "elastic", "scale": 0.5, "probability": 1.0}``."""

    type: Literal["elastic"] = "elastic"
    scale: ScaleRange = (0.0, 1.0)
    probability: Probability = 0.5
    fill: Fill = "reflect"
    interpolation: Literal["bilinear", "nearest"] = "bilinear"

    params: ClassVar[tuple[str, ...]] = ("elastic", "scale", *NODES)
    stage_params: ClassVar[tuple[str, ...] | None] = ("spacing", "height", "width", *NODES)
    vector_stage: ClassVar[bool] = True
    effects: ClassVar[Effects] = Effects(
        masks="follows",
        boxes=Refuses("displaces pixels by a field that no box can follow"),
        keypoints=Refuses("displaces pixels by a field whose inverse daliaug does not compute"),
    )
    dali_lacks: ClassVar[dict[str, str]] = {
        "cpu": "DALI's fn.experimental.remap runs on the GPU only"
    }

    def draw(self, rng: Random) -> Params:
        nodes = _smoothed(_smoothed([rng.normal() for _ in NODES]))
        return {
            "elastic": rng.bernoulli(self.probability),
            "scale": rng.uniform(*self.scale),
            **dict(zip(NODES, nodes, strict=True)),
        }

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The node spacing in pixels, the output's size (DALI's kernel takes it from here) and
        the nodes' shifts in pixels (0 where not drawn)."""
        amplitude = ALPHA * max(size) * NODE_STD
        shift = mul(p["elastic"], mul(p["scale"], amplitude))
        spacing = m.maximum(mul(p["scale"], SIGMA * min(size)), 1.0)
        nodes = {name: mul(shift, p[name]) for name in NODES}
        return {"spacing": spacing, "height": float(size[0]), "width": float(size[1]), **nodes}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        nearest = self.interpolation == "nearest"
        return ops.elastic(images, p["values"], GRID, self.fill, nearest)

    def masks(self, masks: Any, p: Params, ops: Kernels, fill: float) -> Any:
        mode = self.fill if isinstance(self.fill, str) else fill
        return ops.elastic(masks, p["values"], GRID, mode, True)


def _smoothed(values: list[Scalar]) -> list[Scalar]:
    """A ``GRID x GRID`` grid (row by row) blurred along its rows, periodically, by
    :data:`WEIGHTS`, and transposed: two passes blur both axes and give the grid back."""
    out = []
    for col in range(GRID):
        for row in range(GRID):
            total: Scalar = 0.0
            for t, w in enumerate(WEIGHTS):
                total = add(total, mul(w, values[row * GRID + (col + t - 3) % GRID]))
            out.append(total)
    return out
