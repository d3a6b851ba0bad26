"""DALI's image operators for the plan: decode (with ROI), resample once, recolour once,
normalize, and the targets (labels, masks). Functions of ``DataNode``s, used inside a graph
definition (:mod:`daliaug.engines.dali.pipeline`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from math import floor

import numpy as np
import nvidia.dali.math as dmath
from nvidia.dali import fn, types
from nvidia.dali.pipeline import DataNode

from daliaug.config import HW_DECODER_LOAD
from daliaug.engine_spec import EngineSpec
from daliaug.engines.dali import branches, pixels
from daliaug.engines.dali.canary import WindowMode, window_mode
from daliaug.engines.select import Device
from daliaug.errors import BackendError
from daliaug.plan import Plan
from daliaug.sources.segmentation import MaskTargets
from daliaug.transforms.base import CUT_TOLERANCE, TF_ONLY_FILLS

_DTYPES = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8}


def decoder_args(
    device: Device,
    image_type: types.DALIImageType,
    size_hint: tuple[int, int] | None = None,
    roi: bool = False,
    hw_decoder_load: float = HW_DECODER_LOAD,
) -> dict[str, object]:
    """The arguments of DALI's image decoders on ``device``. On the GPU (``mixed``): chroma
    upsampled as the CPU decoder does it (``jpeg_fancy_upsampling``) where the whole image is
    decoded, the hardware decoder's share ``hw_decoder_load`` (:attr:`Config.hw_decoder_load`),
    and its buffers allocated up front for images of ``size_hint`` ``(height, width)`` where
    known. A decode window (``roi``) goes without fancy upsampling: nvJPEG before 13.2 cannot
    apply it to a window, and DALI then turns it off with a warning for every image (seen on
    an H200: 110,000 lines in one benchmark log)."""
    args: dict[str, object] = {
        "device": "cpu",
        "output_type": image_type,
        "adjust_orientation": False,
    }
    if device == "gpu":
        args.update(device="mixed", hw_decoder_load=hw_decoder_load)
        if not roi:
            args.update(jpeg_fancy_upsampling=True)
        if size_hint is not None:
            args.update(preallocate_height_hint=size_hint[0], preallocate_width_hint=size_hint[1])
    return args


def decode(
    encoded: DataNode,
    warp: dict[str, object],
    spec: EngineSpec,
    size_hint: tuple[int, int] | None = None,
    mode: WindowMode | None = None,
) -> DataNode:
    """Decode a batch of JPEG/PNG bytes (nvJPEG on the GPU) to the config's channels: only the
    plan's decode window (``crop_start`` x, y and ``crop_shape`` w, h) when ``warp`` has one,
    decoded alone or cut from the whole image as ``mode`` says (default: as
    :func:`~daliaug.engines.dali.canary.window_mode` says for ``decode_window``);
    ``size_hint``: see :func:`decoder_args`."""
    image_type = types.RGB if spec.channels == 3 else types.GRAY
    load = spec.hw_decoder_load
    device = spec.device
    mode = mode or window_mode(spec.decode_window, device, spec.device_id)
    whole = "crop_start" not in warp or mode == "whole"
    args = decoder_args(device, image_type, size_hint, roi=not whole, hw_decoder_load=load)
    window = {"normalized_anchor": False, "normalized_shape": False, "axis_names": "WH"}
    if not whole:
        return fn.decoders.image_slice(
            encoded, warp["crop_start"], warp["crop_shape"], **window, **args
        )
    image = fn.decoders.image(encoded, **args)
    if "crop_start" not in warp:
        return image
    return fn.slice(image, warp["crop_start"], warp["crop_shape"], **window)


def resample(
    image: DataNode,
    warp: dict[str, object],
    prefix: str,
    spec: EngineSpec,
    nearest: bool,
    fill: object,
    dtype: types.DALIDataType | None = types.FLOAT,
    cut: bool = False,
) -> DataNode:
    """Resample once to ``image_size``, to ``dtype`` (``None``: the input's): a resize of a
    source window when the plan is an axis-aligned map that clamps at the border
    (``resize_start``/``resize_end``), else an affine warp (``matrix``, destination to
    source). A constant ``fill`` is rounded half up and saturated to 0..255 first; with ``cut``
    it takes every point beyond the outermost pixel centres (config ``fill_edge: cut``)."""
    interp = types.INTERP_NN if nearest else types.INTERP_LINEAR
    size = [float(s) for s in spec.image_size]
    out = {} if dtype is None else {"dtype": dtype}
    if f"{prefix}resize_start" in warp:
        return fn.resize(
            image,
            size=size,
            roi_start=warp[f"{prefix}resize_start"],
            roi_end=warp[f"{prefix}resize_end"],
            roi_relative=False,
            interp_type=interp,
            antialias=False,
            **out,
        )
    if fill in TF_ONLY_FILLS:
        raise BackendError(
            f"fill {fill!r}: DALI's warp has no such border; this config runs on the TensorFlow "
            "backend (backend: tf), or give the transforms a constant fill or 'nearest'"
        )
    constant = None if fill == "nearest" else float(min(max(floor(fill + 0.5), 0), 255))
    border = {} if constant is None or cut else {"fill_value": constant}
    matrix = warp[f"{prefix}matrix"]
    warped = fn.warp_affine(image, matrix=matrix, size=size, interp_type=interp, **border, **out)
    if constant is None or not cut:
        return warped
    return _fill_outside(warped, image, matrix, spec.image_size, constant)


def _fill_outside(
    warped: DataNode, image: DataNode, matrix: DataNode, size: tuple[int, int], fill: float
) -> DataNode:
    """``warped`` (border-clamped) with ``fill`` wherever the source point of a pixel lies
    beyond the outermost pixel centres of ``image`` (by more than :data:`CUT_TOLERANCE`):
    SciPy's ``constant`` mode. The source points are the output's pixel centres mapped by
    ``matrix`` (pixel-corner coordinates)."""
    h, w = size
    centres = np.stack(np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5), -1)
    grid = types.Constant(centres.astype(np.float32), device=warped.device)
    points = fn.coord_transform(grid, MT=matrix, dtype=types.FLOAT)
    first = 0.5 - CUT_TOLERANCE  # the first centres, in pixel-corner coordinates
    last = image.shape(dtype=types.FLOAT, device=image.device) - first  # h and w - first
    height, width = last[0], last[1]
    x, y = points[:, :, 0:1], points[:, :, 1:2]
    inside = (x >= first) & (x <= width) & (y >= first) & (y <= height)
    return warped * inside + fill * (1 - inside)


def stage_column(warp: dict[str, object]) -> Callable[[int | slice], DataNode]:
    """The per-sample value of the plan's stage parameter ``k``, or the per-sample vector of a
    range of them (see :meth:`Plan.pixels`): one CPU operator per parameter or range of the
    graph, however often it is read."""

    @cache
    def read(key: int | tuple[int, int, int | None]) -> DataNode:
        return warp["stages"][slice(*key) if isinstance(key, tuple) else key]

    return lambda k: read((k.start, k.stop, k.step) if isinstance(k, slice) else k)


def _mean_shift(image: DataNode, means: DataNode, channels: int) -> DataNode:
    """``N @ mean`` of each HWC image as a ``(1, 1, C)`` tensor to add to it: ``means`` is
    ``N`` (C x C per sample), ``mean`` the image's per-channel mean."""
    mean = fn.reshape(fn.reductions.mean(image, axes=[0, 1]), shape=[1, channels])
    return fn.reshape(fn.coord_transform(mean, M=means), shape=[1, 1, channels])


def _recolour(image: DataNode, warp: dict[str, object], channels: int) -> DataNode:
    """``image`` through the ``colour`` matrix, plus the ``colour_mean`` matrix times the
    image's per-channel mean when given (unclipped)."""
    moved = fn.coord_transform(image, MT=warp["colour"], dtype=types.FLOAT)
    if "colour_mean" in warp:
        moved = moved + _mean_shift(image, warp["colour_mean"], channels)
    return moved


def recolours(warp: dict[str, object], channels: int) -> DataNode | bool:
    """Per sample, whether :func:`_recolour` changes any value: ``colour`` is not the
    identity or ``colour_mean`` is not zero (otherwise it gives back each value exactly:
    products with 1 and 0 and sums with 0 round nothing). Computed in the graph where DALI's
    reader reads the images (a plain bool where both are the same for every sample); the host
    computes it for the graphs it feeds (``recolour``,
    :class:`~daliaug.engines.feed.WarpLayout`)."""
    change = _deviation(warp["colour"], np.eye(channels, channels + 1, dtype=np.float32))
    if "colour_mean" in warp:
        other = _deviation(warp["colour_mean"], np.zeros((channels, channels), np.float32))
        both = isinstance(change, float) and isinstance(other, float)
        change = max(change, other) if both else dmath.max(change, other)
    return change > 0.0


def _deviation(value: object, base: np.ndarray) -> DataNode | float:
    """The largest absolute difference of a per-sample matrix argument from ``base``: a
    number where ``value`` is the same for every sample (:func:`~daliaug.engines.dali.math.
    as_tensor_arg`'s flat list of constants)."""
    if isinstance(value, list):
        return float(np.abs(np.reshape(value, base.shape) - base).max())
    return fn.reductions.max(dmath.abs(value - types.Constant(base)))


def finish(
    image: DataNode,
    warp: dict[str, object],
    spec: EngineSpec,
    plan: Plan,
    column: Callable[[int | slice], DataNode] | None = None,
) -> DataNode:
    """A batch of resampled float images to the output (``plan``: ``config.plan``, read once
    per graph): shifted and clipped to each image's
    own range (the plan's ``offset``), recoloured where ``recolour`` holds (the plan's
    ``colour`` matrix, plus its ``colour_mean`` matrix times the image's per-channel mean when
    given; every sample where ``warp`` has no ``recolour`` predicate) and clipped to 0..255,
    through the pixel and batch stages (clipped to 0..255
    again), normalized (``uint8`` output: rounded half up) in the output dtype and layout;
    nothing is rounded before that. ``column``: the graph's :func:`stage_column` (one is made
    without it)."""
    if "offset" in warp:  # an offset step always comes with a colour matrix (maybe identity)
        # the offset is a regular input of the arithmetic here, so on the image's device
        offset = warp["offset"].gpu() if image.device == "gpu" else warp["offset"]
        low, high = fn.reductions.min(image), fn.reductions.max(image)
        image = dmath.clamp(image + offset, low, high)
    if "colour" in warp:
        recolour = partial(_recolour, warp=warp, channels=spec.channels)
        if "recolour" in warp:  # 1.0 or 0.0 from the host, or recolours' predicate
            image = branches.where(warp["recolour"] > 0.5, recolour, image)
        else:  # every sample (see pipeline.feed_form)
            image = recolour(image)
        image = dmath.clamp(image, 0.0, 255.0)
    if "stages" in warp:
        column = column or stage_column(warp)
        image = plan.pixels(image, column, pixels)
        image = plan.batch_images(image, column, pixels)
        # the stages' float arithmetic can leave 0..255 by a rounding step (255.00002)
        image = dmath.clamp(image, 0.0, 255.0)
    mean, std = spec.output.mean_std(spec.channels)
    return fn.crop_mirror_normalize(
        image,
        dtype=_DTYPES[spec.output.dtype],
        output_layout="HWC" if spec.output.layout == "NHWC" else "CHW",
        mean=mean,
        std=std,
    )


def _colour_to_index(mask: DataNode, source: MaskTargets) -> DataNode:
    """Class index of each colour of the table; anything else (the fill) is ``ignore_index``."""
    table = source.class_table()
    assert table is not None  # only called for colour-coded masks
    key = fn.coord_transform(mask, M=[65536.0, 256.0, 1.0], dtype=types.FLOAT)[:, :, 0]
    index = source.ignore_index
    for k, colour_key in enumerate(table.keys):
        index = index + (k - source.ignore_index) * (key == colour_key)
    return index


def mask_target(
    encoded: DataNode,
    warp: dict[str, object],
    spec: EngineSpec,
    num_classes: int,
    stages: Callable[[DataNode], DataNode] | None = None,
) -> DataNode:
    """Decode masks, warp them like their images (nearest, ``mask_fill``), pass them (still
    HWC) through the pixel and batch ``stages`` that move pixels, if given, and encode them as
    class indices or one-hot."""
    source = spec.masks
    if not isinstance(source, MaskTargets):
        raise TypeError("masks need a segmentation source")
    image_type = types.RGB if source.colour_coded else types.GRAY
    args = decoder_args(spec.device, image_type, hw_decoder_load=spec.hw_decoder_load)
    mask = fn.decoders.image(encoded, **args)
    mask = resample(mask, warp, "mask_", spec, nearest=True, fill=source.mask_fill, dtype=None)
    if stages is not None:
        mask = stages(mask)
    index = _colour_to_index(mask, source) if source.colour_coded else mask[:, :, 0]
    if source.mask_output == "index":
        dtype = types.UINT8 if source.mask_dtype == "uint8" else types.INT32
        return fn.cast(index, dtype=dtype)
    one_hot = fn.one_hot(
        fn.cast(index, dtype=types.INT32), num_classes=num_classes, dtype=types.FLOAT
    )
    return one_hot if spec.output.layout == "NHWC" else fn.transpose(one_hot, perm=[2, 0, 1])


def label_target(label: DataNode, spec: EngineSpec, num_classes: int) -> DataNode:
    """The labels (or ``raw`` targets) as ``label_mode`` says, on the graph's device."""
    if spec.label_mode == "categorical":
        label = fn.one_hot(label, num_classes=num_classes, dtype=types.FLOAT)
    elif spec.label_mode == "binary":
        label = fn.reshape(fn.cast(label, dtype=types.FLOAT), shape=[1])
    elif spec.label_mode == "float":
        label = fn.cast(label, dtype=types.FLOAT)
    return label.gpu() if spec.device == "gpu" else label
