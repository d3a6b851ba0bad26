"""AutoAugment: one of a learned policy's sub-policies per sample, two operations each."""

from __future__ import annotations

from typing import ClassVar, Literal

from daliaug.algebra import Random, Scalar, add, mul
from daliaug.transforms.policy import PolicyTransform, magnitudes, one_hot, signed

IMAGENET_POLICY: tuple[tuple[tuple[str, float, int], tuple[str, float, int]], ...] = (
    (("posterize", 0.4, 8), ("rotate", 0.6, 9)),
    (("solarize", 0.6, 5), ("auto_contrast", 0.6, 0)),
    (("equalize", 0.8, 0), ("equalize", 0.6, 0)),
    (("posterize", 0.6, 7), ("posterize", 0.6, 6)),
    (("equalize", 0.4, 0), ("solarize", 0.2, 4)),
    (("equalize", 0.4, 0), ("rotate", 0.8, 8)),
    (("solarize", 0.6, 3), ("equalize", 0.6, 0)),
    (("posterize", 0.8, 5), ("equalize", 1.0, 0)),
    (("rotate", 0.2, 3), ("solarize", 0.6, 8)),
    (("equalize", 0.6, 0), ("posterize", 0.4, 6)),
    (("rotate", 0.8, 8), ("color", 0.4, 0)),
    (("rotate", 0.4, 9), ("equalize", 0.6, 0)),
    (("equalize", 0.0, 0), ("equalize", 0.8, 0)),
    (("invert", 0.6, 0), ("equalize", 1.0, 0)),
    (("color", 0.6, 4), ("contrast", 1.0, 8)),
    (("rotate", 0.8, 8), ("color", 1.0, 2)),
    (("color", 0.8, 8), ("solarize", 0.8, 7)),
    (("sharpness", 0.4, 7), ("invert", 0.6, 0)),
    (("shear_x", 0.6, 5), ("equalize", 1.0, 0)),
    (("color", 0.4, 0), ("equalize", 0.6, 0)),
    (("equalize", 0.4, 0), ("solarize", 0.2, 4)),
    (("solarize", 0.6, 5), ("auto_contrast", 0.6, 0)),
    (("invert", 0.6, 0), ("equalize", 1.0, 0)),
    (("color", 0.6, 4), ("contrast", 1.0, 8)),
    (("equalize", 0.8, 0), ("equalize", 0.6, 0)),
)
"""The ImageNet policy of Cubuk et al. (2019) as torchvision lists it: per sub-policy two
``(operation, probability, magnitude bin of 10)``; ops without a magnitude carry bin 0."""

BINS = 10


class AutoAugment(PolicyTransform):
    """torchvision's ``AutoAugment`` with ``policy: imagenet``: one of its 25 sub-policies
    chosen uniformly per sample; each of its two operations applied with its probability, at
    its magnitude bin of 10 in RandAugment's tables, with a random sign for the signed ops. See
    :mod:`daliaug.transforms.policy` for the stages it contributes to.

    Example: ``{"type": "auto_augment", "policy": "imagenet"}``."""

    type: Literal["auto_augment"] = "auto_augment"
    policy: Literal["imagenet"] = "imagenet"

    wide: ClassVar[bool] = False

    @property
    def operations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(op for sub in IMAGENET_POLICY for op, _, _ in sub))

    @property
    def slots(self) -> int:
        return 2

    def draw_slots(self, rng: Random) -> list[dict[str, tuple[Scalar, Scalar]]]:
        chosen = one_hot(rng, len(IMAGENET_POLICY))
        slots = []
        for j in range(2):
            flags: dict[str, Scalar] = dict.fromkeys(self.operations, 0.0)
            values: dict[str, Scalar] = dict.fromkeys(self.operations, 0.0)
            for sub, picked in zip(IMAGENET_POLICY, chosen, strict=True):
                op, probability, bin_ = sub[j]
                flags[op] = add(flags[op], mul(picked, rng.bernoulli(probability)))
                values[op] = add(values[op], mul(picked, magnitudes(op, BINS)[bin_]))
            slots.append({op: (flags[op], signed(rng, op, values[op])) for op in self.operations})
        return slots
