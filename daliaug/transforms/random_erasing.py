"""Random erasing: one box per sample filled with a value (Zhong et al. 2020)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from daliaug.algebra import Math, Random, add, div, mul, sub
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import (
    MAX_FACTOR,
    Params,
    PixelTransform,
    PositiveRange,
    Probability,
    ordered,
)

Level = Annotated[float, Field(ge=0.0, le=255.0)]


class RandomErasing(PixelTransform):
    """When ``erase ~ Bernoulli(probability)`` is 1, a box of the output image is set to
    ``value``: its area ``area * H * W`` with ``area ~ U(scale)``, its aspect ratio (height
    over width) ``exp(log_ratio)`` with ``log_ratio ~ U(log ratio)``, so ``h = round(sqrt(area
    * H * W * r))`` and ``w = round(sqrt(area * H * W / r))``, each cut to the image's side; its
    corner ``y0 = floor(y * (H - h + 1))``, ``x0 = floor(x * (W - w + 1))`` with ``y, x ~
    U[0, 1)``. ``value``: a number (every channel), one number per channel, or ``"random"``
    (one level ``fill ~ U[0, 255)`` per sample, on every channel).

    torchvision's ``RandomErasing`` (whose ``scale`` and ``ratio`` these are) redraws up to 10
    times when the box does not fit and then erases nothing; daliaug draws once and cuts the
    box to the image. Its ``value="random"`` (and Keras' ``RandomErasing`` default) fills with
    per-pixel normal noise; daliaug's random fill is one level per sample.

    Example: ``{"type": "random_erasing", "probability": 0.5, "scale": [0.02, 0.33]}``."""

    type: Literal["random_erasing"] = "random_erasing"
    probability: Probability = 0.5
    scale: Annotated[
        tuple[float, float], AfterValidator(ordered), bounded(0.0, 1.0, "area fractions")
    ] = (0.02, 0.33)
    ratio: Annotated[PositiveRange, bounded(1 / MAX_FACTOR, MAX_FACTOR, "aspect ratios")] = (
        0.3,
        3.3,
    )
    value: Level | tuple[Level, ...] | Literal["random"] = 0.0

    params: ClassVar[tuple[str, ...]] = ("erase", "area", "log_ratio", "y", "x", "fill")
    stage_params: ClassVar[tuple[str, ...] | None] = ("y0", "x0", "h", "w", "fill")

    def draw(self, rng: Random) -> Params:
        return {
            "erase": rng.bernoulli(self.probability),
            "area": rng.uniform(*self.scale),
            "log_ratio": rng.uniform(math.log(self.ratio[0]), math.log(self.ratio[1])),
            "y": rng.uniform(0.0, 1.0),
            "x": rng.uniform(0.0, 1.0),
            "fill": rng.uniform(0.0, 255.0),
        }

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if isinstance(self.value, tuple) and len(self.value) not in (1, channels):
            return [f"value: {len(self.value)} values for {channels} channels"]
        return []

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The box in output pixels (``h``, ``w`` 0 when not erasing) and the random fill."""
        height, width = (float(s) for s in size)
        area = mul(p["area"], height * width)
        ratio = m.exp(p["log_ratio"])
        h = mul(m.minimum(m.round(m.sqrt(mul(area, ratio))), height), p["erase"])
        w = mul(m.minimum(m.round(m.sqrt(div(area, ratio))), width), p["erase"])
        y0 = m.floor(mul(p["y"], add(sub(height, h), 1.0)))
        x0 = m.floor(mul(p["x"], add(sub(width, w), 1.0)))
        return {"y0": y0, "x0": x0, "h": h, "w": w, "fill": p["fill"]}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.erase(images, p["y0"], p["x0"], p["h"], p["w"], self._fill(p))

    def _fill(self, p: Params) -> list[Any]:
        if self.value == "random":
            return [p["fill"]]
        return list(self.value) if isinstance(self.value, tuple) else [self.value]
