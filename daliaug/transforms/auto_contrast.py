"""Auto contrast: each channel stretched to the full range, for a random share of the samples."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability


class AutoContrast(PixelTransform):
    """Each channel mapped linearly from its own ``[min, max]`` to ``[0, 255]`` (a flat channel
    unchanged) when ``auto_contrast ~ Bernoulli(probability)`` is 1, else ``out = in`` (PIL's
    ``ImageOps.autocontrast`` without cutoff and before its truncation to ``uint8``,
    torchvision's ``RandomAutocontrast``; Keras' ``AutoContrast`` applied to a ``probability``
    share).

    Example: ``{"type": "auto_contrast", "probability": 0.5}``."""

    type: Literal["auto_contrast"] = "auto_contrast"
    probability: Probability = 0.5

    params: ClassVar[tuple[str, ...]] = ("auto_contrast",)

    def draw(self, rng: Random) -> Params:
        return {"auto_contrast": rng.bernoulli(self.probability)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.select(p["auto_contrast"], ops.auto_contrast, images)
