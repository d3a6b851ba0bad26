"""Keras' ``CutMix``: a box inside each sample replaced by the same box of a partner from its
batch, its label mixed by the area pasted."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import Math, Random, Scalar, add, div, mul, neg, sub
from daliaug.fields import bounded
from daliaug.transforms.base import Params, ordered
from daliaug.transforms.cutmix import PastedBox

ALPHA_OFFSET = 1e-6
"""Keras adds it to the drawn ``alpha`` (so that ``alpha`` 0 still is a Beta parameter)."""


def pixel_span(fraction: Scalar, u: Scalar, side: int, m: Math) -> tuple[Scalar, Scalar]:
    """Keras' box along one side of ``side`` pixels: ``length = fraction * side`` and ``start =
    u * (side - length)`` (real-valued, float32 as Keras), holding the pixels ``i`` with
    ``start <= i < start + length``: the first of them, ``ceil(start)``, and their count."""
    length = mul(fraction, float(side))
    start = mul(u, sub(float(side), length))
    first = neg(m.floor(neg(start)))
    end = m.minimum(neg(m.floor(neg(add(start, length)))), float(side))
    return first, sub(end, first)


class KerasCutMix(PastedBox):
    """Per sample ``alpha ~ U(factor) + 1e-6`` and ``lam ~ Beta(alpha, alpha)``; the box is
    ``sqrt(1 - lam)`` of each side long (real-valued), its corner ``u * (side - length)`` with
    ``u ~ U[0, 1)`` per axis, so it lies inside the image; the pixels whose index ``i`` has
    ``start <= i < start + length`` on both axes take the partner's (a random permutation of
    the batch's real samples: padding is never a partner): Keras' ``CutMix`` (which draws
    ``alpha`` once per batch). The label becomes ``weight * y + (1 - weight) * y[partner]``
    with ``weight`` one minus the fraction of pixels pasted (Keras weighs by the real-valued
    box's area, ``lam`` itself: a difference below ``(h + w + 1) / (H * W)``). Segmentation
    masks get the same box of the partner's mask. Needs soft labels: ``label_mode``
    categorical or binary. ``cutmix`` is the torchvision form.

    Example: ``{"type": "keras_cutmix", "factor": [0.0, 1.0]}``."""

    type: Literal["keras_cutmix"] = "keras_cutmix"
    factor: Annotated[
        tuple[float, float], AfterValidator(ordered), bounded(0.0, 1.0, "alpha factors")
    ] = (0.0, 1.0)

    params: ClassVar[tuple[str, ...]] = ("partner", "lam", "x", "y")

    def draw(self, rng: Random) -> Params:
        alpha = add(rng.uniform(*self.factor), ALPHA_OFFSET)
        return {
            "partner": rng.uniform(0.0, 1.0),
            "lam": rng.beta(alpha, alpha),
            "x": rng.uniform(0.0, 1.0),
            "y": rng.uniform(0.0, 1.0),
        }

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The pixels of Keras' box (whole pixels from ``ceil(start)`` to ``ceil(end)``) and
        the sample's own label weight."""
        ratio = m.sqrt(m.maximum(sub(1.0, p["lam"]), 0.0))
        y0, h = pixel_span(ratio, p["y"], size[0], m)
        x0, w = pixel_span(ratio, p["x"], size[1], m)
        weight = sub(1.0, div(mul(h, w), float(size[0] * size[1])))
        return {"partner": p["partner"], "y0": y0, "x0": x0, "h": h, "w": w, "weight": weight}
