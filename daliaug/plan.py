"""From a config's transform list to the per-sample computation, independent of the backend.

The plan fuses the transforms: every geometric step composes into one affine map from the
decoded image (or its decoded region of interest) to the output canvas, and every colour step
composes into one affine colour matrix. Engines evaluate the plan with their own
:class:`~daliaug.algebra.Math` and :class:`~daliaug.algebra.Random`, then resample once and
recolour once. The stages that fuse into neither follow in config order: the pixel stages
(per sample), then the batch stages (whole batches), each given its parameters as per-sample
scalars (``stages``, one column per :attr:`Plan.stage_keys`) and moving each target kind as
its ``effects`` declare. Boxes and keypoints cross the stage boundaries on the host
(:meth:`Plan.point_maps`): what leaves the canvas at one is gone for the next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import numpy as np

from daliaug.algebra import (
    Affine,
    Box,
    Canvas,
    ColourMatrix,
    Math,
    Random,
    Scalar,
    add,
    div,
    mul,
    neg,
    sub,
)
from daliaug.boxes import PointMap
from daliaug.kernels import Kernels
from daliaug.transforms import ColourTransform, CropTransform, GeometricTransform, Transform
from daliaug.transforms.base import (
    TF_ONLY_FILLS,
    BatchTransform,
    Fill,
    OffsetTransform,
    Params,
    PixelTransform,
    StageTransform,
)

WINDOW_TOLERANCE = 1e-3
"""How far (in pixels) float rounding may move a source point by: within it of a whole pixel's
edge, the point is taken to lie on it (a decode window's edges: :data:`FOOTPRINTS`)."""

FOOTPRINTS: dict[str, tuple[float, float]] = {
    "linear": (0.5, WINDOW_TOLERANCE),
    "nearest": (0.0, -WINDOW_TOLERANCE),
}
"""Per interpolation, which source pixels the warp's sampler reads for a source point ``p``
(pixel-corner coordinates) as ``(reach, tolerance)``: the pixels from ``floor(p - reach +
tolerance)`` to ``ceil(p + reach - tolerance) - 1``. Bilinear reads the pixels whose centres
lie within a pixel of ``p``; a neighbour whose weight is within the tolerance of zero (``p``
on a pixel centre, up to float rounding) is left out, its weight changes no output value.
Nearest reads the pixel ``p`` lies in; on an edge, up to float rounding, either pixel beside
it."""


@dataclass(frozen=True)
class Geometry:
    """Where to decode and how to warp: ``forward`` maps ROI (or source) pixels to output pixels."""

    roi: Box | None
    forward: Affine

    @property
    def source_forward(self) -> Affine:
        """The map from full-source pixels to output pixels (what masks, decoded whole, need)."""
        if self.roi is None:
            return self.forward
        return self.forward.then_after(Affine.translate(neg(self.roi.x), neg(self.roi.y)))


@dataclass(frozen=True)
class Plan:
    """The fused per-sample computation of a transform list producing ``image_size`` images."""

    transforms: tuple[Transform, ...]
    image_size: tuple[int, int]
    channels: int = 3
    fill: Fill = 0.0
    """The warp's fill; ``nearest`` clamps to the border pixels."""
    interpolation: str = "linear"
    """How the warp samples images: ``linear`` (bilinear) or ``nearest``."""

    @staticmethod
    def of(
        transforms: Sequence[Transform],
        image_size: Sequence[int],
        channels: int = 3,
        fill: Fill = 0.0,
        interpolation: str = "linear",
    ) -> Plan:
        size = (int(image_size[0]), int(image_size[1]))
        return Plan(tuple(transforms), size, channels, fill, interpolation)

    @cached_property
    def param_keys(self) -> list[str]:
        """Names of all per-sample parameters, ``"<transform index>.<name>"``, in a fixed order."""
        return [f"{i}.{name}" for i, t in enumerate(self.transforms) for name in t.params]

    def draw(self, rng: Random) -> dict[str, Scalar]:
        """Draw every transform's parameters for one sample (or one batch, per backend)."""
        drawn: dict[str, Scalar] = {}
        for i, t in enumerate(self.transforms):
            params = t.draw(rng)
            if set(params) != set(t.params):
                raise TypeError(
                    f"transform {t.type!r} drew {sorted(params)} but declares params "
                    f"{sorted(t.params)}"
                )
            drawn.update({f"{i}.{k}": v for k, v in params.items()})
        return drawn

    def paired(
        self, rows: Any, valid: np.ndarray | None = None, batch: int | None = None
    ) -> dict[str, Any]:
        """The parameter ``rows`` (one per sample, :attr:`param_keys` order; NumPy, or any
        array where the plan has no batch stage) by name, each batch stage's partner draws
        turned into partner indices within each batch (consecutive batches of ``batch``
        positions, default one; ``valid``: which positions hold real samples). Made once per
        batch on the host, for the pixels' ``warp`` and the targets alike."""
        params = {key: rows[:, i] for i, key in enumerate(self.param_keys)}
        for i, stage in self.batch_stages:
            if valid is None:
                raise ValueError("batch stages need the host's feed (it knows the padding)")
            for name in stage.partner_params:
                params[f"{i}.{name}"] = stage.batch_partners(params[f"{i}.{name}"], valid, batch)
        return params

    def _params_of(self, params: dict[str, Scalar], index: int) -> Params:
        return {name: params[f"{index}.{name}"] for name in self.transforms[index].params}

    @cached_property
    def stage_keys(self) -> list[str]:
        """The parameters of the pixel and batch stages, in :attr:`param_keys` order: the
        columns of the graph's ``stages`` input."""
        return [f"{i}.{name}" for i, t in self.stages for name in t.stage_names()]

    @property
    def stages(self) -> list[tuple[int, StageTransform]]:
        """The pixel and batch stages with their indices."""
        return [(i, t) for i, t in enumerate(self.transforms) if isinstance(t, StageTransform)]

    @property
    def batch_stages(self) -> list[tuple[int, BatchTransform]]:
        return [(i, t) for i, t in enumerate(self.transforms) if isinstance(t, BatchTransform)]

    def _stage_params(self, index: int, column: Callable[[int | slice], Any]) -> Params:
        t: StageTransform = self.transforms[index]  # type: ignore[assignment]
        names = t.stage_names()
        if not names:
            return {}
        start = self.stage_keys.index(f"{index}.{names[0]}")
        if t.vector_stage:
            return {"values": column(slice(start, start + len(names)))}
        return {name: column(start + k) for k, name in enumerate(names)}

    def pixels(self, images: Any, column: Callable[[int | slice], Any], ops: Kernels) -> Any:
        """``images`` through the pixel stages, with the engine's pixel operations ``ops``;
        ``column(k)`` is the per-sample value of ``stage_keys[k]`` in the engine's form
        (``column(slice)``: those of a range, one per-sample vector)."""
        for i, t in enumerate(self.transforms):
            if isinstance(t, PixelTransform):
                images = t.pixels(images, self._stage_params(i, column), ops)
        return images

    def _following(self, kind: str) -> list[tuple[int, PixelTransform]]:
        """The pixel stages whose own map moves ``kind`` (their ``effects`` say it follows)."""
        return [
            (i, t)
            for i, t in enumerate(self.transforms)
            if isinstance(t, PixelTransform) and t.effects.of(kind) == "follows"
        ]

    @property
    def moves_masks(self) -> bool:
        """Whether a pixel stage moves masks (:meth:`mask_pixels`)."""
        return bool(self._following("masks"))

    def mask_pixels(
        self, masks: Any, column: Callable[[int | slice], Any], ops: Kernels, fill: float
    ) -> Any:
        """Masks (HWC) through the pixel stages that move them (see :meth:`pixels`)."""
        for i, t in self._following("masks"):
            masks = t.masks(masks, self._stage_params(i, column), ops, fill)
        return masks

    def batch_images(self, images: Any, column: Callable[[int | slice], Any], ops: Kernels) -> Any:
        """``images`` through the batch stages (see :meth:`pixels`)."""
        for i, t in self.batch_stages:
            images = t.images(images, self._stage_params(i, column), ops)
        return images

    def batch_targets(
        self, targets: Any, column: Callable[[int | slice], Any], ops: Kernels, masks: bool
    ) -> Any:
        """The batch's targets (one-hot labels, or masks) through the batch stages."""
        for i, t in self.batch_stages:
            targets = t.targets(targets, self._stage_params(i, column), ops, masks)
        return targets

    @cached_property
    def roi_step(self) -> int | None:
        """Index of the first geometric transform when it can be fused into decoding."""
        for i, t in enumerate(self.transforms):
            if isinstance(t, GeometricTransform):
                return i if isinstance(t, CropTransform) and t.decodes_roi else None
        return None

    @property
    def has_colour(self) -> bool:
        return any(isinstance(t, ColourTransform) for t in self.transforms)

    @property
    def uses_mean(self) -> bool:
        """Whether the colour map weighs the per-channel mean of the image it receives."""
        return any(isinstance(t, ColourTransform) and t.uses_mean for t in self.transforms)

    @property
    def warps(self) -> bool:
        """Whether a transform moves pixels (a geometric one); without one, an image of the
        output size comes through the warp unchanged."""
        return any(isinstance(t, GeometricTransform) for t in self.transforms)

    @property
    def resizes(self) -> bool:
        """Whether the fused warp is an axis-aligned scale and shift (flips included) that clamps
        at the border and samples bilinearly: then a resize of a source window computes it
        (faster than a warp)."""
        geometric = (t for t in self.transforms if isinstance(t, GeometricTransform))
        linear = self.interpolation == "linear"
        return linear and self.fill == "nearest" and all(t.axis_aligned for t in geometric)

    def geometry(
        self, params: dict[str, Scalar], source: Canvas, m: Math, fuse_roi: bool = True
    ) -> Geometry:
        """The decode window and the composed affine map for one sample of size ``source``.

        With ``fuse_roi`` (encoded input) a leading random resized crop becomes the decode
        window, widened to every source pixel the warp reads (:meth:`_window`: the sampler's
        neighbours of the crop's edge pixels, a later zoom-out or rotation shows the image
        around the crop, as it does without a window);
        without it (already decoded arrays) the crop is part of the warp."""
        crop: Box | None = None
        forward, canvas = Affine(), source
        for i, t in enumerate(self.transforms):
            if not isinstance(t, GeometricTransform):
                continue
            p = self._params_of(params, i)
            if fuse_roi and i == self.roi_step and isinstance(t, CropTransform):
                crop = t.crop_box(p, canvas, m)
                forward, canvas = t.box_to_output(crop)
            else:
                step, canvas = t.warp(p, canvas, m)
                forward = step.then_after(forward)
        out_h, out_w = (float(s) for s in self.image_size)
        final = Affine.scale(div(out_w, canvas.w), div(out_h, canvas.h))
        forward = final.then_after(forward)
        if crop is None:
            return Geometry(None, forward)
        roi = self._window(crop, forward, source, m)
        shift = Affine.translate(sub(roi.x, crop.x), sub(roi.y, crop.y))
        return Geometry(roi, forward.then_after(shift))

    def _window(self, crop: Box, forward: Affine, source: Canvas, m: Math) -> Box:
        """The decode window: the ``crop`` box (in ``source``) widened to every pixel the warp
        reads for the output, within the image: the pixels the sampler touches
        (:data:`FOOTPRINTS`) around the source points of the output's outermost pixel centres,
        which ``forward`` (crop-local to output) maps from; along an axis where those reach
        past the image, the whole axis for a fill that maps them back into it (``reflect``,
        ``wrap``). The window changes no output pixel: the warp samples the image as it
        samples the same image given whole (an array); and masks and boxes (mapped from the
        whole image) agree with it."""
        back = forward.inverse()
        h, w = (float(s) for s in self.image_size)
        centres = ((0.5, 0.5), (w - 0.5, 0.5), (0.5, h - 0.5), (w - 0.5, h - 0.5))
        xs = [add(add(mul(back.a, x), mul(back.b, y)), back.c) for x, y in centres]
        ys = [add(add(mul(back.d, x), mul(back.e, y)), back.f) for x, y in centres]
        reach, tolerance = FOOTPRINTS[self.interpolation]
        folds = self.fill in TF_ONLY_FILLS

        def span(
            values: list[Scalar], start: Scalar, length: Scalar, limit: Scalar
        ) -> tuple[Scalar, Scalar]:
            low = values[0]
            high = values[0]
            for v in values[1:]:
                low, high = m.minimum(low, v), m.maximum(high, v)
            # the whole pixels the sampler touches, in source pixels
            first = m.floor(add(add(low, start), tolerance - reach))
            end = neg(m.floor(sub(tolerance - reach, add(high, start))))
            first, end = m.minimum(first, start), m.maximum(end, add(start, length))
            if folds:  # past the image on either side (whole pixels): the whole axis
                past = m.maximum(m.clip(neg(first), 0.0, 1.0), m.clip(sub(end, limit), 0.0, 1.0))
                first, end = sub(first, mul(past, limit)), add(end, mul(past, limit))
            first = m.maximum(first, 0.0)
            return first, sub(m.minimum(end, limit), first)

        x, width = span(xs, crop.x, crop.w, source.w)
        y, height = span(ys, crop.y, crop.h, source.h)
        return Box(y=y, x=x, h=height, w=width)

    def point_maps(
        self, params: dict[str, Any], source: Canvas, fuse_roi: bool
    ) -> tuple[list[PointMap], np.ndarray]:
        """Where a batch's source points land in its outputs (boxes and keypoints), from the
        same per-sample parameters (NumPy) as its pixels: one map of ``(B, N, 2)``
        pixel-corner ``(x, y)`` per stage boundary (the fused warp, then each pixel stage that
        boxes follow, :meth:`PixelTransform.points`), after each of which what lies outside
        the output canvas is gone; and per sample whether the warp mirrors the image. The
        warp's map is axis-aligned where no sample's warp turns or shears (:class:`PointMap`)."""
        m = Math.of(np)
        forward = self.geometry(params, source, m, fuse_roi=fuse_roi).source_forward
        count = np.shape(source.w)
        a, b, c, d, e, f = (np.broadcast_to(np.asarray(v, np.float64), count) for v in forward)

        def warp(xy: np.ndarray) -> np.ndarray:
            x, y = xy[..., 0], xy[..., 1]
            rows = [(a, b, c), (d, e, f)]
            moved = [x * u[:, None] + y * v[:, None] + w[:, None] for u, v, w in rows]
            return np.stack(moved, -1).astype(np.float32)

        stages = [
            PointMap(partial(t.points, p=t.stage(self._params_of(params, i), self.image_size, m)))
            for i, t in self._following("boxes")
        ]
        aligned = not (np.any(b) or np.any(d))
        return [PointMap(warp, axis_aligned=aligned), *stages], a * e - b * d < 0

    def warp_inputs(
        self,
        params: dict[str, Scalar],
        source: Canvas,
        m: Math,
        *,
        fuse_roi: bool,
        masks: bool,
        resize: bool = False,
    ) -> dict[str, list[Scalar]]:
        """What a backend applies per sample, flattened: the decode window (``crop_start`` x, y
        and ``crop_shape`` w, h; with ``fuse_roi`` and a leading random resized crop), the
        destination-to-source ``matrix`` (2x3) of the image warp (with ``resize``, instead the
        source points ``resize_start`` and ``resize_end`` (y, x) of the output's corners), the
        same for masks from full-source mask pixels (with ``masks``, names prefixed ``mask_``),
        the ``offset`` (one value, when the plan has an offset step), the ``colour`` matrix
        (C x (C+1), when the plan has one), its ``colour_mean`` matrix (C x C, the weights of
        the image's per-channel mean, when the plan :attr:`uses_mean`) and the ``stages``
        parameters (when it has pixel or batch stages)."""
        geometry = self.geometry(params, source, m, fuse_roi=fuse_roi)
        out = self._resampling(geometry.forward, resize)
        if geometry.roi is not None:
            out["crop_start"] = [geometry.roi.x, geometry.roi.y]
            out["crop_shape"] = [geometry.roi.w, geometry.roi.h]
        if masks:
            mask = self._resampling(geometry.source_forward, resize)
            out.update({f"mask_{name}": v for name, v in mask.items()})
        offset = self.offset(params)
        if offset is not None:
            out["offset"] = [offset]
        colour = self.colour(params, m)
        if colour is not None:
            out["colour"] = colour.flat()
            if self.uses_mean:
                out["colour_mean"] = colour.flat_means()
        if self.stage_keys:
            out["stages"] = []
            for i, t in self.stages:
                values = t.stage(self._params_of(params, i), self.image_size, m)
                out["stages"].extend(values[name] for name in t.stage_names())
        return out

    def _resampling(self, forward: Affine, resize: bool) -> dict[str, list[Scalar]]:
        """The inputs of one resampling by ``forward``."""
        inverse = forward.inverse()
        if not resize:
            return {"matrix": list(inverse)}
        h, w = (float(s) for s in self.image_size)
        end_x = add(add(mul(inverse.a, w), mul(inverse.b, h)), inverse.c)
        end_y = add(add(mul(inverse.d, w), mul(inverse.e, h)), inverse.f)
        return {"resize_start": [inverse.f, inverse.c], "resize_end": [end_y, end_x]}

    @property
    def has_offset(self) -> bool:
        return any(isinstance(t, OffsetTransform) for t in self.transforms)

    def offset(self, params: dict[str, Scalar]) -> Scalar | None:
        """The value the plan's offset step adds before clipping to the warped image's own
        range (see :class:`~daliaug.transforms.base.OffsetTransform`), or ``None``."""
        for i, t in enumerate(self.transforms):
            if isinstance(t, OffsetTransform):
                return t.offset(self._params_of(params, i))
        return None

    def colour(self, params: dict[str, Scalar], m: Math) -> ColourMatrix | None:
        """The composed colour map, or ``None`` when the plan has no colour transform."""
        if not self.has_colour:
            return None
        total = ColourMatrix.identity(self.channels)
        for i, t in enumerate(self.transforms):
            if isinstance(t, ColourTransform):
                total = t.colour(self._params_of(params, i), self.channels, m).then_after(total)
        return total
