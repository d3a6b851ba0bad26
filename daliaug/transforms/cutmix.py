"""CutMix: a box of each sample replaced by the same box of a partner from its batch, its label
mixed by the area actually pasted (Yun et al. 2019)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Math, Random, add, div, mul, sub
from daliaug.kernels import Kernels
from daliaug.transforms.base import BOXES_CUT, BatchTransform, Effects, Params, Refuses


class PastedBox(BatchTransform):
    """A batch stage that pastes a box of each sample's partner (its stage gives ``y0``,
    ``x0``, ``h``, ``w`` within the image) and weighs the labels by the sample's ``weight``;
    masks get the same box."""

    stage_params: ClassVar[tuple[str, ...] | None] = ("partner", "y0", "x0", "h", "w", "weight")
    effects: ClassVar[Effects] = Effects(
        masks="follows", boxes=Refuses(BOXES_CUT), keypoints=Refuses(BOXES_CUT)
    )

    def images(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.paste(images, p["partner"], p["y0"], p["x0"], p["h"], p["w"])

    def targets(self, targets: Any, p: Params, ops: Kernels, masks: bool) -> Any:
        if masks:
            return ops.paste(targets, p["partner"], p["y0"], p["x0"], p["h"], p["w"])
        return ops.mix(targets, p["partner"], p["weight"])


class CutMix(PastedBox):
    """With ``lam ~ Beta(alpha, alpha)`` per sample, a box of ``round(H * sqrt(1 - lam))`` by
    ``round(W * sqrt(1 - lam))`` output pixels centred on the pixel ``(floor(y * H), floor(x *
    W))``, ``y, x ~ U[0, 1)``, cut by the image's border, is replaced by the same box of the
    partner (a random permutation of the batch's real samples: padding is never a partner);
    the label becomes ``weight * y + (1 - weight) * y[partner]`` with ``weight = 1 - h * w / (H
    * W)`` of the box actually pasted, so pixels and labels agree exactly (Keras' ``CutMix``
    and torchvision's ``CutMix`` also recompute the weight from the cut box). Segmentation
    masks get the same box of the partner's mask. Needs soft labels: ``label_mode``
    categorical or binary.

    Example: ``{"type": "cutmix", "alpha": 1.0}``."""

    type: Literal["cutmix"] = "cutmix"
    alpha: Annotated[float, Field(gt=0.0, le=1000.0)] = 1.0

    params: ClassVar[tuple[str, ...]] = ("partner", "lam", "y", "x")

    def draw(self, rng: Random) -> Params:
        return {
            "partner": rng.uniform(0.0, 1.0),
            "lam": rng.beta(self.alpha, self.alpha),
            "y": rng.uniform(0.0, 1.0),
            "x": rng.uniform(0.0, 1.0),
        }

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The box in output pixels, cut to the image, and the sample's own label weight."""
        cut = m.sqrt(m.maximum(sub(1.0, p["lam"]), 0.0))
        box: dict[str, Any] = {}
        for axis, side in zip("yx", size, strict=True):
            length = m.round(mul(cut, float(side)))
            centre = m.minimum(m.floor(mul(p[axis], float(side))), side - 1.0)
            start = sub(centre, m.floor(mul(length, 0.5)))
            low = m.maximum(start, 0.0)
            box[axis] = (low, sub(m.minimum(add(start, length), float(side)), low))
        (y0, h), (x0, w) = box["y"], box["x"]
        weight = sub(1.0, div(mul(h, w), float(size[0] * size[1])))
        return {"partner": p["partner"], "y0": y0, "x0": x0, "h": h, "w": w, "weight": weight}
