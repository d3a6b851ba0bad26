"""MixUp: each sample blended with a partner from its batch, its label blended alike (its
boxes joined with the partner's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import BatchTransform, Effects, Params

if TYPE_CHECKING:
    from daliaug.boxes import Rules, Targets


class MixUp(BatchTransform):
    """``x = lam * x + (1 - lam) * x[partner]`` and ``y = lam * y + (1 - lam) * y[partner]``
        with ``lam ~ Beta(alpha, alpha)`` per sample and the partners a random permutation of the
        batch's real samples (Zhang et al. 2018; Keras' ``MixUp`` draws one ``lam`` per sample the
        same way). Class labels need soft targets (``label_mode`` categorical or binary); detection
    boxes are joined (each image keeps its own and gains its partner's); refused for masks.

        Example: ``{"type": "mixup", "alpha": 0.2}``."""

    type: Literal["mixup"] = "mixup"
    alpha: Annotated[float, Field(gt=0.0, le=1000.0)] = 0.2

    params: ClassVar[tuple[str, ...]] = ("partner", "lam")
    effects: ClassVar[Effects] = Effects(
        masks=BatchTransform.effects.masks, boxes="follows", keypoints="follows"
    )

    def draw(self, rng: Random) -> Params:
        return {"partner": rng.uniform(0.0, 1.0), "lam": rng.beta(self.alpha, self.alpha)}

    def images(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.mix(images, p["partner"], p["lam"])

    def targets(self, targets: Any, p: Params, ops: Kernels, masks: bool) -> Any:
        return ops.mix(targets, p["partner"], p["lam"])

    def boxes(self, targets: Targets, p: Params, size: tuple[int, int], rules: Rules) -> Targets:
        """Each image keeps its boxes and gets its partner's (Keras' ``MixUp``)."""
        return targets.joined(targets.gather(p["partner"]))
