"""Keras' ``RandAugment``: ``num_ops`` of its eleven layers per image, each at a random
magnitude within ``factor``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from daliaug.algebra import Random, sub
from daliaug.fields import NumberOrRange, as_float, bounded, is_number
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, ordered
from daliaug.transforms.color_degeneration import ColorDegeneration
from daliaug.transforms.keras_brightness import KerasBrightness
from daliaug.transforms.keras_contrast import KerasContrast
from daliaug.transforms.keras_shear import KerasShear
from daliaug.transforms.keras_solarization import KerasSolarization
from daliaug.transforms.policy import Bound, PolicyTransform, one_hot
from daliaug.transforms.rotation import Rotation
from daliaug.transforms.shift import Shift

KERAS_OPS = (
    "shear",
    "translate",
    "rotate",
    "brightness",
    "color",
    "contrast",
    "sharpness",
    "posterize",
    "solarization",
    "auto_contrast",
    "equalize",
)
"""Keras' eleven layers, in its order (``RandAugment._AUGMENT_LAYERS``): ``RandomShear``,
``RandomTranslation``, ``RandomRotation``, ``RandomBrightness``, ``RandomColorDegeneration``,
``RandomContrast``, ``RandomSharpness``, ``RandomPosterization``, ``Solarization``,
``AutoContrast``, ``Equalization``."""


def _from_zero(v: Any) -> Any:
    """A single number ``f`` means ``[0, f]``, as Keras' ``RandAugment`` reads it."""
    return (0.0, as_float(v)) if is_number(v) else v


def _below_one(r: tuple[float, float]) -> tuple[float, float]:
    if r[1] >= 1.0:
        raise ValueError(
            f"factor {list(r)} must stay below 1: both shears at 1 flatten the image (Keras' "
            "RandomShear matrix [[1, 1], [1, 1]] has no inverse)"
        )
    return r


Factor = Annotated[
    tuple[float, float],
    BeforeValidator(_from_zero, json_schema_input_type=NumberOrRange),
    AfterValidator(ordered),
    bounded(0.0, 1.0, "factors"),
    AfterValidator(_below_one),
]


def _truncated(images: Any, ops: Kernels) -> Any:
    """The values as Keras casts them to integers (truncating) before its posterization and
    equalization: half a step down, then the kernels' round half up (``floor(x)`` on 0..255)."""
    return ops.add_clipped(images, -0.5)


@dataclass(frozen=True)
class KerasPosterize:
    """Keras' ``RandomPosterization`` as ``RandAugment`` builds it: ``bits`` kept, one of
    ``choices`` per image, on the values truncated to integers."""

    choices: tuple[float, ...]
    params: ClassVar[tuple[str, ...]] = ("bits",)

    def draw(self, rng: Random) -> Params:
        return {"bits": rng.choice(self.choices)}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.posterize(_truncated(images, ops), p["bits"])


@dataclass(frozen=True)
class KerasEqualize:
    """Keras' ``Equalization`` on one image: OpenCV's table (``equalize``) of the values
    truncated to integers."""

    params: ClassVar[tuple[str, ...]] = ()

    def draw(self, rng: Random) -> Params:
        return {}

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.equalize(_truncated(images, ops))


class KerasRandAugment(PolicyTransform):
    """Keras' ``RandAugment`` (3.15, read from its source): for each of ``num_ops`` slots one
    of Keras' eleven layers (:data:`KERAS_OPS`) chosen uniformly and independently (so one may
    repeat), each layer at its own random magnitude, drawn once per image and used by every
    slot that picks it, from ``factor = (lo, hi)`` as Keras builds the layers:

    * ``shear``: ``keras_shear`` with ``x_factor = y_factor = factor`` (both shears, a random
      sign); ``translate``: ``shift`` by ``U(factor)`` of the width right and of the height
      down; ``rotate``: ``rotation`` by ``U(360 lo, 360 hi)`` degrees;
    * ``brightness``: ``keras_brightness`` with ``factor``; ``color``: ``color_degeneration``
      with ``factor``; ``contrast``: ``keras_contrast`` with ``[1 - lo, 1 + hi]``;
    * ``sharpness``: ``sharpness`` at ``2u``, ``u ~ U(factor)``; ``posterize``: ``b`` bits kept,
      ``b`` uniform over ``1..max(1, int(8 hi)) - 1`` (1 when that is empty);
      ``solarization``: ``keras_solarization`` with ``addition = threshold = [lo, 255 hi]``;
      ``auto_contrast``; ``equalize`` (each image on its own histogram). Posterize and
      equalize truncate the values to integers first, as Keras' casts do.

    The ops run as every policy's do (:mod:`daliaug.transforms.policy`): all geometric ops in
    one warp, the colour ops in the one colour pass (one clip), then the pixel ops. Unlike
    Keras, which draws the slots' layers once per batch (every image of a batch gets the same
    ops) and applies them in slot order, clipping after each, each image here draws its own:
    each image's ops and magnitudes follow Keras' distribution. A ``factor`` top of 1 is
    refused (both shears at 1 flatten the image).

    Example: ``{"type": "keras_rand_augment", "num_ops": 2, "factor": 0.5}``."""

    type: Literal["keras_rand_augment"] = "keras_rand_augment"
    num_ops: Annotated[int, Field(ge=1, le=8)] = 2
    factor: Factor = (0.0, 0.5)

    wide: ClassVar[bool] = False

    @model_validator(mode="after")
    def _layers_valid(self) -> KerasRandAugment:
        self.layers  # noqa: B018 - each layer checks its own range
        return self

    @cached_property
    def layers(self) -> dict[str, Any]:
        """What each Keras layer is in daliaug, by op: a transform with its draws (all but
        ``sharpness`` and ``auto_contrast``, which are the policies' own ops)."""
        lo, hi = self.factor
        top = max(1, int(8 * hi))  # Keras' RandomPosterization(factor=top): randint(1, top)
        return {
            "shear": KerasShear(x_factor=(lo, hi), y_factor=(lo, hi)),
            "translate": Shift(x=(lo, hi), y=(lo, hi)),
            "rotate": Rotation(angle=(360.0 * lo, 360.0 * hi)),
            "brightness": KerasBrightness(factor=(lo, hi)),
            "color": ColorDegeneration(factor=(lo, hi)),
            "contrast": KerasContrast(factor=(1.0 - lo, 1.0 + hi)),
            "posterize": KerasPosterize(tuple(float(b) for b in range(1, top)) or (1.0,)),
            "solarization": KerasSolarization(
                addition=(lo, 255.0 * hi), threshold=(lo, 255.0 * hi)
            ),
            "equalize": KerasEqualize(),
        }

    @property
    def operations(self) -> tuple[str, ...]:
        return KERAS_OPS

    @property
    def slots(self) -> int:
        return self.num_ops

    @property
    def params(self) -> tuple[str, ...]:  # type: ignore[override]
        flags = [f"{j}_{op}" for j in range(self.num_ops) for op in KERAS_OPS]
        drawn = [f"{op}_{k}" for op, layer in self.layers.items() for k in layer.params]
        return (*flags, *drawn, "sharpness_factor")

    def draw(self, rng: Random) -> Params:
        drawn: Params = {}
        for j in range(self.num_ops):
            flags = one_hot(rng, len(KERAS_OPS))
            drawn |= {f"{j}_{op}": f for op, f in zip(KERAS_OPS, flags, strict=True)}
        for op, layer in self.layers.items():
            drawn |= {f"{op}_{k}": v for k, v in layer.draw(rng).items()}
        low, high = self.factor
        drawn["sharpness_factor"] = rng.uniform(2.0 * low, 2.0 * high)
        return drawn

    def values(self, p: Params, j: int, op: str) -> Any:
        """The same values in every slot (Keras draws each layer's once per call): a
        :class:`~daliaug.transforms.policy.Bound` for the layers that are daliaug transforms,
        else the magnitude of the policies' op (``sharpness`` at ``1 + v``)."""
        layer = self.layers.get(op)
        if layer is not None:
            return Bound(layer, {k: p[f"{op}_{k}"] for k in layer.params})
        if op == "sharpness":
            return sub(p["sharpness_factor"], 1.0)
        return 0.0
