"""Keras' ``AugMix``: chains of Keras' own layers from one image, blended (see
:mod:`daliaug.transforms.aug_mix`)."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Literal

from pydantic import Field

from daliaug.algebra import Random
from daliaug.transforms.aug_mix import MOST, ChainMix
from daliaug.transforms.base import Params
from daliaug.transforms.keras_rand_augment import KERAS_OPS, Factor, KerasRandAugment
from daliaug.transforms.policy import PolicyTransform, one_hot

BASIC_OPS = (
    "shear",
    "translate",
    "rotate",
    "posterize",
    "solarization",
    "auto_contrast",
    "equalize",
)
"""Keras' ``AugMix`` layers without ``all_ops`` (``AUGMENT_LAYERS``); with it, also
``brightness``, ``color``, ``contrast`` and ``sharpness``."""


class KerasAugMix(ChainMix):
    """Keras' ``AugMix`` (3.15, read from its source): per image ``num_chains`` chains of
    ``chain_depth`` steps; each step is one of Keras' layers (:data:`BASIC_OPS`, all eleven of
    ``keras_rand_augment`` with ``all_ops``) or nothing, each equally likely, the layers built
    from ``factor`` as Keras' ``RandAugment`` builds them (see
    :class:`~daliaug.transforms.keras_rand_augment.KerasRandAugment`); the chains are mixed
    with ``Dirichlet(alpha)`` weights and the mix with the image by ``m ~ Beta(alpha, alpha)``
    (``m x + (1 - m) mix``), clipped to the value range. Keras' shear, translation and
    rotation fill by ``reflect`` (``fill``), resampled ``interpolation``.

    Differences from Keras, which draws the weights once per batch (every image of a batch
    gets the same), each step's magnitudes anew and the chains' layers with Python's
    ``random`` when the layer is traced (in ``tf.data``: once, for every batch): here each image
    draws its own, and a layer picked by two steps of a chain runs at the same magnitude; a
    chain's steps run as a policy's slots do (its geometric layers first, in one resampling,
    then its colour layers, one clip, then the others), where Keras applies them in turn.
    Segmentation masks are refused (Keras blends them as numbers).

    Example: ``{"type": "keras_aug_mix", "num_chains": 3, "factor": 0.3}``."""

    type: Literal["keras_aug_mix"] = "keras_aug_mix"
    num_chains: Annotated[int, Field(ge=1, le=MOST)] = 3
    chain_depth: Annotated[int, Field(ge=1, le=MOST)] = 3
    factor: Factor = (0.0, 0.3)
    all_ops: bool = True
    fill: Annotated[float, Field(ge=0.0, le=255.0)] | Literal["reflect"] = "reflect"
    interpolation: Literal["bilinear", "nearest"] = "bilinear"

    @property
    def width(self) -> int:
        return self.num_chains

    @cached_property
    def chain(self) -> PolicyTransform:
        return KerasRandAugment(num_ops=self.chain_depth, factor=self.factor)

    @property
    def stage_fill(self) -> float | str:
        return self.fill

    @property
    def nearest(self) -> bool:
        return self.interpolation == "nearest"

    def draw_chain(self, rng: Random) -> Params:
        """The layers' draws of ``keras_rand_augment``, each step's choice among the layers
        in use and nothing."""
        drawn = self.chain.draw(rng)
        ops = KERAS_OPS if self.all_ops else BASIC_OPS
        for j in range(self.chain_depth):
            flags = dict(zip(ops, one_hot(rng, len(ops) + 1), strict=False))
            drawn |= {f"{j}_{op}": flags.get(op, 0.0) for op in KERAS_OPS}
        return drawn
