"""RandAugment: ``num_ops`` operations per sample, each chosen uniformly, at one magnitude."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from daliaug.algebra import Random, Scalar
from daliaug.transforms.policy import (
    RAND_AUGMENT_OPS,
    OpName,
    PolicyTransform,
    magnitudes,
    one_hot,
    signed,
)


class RandAugment(PolicyTransform):
    """torchvision's ``RandAugment`` (Cubuk et al. 2020): for each of ``num_ops`` slots one
    operation of ``ops`` (default: torchvision's fourteen) chosen uniformly and independently
    (so one may repeat), at the magnitude of bin ``magnitude`` of ``num_magnitude_bins`` in
    torchvision's tables (:func:`~daliaug.transforms.policy.magnitudes`), with a random sign
    for the signed ops. See :mod:`daliaug.transforms.policy` for how the slots run (all
    geometric ops, then colour, then pixel ops) and where that differs from torchvision.

    Keras' ``RandAugment`` (3.15, read from its source) differs: its eleven layers have no
    identity and shear and translate both axes at once; ``factor`` (0..1) bounds each layer's
    own random range instead of fixing a magnitude; its solarization also adds a random value;
    and the op indices are drawn once per batch (every image of a batch gets the same ops).

    Example: ``{"type": "rand_augment", "num_ops": 2, "magnitude": 9}``."""

    type: Literal["rand_augment"] = "rand_augment"
    num_ops: Annotated[int, Field(ge=1, le=8)] = 2
    magnitude: Annotated[int, Field(ge=0, le=100)] = 9
    num_magnitude_bins: Annotated[int, Field(ge=2, le=101)] = 31
    ops: tuple[OpName, ...] = RAND_AUGMENT_OPS

    wide: ClassVar[bool] = False

    @field_validator("ops")
    @classmethod
    def _distinct(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or len(set(v)) != len(v):
            raise ValueError(f"ops must name at least one operation, each once, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _magnitude_in_bins(self) -> RandAugment:
        if self.magnitude >= self.num_magnitude_bins:
            raise ValueError(
                f"magnitude {self.magnitude} must be below num_magnitude_bins "
                f"({self.num_magnitude_bins}): it is a bin index"
            )
        return self

    @property
    def operations(self) -> tuple[str, ...]:
        return self.ops

    @property
    def slots(self) -> int:
        return self.num_ops

    def draw_slots(self, rng: Random) -> list[dict[str, tuple[Scalar, Scalar]]]:
        values = {op: magnitudes(op, self.num_magnitude_bins)[self.magnitude] for op in self.ops}
        out = []
        for _ in range(self.num_ops):
            flags = one_hot(rng, len(self.ops))
            out.append(
                {
                    op: (f, signed(rng, op, values[op]))
                    for op, f in zip(self.ops, flags, strict=True)
                }
            )
        return out
