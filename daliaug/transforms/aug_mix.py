"""AugMix: several chains of operations computed from the same image and blended, the blend
mixed with the image itself (torchvision's ``AugMix``; Keras' is ``keras_aug_mix``).

Why a stage of its own: every other transform fuses into the one warp, the one colour pass or
a pixel stage on the image those leave; AugMix needs ``width`` versions of one image, each
with its own geometry. :class:`ChainMix` is that kind: a pixel stage whose chains are each a
policy (:mod:`daliaug.transforms.policy`) with ``depth`` slots. Per chain, the policy's
geometric ops become one resampling of the stage's input (``ops.perspective`` with the chain's
affine map; skipped where the chain moves nothing), its colour ops one colour pass
(``ops.recolour``, clipped; skipped where the chain drew none), its pixel ops the policy's own
pixel stage; the chains are then summed with their weights and the input's, and clipped.
The stage runs inside ``ops.each_sample``: DALI's conditionals and, on the TensorFlow engine,
a loop over the batch's samples with ``tf.cond`` for each choice compute only the operations
each chain drew (on the whole batch TensorFlow would compute every one for every sample).
Everything random (each chain's ops and magnitudes, the Dirichlet weights, the Beta weight of
the input) is drawn on the host per sample, like every transform's parameters.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Affine, Canvas, Math, Random, Scalar, add, mul, sub
from daliaug.kernels import Kernels
from daliaug.transforms.base import MASKS_BLEND, Effects, Params, PixelTransform, Refuses
from daliaug.transforms.policy import (
    COLOUR_OPS,
    GEOMETRIC_OPS,
    PolicyTransform,
    magnitudes,
    one_hot,
    signed,
)
from daliaug.transforms.rand_augment import RandAugment

MATRIX = tuple(f"m{k}" for k in range(6))
"""A chain's destination-to-source affine map in pixel-index coordinates."""
COLOUR = tuple(f"colour{k}" for k in range(21))
"""A chain's colour matrix ``[M | t]`` (3 x 4) and mean weights ``N`` (3 x 3), row by row."""
CHAIN_VALUES = (*MATRIX, "moves", *COLOUR, "recolours", "weight")
MOST = 4
"""The most chains and steps per chain: every step can pick any op, and XLA compiles a branch
of each op a step could pick (8 chains of 8 steps took minutes)."""


def dirichlet(rng: Random, alpha: float, count: int) -> list[Scalar]:
    """``count`` weights from Dirichlet(alpha, ..., alpha), by stick breaking: weight ``k`` is
    ``Beta(alpha, (count - 1 - k) alpha)`` of what the earlier ones left."""
    weights: list[Scalar] = []
    left: Scalar = 1.0
    for k in range(count - 1):
        w = mul(left, rng.beta(alpha, (count - 1 - k) * alpha))
        weights.append(w)
        left = sub(left, w)
    return [*weights, left]


CHAINS_MOVE = (
    "blends copies of each image that its chains rotate, shear and translate apart, which no "
    "one box or keypoint can follow"
)


class ChainMix(PixelTransform):
    """A stage that blends :attr:`width` chains computed from the same image (see the module
    docstring): ``out = clip(m x + (1 - m) sum_k w_k chain_k(x))``, ``m ~ Beta(alpha, alpha)``,
    ``w ~ Dirichlet(alpha)``, per sample. Subclasses give the chain policy and its draws.
    Segmentation masks are refused (a pixel of a blend has no one class)."""

    alpha: Annotated[float, Field(gt=0.0, le=100.0)] = 1.0

    needs_rgb: ClassVar[bool] = True
    effects: ClassVar[Effects] = Effects(
        masks=Refuses(f"blends versions of each image, {MASKS_BLEND}"),
        boxes=Refuses(CHAINS_MOVE),
        keypoints=Refuses(CHAINS_MOVE),
    )

    @property
    def width(self) -> int:
        raise NotImplementedError

    @property
    def chain(self) -> PolicyTransform:
        """The policy that computes one chain from its parameters."""
        raise NotImplementedError

    @property
    def stage_fill(self) -> float | str:
        """What the chains' resampling shows outside the image."""
        raise NotImplementedError

    @property
    def nearest(self) -> bool:
        raise NotImplementedError

    def draw_chain(self, rng: Random) -> Params:
        """One chain's parameters (all of the chain policy's ``params``)."""
        raise NotImplementedError

    @property
    def params(self) -> tuple[str, ...]:  # type: ignore[override]
        chains = [f"c{k}_{n}" for k in range(self.width) for n in self.chain.params]
        return (*chains, *(f"c{k}_mix" for k in range(self.width)), "original")

    @property
    def stage_params(self) -> tuple[str, ...]:  # type: ignore[override]
        values = [f"c{k}_{n}" for k in range(self.width) for n in CHAIN_VALUES]
        return (*self.params, *values)

    def draw(self, rng: Random) -> Params:
        drawn: Params = {}
        for k in range(self.width):
            drawn |= {f"c{k}_{n}": v for n, v in self.draw_chain(rng).items()}
        weights = dirichlet(rng, self.alpha, self.width)
        drawn |= {f"c{k}_mix": w for k, w in enumerate(weights)}
        drawn["original"] = rng.beta(self.alpha, self.alpha)
        return drawn

    def _chain_params(self, p: Params, k: int) -> Params:
        prefix = f"c{k}_"
        return {n: p[prefix + n] for n in self.chain.params}

    def _drew(self, cp: Params, kinds: tuple[str, ...], m: Math) -> Scalar:
        """1 where a chain's steps picked any of the ops ``kinds``, else 0."""
        picked: Scalar = 0.0
        for j in range(self.chain.slots):
            for op in (o for o in self.chain.operations if o in kinds):
                picked = add(picked, cp[f"{j}_{op}"])
        return m.minimum(picked, 1.0)

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """Per chain: its map (destination to source, pixel-index coordinates), whether it
        moves pixels, its colour matrix, whether it recolours, and its weight
        ``(1 - m) w_k``."""
        out = dict(p)
        canvas = Canvas(float(size[0]), float(size[1]))
        for k in range(self.width):
            cp = self._chain_params(p, k)
            forward = self.chain.warp(cp, canvas, m)[0]
            back = (
                Affine.translate(-0.5, -0.5)
                .then_after(forward.inverse())
                .then_after(Affine.translate(0.5, 0.5))
            )
            colour = self.chain.colour(cp, 3, m)
            values = [*back, self._drew(cp, GEOMETRIC_OPS, m), *colour.flat()]
            values += [*colour.flat_means(), self._drew(cp, COLOUR_OPS, m)]
            values.append(mul(sub(1.0, p["original"]), p[f"c{k}_mix"]))
            out |= {f"c{k}_{n}": v for n, v in zip(CHAIN_VALUES, values, strict=True)}
        return out

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        """Sample by sample (``ops.each_sample``): each chain computes only the operations its
        steps drew."""
        return ops.each_sample(lambda x: self.mixed(x, p, ops), images)

    def mixed(self, images: Any, p: Params, ops: Kernels) -> Any:
        """The blend of the chains and the input, on any batch of ``ops``."""
        out = ops.scaled(images, p["original"])
        for k in range(self.width):
            matrix = [p[f"c{k}_{n}"] for n in MATRIX] + [0.0, 0.0]

            def move(x: Any, matrix: list = matrix) -> Any:
                return ops.perspective(x, matrix, self.stage_fill, self.nearest)

            chain = ops.select(p[f"c{k}_moves"], move, images)
            entries = [p[f"c{k}_{n}"] for n in COLOUR]

            def recolour(x: Any, entries: list = entries) -> Any:
                return ops.recolour(x, entries)

            chain = ops.select(p[f"c{k}_recolours"], recolour, chain)
            chain = self.chain.pixels(chain, self._chain_params(p, k), ops)
            out = out + ops.scaled(chain, p[f"c{k}_weight"])
        return ops.add_clipped(out, 0.0)


AUG_MIX_OPS = (
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
    "rotate",
    "posterize",
    "solarize",
    "auto_contrast",
    "equalize",
)
"""torchvision's AugMix operations without ``all_ops``."""
ALL_OPS = (*AUG_MIX_OPS, "brightness", "color", "contrast", "sharpness")
BINS = 10
"""torchvision's ``_PARAMETER_MAX``: the bins of AugMix's magnitude tables."""


def aug_mix_magnitudes(op: str) -> list[float]:
    """torchvision's AugMix tables (10 bins, unsigned): the policies' tables
    (:func:`~daliaug.transforms.policy.magnitudes`) but translations up to a third of the
    side, posterize from 4 bits down to 0 and solarize from 255 down to 0."""
    last = BINS - 1
    if op in ("translate_x", "translate_y"):
        return [b / last / 3.0 for b in range(BINS)]
    if op == "posterize":  # torch's round: half to even, like Python's
        return [4.0 - round(b / (last / 4)) for b in range(BINS)]
    if op == "solarize":
        return [255.0 * (1.0 - b / last) for b in range(BINS)]
    return magnitudes(op, BINS)


class AugMix(ChainMix):
    """torchvision's ``AugMix`` (Hendrycks et al. 2020): per image ``mixture_width`` chains;
    each chain applies ``chain_depth`` operations one after the other (``-1``: a depth drawn
    from 1..3 per chain), each chosen uniformly from torchvision's nine (thirteen with
    ``all_ops``: also brightness, color, contrast, sharpness), at the magnitude of a bin
    drawn uniformly from ``0..severity - 1`` of torchvision's 10-bin AugMix tables
    (:func:`aug_mix_magnitudes`), with a random sign for the signed ops. The chains are mixed
    with ``Dirichlet(alpha)`` weights, and the mix with the image by ``m ~ Beta(alpha,
    alpha)``: ``m x + (1 - m) mix``. All draws are per image (torchvision draws the ops once
    per call and the weights per image).

    Within a chain the ops run as a policy's do (:mod:`daliaug.transforms.policy`): its
    geometric ops first (one resampling, bilinear, ``fill`` outside), then its colour ops (one
    clip), then its pixel ops; torchvision applies them in turn and rounds to ``uint8`` after
    each. Segmentation masks are refused.

    Example: ``{"type": "aug_mix", "severity": 3, "mixture_width": 3}``."""

    type: Literal["aug_mix"] = "aug_mix"
    severity: Annotated[int, Field(ge=1, le=10)] = 3
    mixture_width: Annotated[int, Field(ge=1, le=MOST)] = 3
    chain_depth: Annotated[int, Field(ge=-1, le=MOST)] = -1
    all_ops: bool = True
    fill: Annotated[float, Field(ge=0.0, le=255.0)] = 0.0

    @property
    def width(self) -> int:
        return self.mixture_width

    @property
    def depth(self) -> int:
        return 3 if self.chain_depth <= 0 else self.chain_depth

    @cached_property
    def chain(self) -> PolicyTransform:
        return RandAugment(num_ops=self.depth, ops=ALL_OPS if self.all_ops else AUG_MIX_OPS)

    @property
    def stage_fill(self) -> float | str:
        return self.fill

    @property
    def nearest(self) -> bool:
        return False

    def draw_chain(self, rng: Random) -> Params:
        ops = self.chain.operations
        # the slots in use: all, or 1..3 of them (each depth equally likely)
        active: list[Scalar] = [1.0] * self.depth
        if self.chain_depth <= 0:
            one, two, _ = one_hot(rng, 3)
            active = [1.0, sub(1.0, one), sub(sub(1.0, one), two)]
        drawn: Params = {}
        for j, on in enumerate(active):
            flags = one_hot(rng, len(ops))
            for op, flag in zip(ops, flags, strict=True):
                drawn[f"{j}_{op}"] = mul(on, flag)
                if f"{j}_{op}_mag" in self.chain.params:
                    bin_values = aug_mix_magnitudes(op)[: self.severity]
                    drawn[f"{j}_{op}_mag"] = signed(rng, op, rng.choice(bin_values))
        return drawn
