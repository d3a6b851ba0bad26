"""TrivialAugment Wide: one operation per sample at a uniformly drawn magnitude."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Random, Scalar
from daliaug.transforms.policy import RAND_AUGMENT_OPS, PolicyTransform, magnitudes, one_hot, signed


class TrivialAugment(PolicyTransform):
    """torchvision's ``TrivialAugmentWide`` (Müller and Hutter 2021): one of the fourteen
    RandAugment operations chosen uniformly per sample, its magnitude one of
    ``num_magnitude_bins`` bins of the *wide* tables drawn uniformly (shear 0.99, translate 32
    pixels, rotate 135 degrees, enhancements 0.99, posterize 8..2 bits), with a random sign
    for the signed ops. See :mod:`daliaug.transforms.policy` for the stages it contributes to.

    Example: ``{"type": "trivial_augment"}``."""

    type: Literal["trivial_augment"] = "trivial_augment"
    num_magnitude_bins: Annotated[int, Field(ge=2, le=101)] = 31

    wide: ClassVar[bool] = True

    @property
    def operations(self) -> tuple[str, ...]:
        return RAND_AUGMENT_OPS

    @property
    def slots(self) -> int:
        return 1

    def draw_slots(self, rng: Random) -> list[dict[str, tuple[Scalar, Scalar]]]:
        flags = one_hot(rng, len(RAND_AUGMENT_OPS))
        slot = {}
        for op, flag in zip(RAND_AUGMENT_OPS, flags, strict=True):
            table = magnitudes(op, self.num_magnitude_bins, wide=True)
            slot[op] = (flag, signed(rng, op, rng.choice(table)))
        return [slot]
