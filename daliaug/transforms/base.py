"""What every transform is: a config model that draws per-sample parameters and maps them
to geometry (one fused affine warp) or colour (one fused colour matrix).

A transform never touches pixels itself. It contributes

* ``draw(rng)``: its random parameters, one value per sample, from a documented
  distribution (``params`` names them, so they can also be given explicitly);
* for :class:`GeometricTransform`, ``warp(params, canvas, m)``: an affine map in
  pixel-corner coordinates and the canvas size after it;
* for :class:`ColourTransform`, ``colour(params, channels, m)``: an affine colour map;
* for :class:`PixelTransform`, ``pixels(images, params, ops)``: a per-sample operation on the
  warped, recoloured images, written with the engine's pixel operations ``ops``
  (:class:`daliaug.kernels.Kernels`: each engine's, the same names and results);
* for :class:`BatchTransform`, ``images(...)`` and ``targets(...)``: a stage on the whole
  batch that may mix samples and their targets.

A transform may be of several kinds at once (its class derives from each): the plan takes each
kind's contribution at that kind's stage. The augmentation policies
(:mod:`daliaug.transforms.policy`) are geometric, colour and pixel transforms in one, so that
an operation chosen per sample lands in the fused warp, the colour matrix or a pixel stage.

Each engine (DALI graph, TensorFlow ops) supplies the ``rng``, ``m`` and ``ops`` primitives,
then applies the composed result once: one warp for images (bilinear) and masks (nearest), one
colour pass for images only, then the pixel and batch stages, each moving the targets as its
:class:`Effects` declare.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field

from daliaug.algebra import Affine, Box, Canvas, ColourMatrix, Math, Random, Scalar, div, mul, neg
from daliaug.fields import NumberOrRange, as_float, bounded, is_number
from daliaug.kernels import Kernels
from daliaug.tagged import Tagged

if TYPE_CHECKING:
    from daliaug.boxes import Rules, Targets

Params = dict[str, Scalar]


def ordered(r: tuple[float, float]) -> tuple[float, float]:
    """A check that a range is ``[low, high]``."""
    if r[0] > r[1]:
        raise ValueError(f"range must be [low, high] with low <= high, got {list(r)}")
    return r


def _symmetric(v: Any) -> Any:
    """A single number ``a`` means the range ``[-a, a]``."""
    if is_number(v):
        return (-abs(as_float(v)), abs(as_float(v)))
    return v


def _around_one(v: Any) -> Any:
    """A single number ``d`` means the factor range ``[max(0, 1 - d), 1 + d]``."""
    if is_number(v):
        return (max(0.0, 1.0 - abs(as_float(v))), 1.0 + abs(as_float(v)))
    return v


def _positive(r: tuple[float, float]) -> tuple[float, float]:
    if r[0] <= 0:
        raise ValueError(f"values must be > 0, got {list(r)}")
    return r


MAX_DEGREES = 360.0
"""The largest angle, in degrees, an angle range takes (one whole turn)."""
MAX_FACTOR = 100.0
"""The largest factor a factor range takes (zoom, brightness, contrast, saturation, aspect
ratio; the smallest aspect ratio is its inverse)."""

SymmetricRange = Annotated[
    tuple[float, float],
    BeforeValidator(_symmetric, json_schema_input_type=NumberOrRange),
    AfterValidator(ordered),
]
AngleRange = Annotated[SymmetricRange, bounded(-MAX_DEGREES, MAX_DEGREES, "angles")]
FractionRange = Annotated[SymmetricRange, bounded(-1.0, 1.0, "fractions of the side")]
FactorRange = Annotated[
    tuple[float, float],
    BeforeValidator(_around_one, json_schema_input_type=NumberOrRange),
    AfterValidator(ordered),
    bounded(0.0, MAX_FACTOR, "factors"),
]
PositiveRange = Annotated[tuple[float, float], AfterValidator(ordered), AfterValidator(_positive)]
ZOOMS = bounded(1 / MAX_FACTOR, MAX_FACTOR, "zoom factors")
"""Zoom factors: never 0 (or so near it that the warp's inverse overflows)."""
ZoomFactorRange = Annotated[FactorRange, ZOOMS]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Fill = float | Literal["nearest", "reflect", "wrap"]
"""A constant fill value on the 0..255 scale (saturated to it), ``"nearest"`` to repeat the
border pixel, or ``"reflect"`` / ``"wrap"`` to mirror or tile the image (TensorFlow backend
only)."""


def fill_value(fill: Fill) -> Fill:
    """The warp's fill as the engines use it: a constant rounded half up and saturated to
    0..255 (as DALI's ``uint8`` fill), a mode name unchanged."""
    if isinstance(fill, str):
        return fill
    return float(min(max(math.floor(float(fill) + 0.5), 0), 255))


TF_ONLY_FILLS = ("reflect", "wrap")
"""Fills that TensorFlow's ``ImageProjectiveTransformV3`` has and DALI's ``warp_affine`` lacks."""

CUT_TOLERANCE = 1e-3
"""``fill_edge: cut``: how far (in pixels) beyond the outermost pixel centres a source point
may lie and still sample the image, so that float32 rounding does not decide for points that
lie exactly on them (quarter turns, flips, whole-pixel shifts)."""


def radians(degrees: Scalar) -> Scalar:
    return mul(degrees, math.pi / 180.0)


TARGET_KINDS = ("masks", "boxes", "keypoints")
"""The targets a stage may move besides the pixels (labels pass through; batch stages mix
them)."""


@dataclass(frozen=True)
class Refuses:
    """A stage that a target kind cannot follow: a config whose source has that kind refuses
    the stage by name, saying ``why``."""

    why: str


Effect = Literal["keeps", "follows"] | Refuses
"""What a stage does to one target kind: ``keeps`` it as it is (the stage moves no pixel),
``follows`` (the stage's own map moves it: :meth:`PixelTransform.masks`,
:meth:`PixelTransform.points`, :meth:`BatchTransform.targets`, :meth:`BatchTransform.boxes`),
or :class:`Refuses` it."""


@dataclass(frozen=True)
class Effects:
    """One pixel or batch stage's effect on each target kind (:data:`TARGET_KINDS`): the one
    declaration from which the plan takes what it moves and the config what it refuses.

    Example: ``Effects(masks="follows", boxes="follows", keypoints="follows")`` for
    ``perspective``; ``Effects()`` for a recolouring."""

    masks: Effect = "keeps"
    boxes: Effect = "keeps"
    keypoints: Effect = "keeps"

    @staticmethod
    def all(effect: Effect) -> Effects:
        """The same effect on every target kind."""
        return Effects(effect, effect, effect)

    def of(self, kind: str) -> Effect:
        """The effect on ``kind`` (one of :data:`TARGET_KINDS`)."""
        return getattr(self, kind)

    def refusals(self, kinds: Iterable[str]) -> dict[str, str]:
        """Each of ``kinds`` this stage refuses, with why."""
        return {k: e.why for k in kinds if isinstance(e := self.of(k), Refuses)}


class Transform(Tagged):
    """Base of all transforms: a strict, immutable config entry typed by ``type``."""

    registry: ClassVar[dict[str, type[Transform]]] = {}
    params: ClassVar[tuple[str, ...]] = ()
    """Names of the per-sample parameters that :meth:`draw` returns."""
    needs_rgb: ClassVar[bool] = False
    """Whether it works on the three channels of RGB images only."""
    dali_lacks: ClassVar[dict[str, str]] = {}
    """The DALI devices (``cpu``, ``gpu``) that cannot run it, each with why: ``backend`` set
    to one refuses it, ``auto`` picks the TensorFlow engine instead."""

    def dali_lacking(self, channels: int) -> dict[str, str]:
        """:attr:`dali_lacks` for images of ``channels`` channels."""
        return self.dali_lacks

    def draw(self, rng: Random) -> Params:
        """Draw this transform's parameters for one sample (all of :attr:`params`)."""
        return {}

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        """What this transform cannot do on output images of ``size`` (height, width) with
        ``channels`` channels: each problem starts with the field it is about."""
        return []


class StageTransform(Transform):
    """A pixel or batch stage: its per-sample values reach the engine's graph as ``stages``
    columns, :attr:`stage_params` (by default :attr:`params`), computed from the drawn
    parameters by :meth:`stage` where the plan is evaluated (on the host, or in the graph for
    streamed records)."""

    stage_params: ClassVar[tuple[str, ...] | None] = None
    vector_stage: ClassVar[bool] = False
    """Whether the engine hands the stage its values as one per-sample vector, ``p["values"]``
    in :meth:`stage_names` order (a ``(N, S)`` tensor in TensorFlow, a vector per sample in
    DALI), rather than one scalar per name: for a stage with many values."""

    def stage_names(self) -> tuple[str, ...]:
        """The names of the stage's values (its parameters, unless :attr:`stage_params`)."""
        return self.params if self.stage_params is None else self.stage_params

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The stage's values (all of :meth:`stage_names`) from its drawn parameters ``p`` on
        output images of ``size`` (height, width): by default the parameters themselves."""
        return p


class GeometricTransform(Transform):
    """A transform that moves pixels; all of them in a pipeline fuse into one affine warp.

    Transforms that can reveal area outside the image have a ``fill`` field."""

    axis_aligned: ClassVar[bool]
    """Whether the map only scales, shifts and flips the axes (no rotation or shear). Every
    geometric transform must declare it: an axis-aligned plan is resampled as a resize, which
    would silently be wrong for a map that turns or shears."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        if cls.tag() is not None and not hasattr(cls, "axis_aligned"):  # before registering
            raise TypeError(
                f"geometric transform {cls.__name__} must declare axis_aligned: True only if "
                "its map scales, shifts or flips the axes and never turns or shears them"
            )
        super().__pydantic_init_subclass__(**kwargs)

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        """The source-to-destination map for this step and the canvas size after it."""
        raise NotImplementedError

    @property
    def reveals(self) -> bool:
        """Whether this transform can reveal area outside the image (then it has a ``fill``)."""
        return "fill" in type(self).model_fields


DALI_COLOUR_CHANNELS = 6
"""The most channels DALI recolours: its colour pass maps each pixel with
``fn.coord_transform``, whose points have at most 6 dimensions."""


class ColourTransform(Transform):
    """A per-pixel affine colour change; all of them fuse into one colour pass."""

    uses_mean: ClassVar[bool] = False
    """Whether :meth:`colour` weighs the image's per-channel mean (``ColourMatrix.means``)."""

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        raise NotImplementedError

    def dali_lacking(self, channels: int) -> dict[str, str]:
        """Beyond :data:`DALI_COLOUR_CHANNELS` channels, DALI on either device."""
        if channels <= DALI_COLOUR_CHANNELS:
            return self.dali_lacks
        why = (
            f"DALI's colour pass takes at most {DALI_COLOUR_CHANNELS} channels "
            f"(fn.coord_transform), channels: {channels}"
        )
        return {"cpu": why, "gpu": why}


class OffsetTransform(ColourTransform):
    """Adds one value per sample to every channel of the warped image, then clips the result to
    that image's own minimum and maximum (over all channels). The clip makes it non-affine, so
    it runs on its own, on the warp's result, before the colour matrix (to which it contributes
    the identity); a pipeline holds at most one, before every colour transform."""

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return ColourMatrix.identity(channels)

    def offset(self, p: Params) -> Scalar:
        """The value added to every channel of one sample."""
        raise NotImplementedError


class FactorTransform(ColourTransform):
    """A colour change by one factor per sample, ``factor ~ U(factor)``; a single number ``d``
    means ``[max(0, 1 - d), 1 + d]``."""

    factor: FactorRange
    params: ClassVar[tuple[str, ...]] = ("factor",)

    def draw(self, rng: Random) -> Params:
        return {"factor": rng.uniform(*self.factor)}


class CropTransform(GeometricTransform):
    """A geometric step that cuts a window out of the canvas and maps it onto a new canvas."""

    axis_aligned: ClassVar[bool] = True

    decodes_roi: ClassVar[bool] = False
    """True when the window always lies inside the image, so that decoding can be limited to it
    when this is the first geometric step (DALI's fused decode-and-crop, TF's
    ``decode_and_crop_jpeg``)."""

    def crop_box(self, p: Params, canvas: Canvas, m: Math) -> Box:
        raise NotImplementedError

    def crop_output(self, box: Box) -> Canvas:
        """The canvas the window is mapped onto (by default: the window itself, unscaled)."""
        return Canvas(box.h, box.w)

    def box_to_output(self, box: Box) -> tuple[Affine, Canvas]:
        """The map from window-local coordinates to the output canvas."""
        out = self.crop_output(box)
        return Affine.scale(div(out.w, box.w), div(out.h, box.h)), out

    def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
        box = self.crop_box(p, canvas, m)
        scale, out = self.box_to_output(box)
        return scale.then_after(Affine.translate(neg(box.x), neg(box.y))), out


class PixelTransform(StageTransform):
    """A per-sample operation that is neither a warp nor an affine colour map. It runs on the
    warped, recoloured images (``float32``, 0..255, HWC samples), after the colour pass and
    before the output's normalization, in the order of the config; targets as its
    :attr:`effects` declare. Its
    parameters are drawn on the host per sample like every transform's."""

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        """``images`` after this stage: ``p`` holds this transform's per-sample parameters
        (scalars per sample), ``ops`` the engine's pixel operations."""
        raise NotImplementedError

    effects: ClassVar[Effects] = Effects()
    """What it does to each target kind (by default: a recolouring, which every target keeps);
    a stage that resamples pixels says ``follows`` for a kind only with the map that moves it
    (:meth:`masks`, :meth:`points`), or refuses the kind with why."""

    def masks(self, masks: Any, p: Params, ops: Kernels, fill: float) -> Any:
        """Masks (HWC samples of class values) after this stage, ``fill`` where none lands
        (for a stage whose :attr:`effects` say masks follow)."""
        raise NotImplementedError

    def points(self, xy: np.ndarray, p: Params) -> np.ndarray:
        """Where points ``xy`` (``(B, N, 2)``, pixel-corner ``(x, y)`` before this stage) land
        after it, from its stage parameters ``p`` (per-sample NumPy values of :meth:`stage`),
        for a stage whose :attr:`effects` say boxes and keypoints follow. What lands outside
        the output is gone: the stage's input is a boundary (see ARCHITECTURE's geometry
        contract)."""
        raise NotImplementedError


def random_partners(keys: np.ndarray, valid: np.ndarray, batch: int | None = None) -> np.ndarray:
    """Each position's partner (float32 indices into its batch): the real samples (``valid``)
    of each batch in the order of their sort ``keys``, a uniformly random permutation of them;
    padding positions keep themselves, so they are never anyone's partner. ``batch``: the
    positions are consecutive batches of that many (the last may be shorter), each paired
    within itself; default: one batch."""
    batch = batch or max(len(keys), 1)
    out = (np.arange(len(keys)) % batch).astype(np.float32)
    real = np.flatnonzero(valid)
    group = real // batch  # ascending, so each batch's real positions are one run of ``real``
    out[real] = real[np.lexsort((keys[real], group))] - group * batch
    return out


MASKS_BLEND = "which segmentation masks cannot follow (a pixel has one class)"
BOXES_CUT = "cannot keep boxes right (Keras refuses it with bounding boxes too)"


class BatchTransform(StageTransform):
    """A stage on the whole batch after the per-sample work: it may mix each sample with a
    partner and change the targets. Its parameters are drawn per batch position like every
    transform's; ``partner`` (each of :attr:`partner_params`) is drawn per position and turned
    by the feed, on the host, into the index of each sample's partner (:meth:`partners`: by
    default a random permutation of the batch's real samples; padding keeps itself and is
    never a partner). Batches run images
    (float32, 0..255, HWC samples) through :meth:`images` and targets (one-hot labels, or
    masks) through :meth:`targets`."""

    params: ClassVar[tuple[str, ...]] = ("partner",)
    partner_params: ClassVar[tuple[str, ...]] = ("partner",)
    """The parameters the feed turns into partner indices, each by :meth:`partners` (a stage
    with several partners per position draws one key for each)."""
    effects: ClassVar[Effects] = Effects(
        masks=Refuses(f"blends images, {MASKS_BLEND}; cutmix pastes the same box in the mask"),
        boxes=Refuses(BOXES_CUT),
        keypoints=Refuses(BOXES_CUT),
    )
    """What it does to each target kind: masks follow a cut (:meth:`targets`), boxes and
    keypoints follow a stage with :meth:`boxes`; by default it refuses both."""

    def draw(self, rng: Random) -> Params:
        return {"partner": rng.uniform(0.0, 1.0)}

    def partners(self, draws: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """The partner of each batch position (float32 indices) from the values of one of
        :attr:`partner_params` drawn for the batch and which positions hold real samples
        (``valid``). A stage that pairs otherwise overrides this; a real sample's partner must
        be a real sample."""
        return random_partners(draws, valid)

    def batch_partners(
        self, draws: np.ndarray, valid: np.ndarray, batch: int | None = None
    ) -> np.ndarray:
        """:meth:`partners` of consecutive batches of ``batch`` positions (the last may be
        shorter; default: one batch), each batch's indices within itself, joined; the default
        pairing all at once (one sort), a stage's own pairing batch by batch."""
        if type(self).partners is BatchTransform.partners:
            return random_partners(draws, valid, batch)
        batch = batch or max(len(draws), 1)
        cuts = range(0, len(draws), batch)
        pairs = [self.partners(draws[a : a + batch], valid[a : a + batch]) for a in cuts]
        return np.concatenate(pairs) if pairs else np.zeros(0, np.float32)

    def images(self, images: Any, p: Params, ops: Kernels) -> Any:
        raise NotImplementedError

    def boxes(self, targets: Targets, p: Params, size: tuple[int, int], rules: Rules) -> Targets:
        """The batch's detection targets after this stage, on the host: ``p`` this stage's
        parameters per position (NumPy), each of :attr:`partner_params` as int indices
        (:meth:`partners`); ``size`` the output's (height, width); ``rules`` the config's, for
        boxes the stage cuts; for a stage whose :attr:`effects` say boxes follow."""
        raise NotImplementedError

    def targets(self, targets: Any, p: Params, ops: Kernels, masks: bool) -> Any:
        """The targets of the batch: one-hot labels (``masks`` False) or masks."""
        raise NotImplementedError
