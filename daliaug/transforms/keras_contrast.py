"""Keras' ``RandomContrast``: stretch each channel about its own mean over the image."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import ColourMatrix, Math
from daliaug.transforms.base import FactorTransform, Params


class KerasContrast(FactorTransform):
    """``out = factor * (in - mean) + mean``, ``factor ~ U(factor)``, ``mean`` each channel's
    mean over the whole image this step receives (after the warp and the colour steps before
    it), then clipped to 0..255 with the colour pass: Keras' ``RandomContrast``. A single
    number ``d`` means ``[max(0, 1 - d), 1 + d]``; Keras' ``factor=(a, b)`` is
    ``[1 - a, 1 + b]`` here. (``contrast`` stretches about the fixed mid-grey 128.)"""

    type: Literal["keras_contrast"] = "keras_contrast"
    uses_mean: ClassVar[bool] = True

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return ColourMatrix.about_mean(p["factor"], channels)
