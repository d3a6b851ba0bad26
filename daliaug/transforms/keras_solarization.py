"""Keras' ``Solarization``: a random addition, then values at or above a random threshold
inverted."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import Random
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, ordered

ValueRange = Annotated[tuple[float, float], AfterValidator(ordered), bounded(0.0, 255.0, "values")]


class KerasSolarization(PixelTransform):
    """Per sample ``a ~ U(addition)`` and ``t ~ U(threshold)`` (0..255 values); per pixel
    ``y = clip(x + a, 0, 255)``, then ``255 - y`` where ``y >= t``, else ``y``: Keras'
    ``Solarization``, which draws ``a ~ U(a0, 255 * a1)`` and ``t ~ U(t0, 255 * t1)`` from its
    ``addition_factor`` ``(a0, a1)`` and ``threshold_factor`` ``(t0, t1)`` (its code scales only
    the upper bound: pass those ranges here). ``solarize`` is the fixed-threshold, PIL form.

    Example: ``{"type": "keras_solarization", "threshold": [0, 128]}``."""

    type: Literal["keras_solarization"] = "keras_solarization"
    addition: ValueRange = (0.0, 0.0)
    threshold: ValueRange = (0.0, 0.0)

    params: ClassVar[tuple[str, ...]] = ("addition", "threshold")

    def draw(self, rng: Random) -> Params:
        return {"addition": rng.uniform(*self.addition), "threshold": rng.uniform(*self.threshold)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.solarize(ops.add_clipped(images, p["addition"]), p["threshold"])
