"""OpenCV's image operations for the plan, one sample at a time (each call releases the GIL, so
a thread pool runs samples side by side): decode (libjpeg-turbo through simplejpeg, other
formats through ``cv2.imdecode``), cut the plan's decode window, resample once
(``cv2.warpAffine`` with the fused matrix), shift within range and recolour once
(``cv2.transform``), clip, and the output stage (normalize, dtype, layout); masks decoded and
warped with nearest neighbours (their classes and the labels:
:mod:`daliaug.kernels.targets`). The twins of
:mod:`daliaug.engines.tf.image`: the same definitions, which :mod:`daliaug.parity` holds equal.
"""

from __future__ import annotations

import functools
import itertools

import cv2
import numpy as np
import simplejpeg

from daliaug.engine_spec import EngineSpec
from daliaug.kernels.targets import within
from daliaug.sources.segmentation import MaskTargets
from daliaug.transforms.base import Fill

_BORDERS = {"nearest": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT, "wrap": cv2.BORDER_WRAP}
"""The warp's fill modes as OpenCV's borders (TensorFlow's ``nearest``, ``reflect``, ``wrap``)."""

_LUMA = np.asarray([[0.299, 0.587, 0.114]], np.float32)


def decode(data: bytes | np.ndarray, channels: int) -> np.ndarray:
    """One encoded image as ``uint8`` HWC with ``channels`` channels: JPEGs by libjpeg-turbo
    with the accurate integer IDCT and fancy upsampling (the TF engine's and DALI's CPU
    decoder's settings), PNGs (16 bits to 8 as ``round(v / 257)``) and the rest by OpenCV. A
    file neither decodes raises ``ValueError`` naming why."""
    buffer = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else data
    if buffer[:2].tobytes() == b"\xff\xd8":
        try:
            image = simplejpeg.decode_jpeg(buffer, "RGB" if channels == 3 else "GRAY")
            return image.reshape(image.shape[0], image.shape[1], channels)
        except ValueError:
            pass  # CMYK and other colour spaces libjpeg cannot convert: OpenCV below
    image = cv2.imdecode(buffer, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError("OpenCV cannot decode it")
    if image.dtype == np.uint16:
        image = np.floor(image.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    if image.ndim == 2:
        image = image[..., None]
    if image.shape[2] >= 3:
        image = image[..., 2::-1]  # BGR(A) to RGB
    if channels == 1 and image.shape[2] == 3:
        grey = np.floor(cv2.transform(np.ascontiguousarray(image).astype(np.float32), _LUMA))
        return grey.astype(np.uint8).reshape(*image.shape[:2], 1)
    if channels == 3 and image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    return np.ascontiguousarray(image)


def window(image: np.ndarray, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The plan's decode window of a decoded image (``crop_start`` x, y and ``crop_shape`` w,
    h), or the image where the plan has none: a view, no copy."""
    if "crop_start" not in inputs:
        return image
    x, y = (int(v) for v in inputs["crop_start"])
    w, h = (int(v) for v in inputs["crop_shape"])
    return image[y : y + h, x : x + w]


def index_matrix(matrix: np.ndarray) -> np.ndarray:
    """A destination-to-source pixel-corner matrix (2x3) in index coordinates, as
    ``cv2.warpAffine`` takes it: ``src_idx = A (dst_idx + 0.5) + t - 0.5``."""
    m = np.asarray(matrix, np.float64).reshape(2, 3).copy()
    m[:, 2] += 0.5 * (m[:, 0] + m[:, 1]) - 0.5
    return m


def warp(
    image: np.ndarray,
    matrix: np.ndarray,
    size: tuple[int, int],
    fill: Fill,
    nearest: bool,
    cut: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``image`` resampled onto ``size`` with its destination-to-source pixel-corner
    ``matrix``, in float32, into ``out`` if given: ``fill`` a constant (already rounded: see
    :func:`daliaug.transforms.base.fill_value`) or ``nearest``, ``reflect``, ``wrap``; with
    ``cut`` a constant fill takes every point beyond the outermost pixel centres."""
    h, w = size
    channels = image.shape[2]
    target = out if out is not None else np.empty((h, w, channels), np.float32)
    if channels not in WARPED_WHOLE:
        for group in _channel_groups(channels):
            target[..., group] = warp(image[..., group], matrix, size, fill, nearest, cut)
        return target
    constant = not isinstance(fill, str)
    m = index_matrix(matrix)
    flips = None if nearest else _resize_flips(matrix, size, image.shape[:2])
    if flips is not None:
        # flipped before the resize (the smaller image, uint8): the resize samples the
        # mirrored grid of the mirrored image, and the edges blend alike at both ends
        flip_x, flip_y = flips
        source = image
        if flip_x or flip_y:
            code = -1 if flip_x and flip_y else 1 if flip_x else 0
            source = cv2.flip(source, code).reshape(image.shape)
        source = source.astype(np.float32)
        flat = target.reshape(h, w) if channels == 1 else target
        cv2.resize(source, (w, h), dst=flat, interpolation=cv2.INTER_LINEAR)
        if constant:
            _blend_edges(target, image.shape[:2], float(fill))
            if cut:
                _fill_outside(target, m, image.shape[:2], float(fill))
        return target
    source = image if image.dtype == np.float32 else image.astype(np.float32)
    border = cv2.BORDER_CONSTANT if constant else _BORDERS[str(fill)]
    value = (float(fill),) * 4 if constant else (0.0,) * 4
    flags = (cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR) | cv2.WARP_INVERSE_MAP
    cv2.warpAffine(
        source,
        m,
        (w, h),
        dst=target.reshape(h, w) if channels == 1 else target,
        flags=flags,
        borderMode=border,
        borderValue=value,
    )
    if cut and constant:
        _fill_outside(target, m, image.shape[:2], float(fill))
    return target


WARPED_WHOLE = (1, 3, 4)
"""The channel counts OpenCV's warp and resize take whole; with others (2, 5 and more) they
sample otherwise (several grey levels off the same image warped channel by channel)."""


def _channel_groups(channels: int) -> list[slice]:
    """``channels`` cut into runs of :data:`WARPED_WHOLE` sizes: fours, then a three or ones."""
    fours, rest = divmod(channels, 4)
    sizes = [4] * fours + ([3] if rest == 3 else [1] * rest)
    starts = np.cumsum([0, *sizes])
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(starts)]


def _resize_flips(
    matrix: np.ndarray, size: tuple[int, int], source: tuple[int, int]
) -> tuple[bool, bool] | None:
    """Where ``cv2.resize`` (and a flip) computes the warp, whether it flips ``x`` and
    ``y``; else ``None``: a map that is axis-aligned and takes the output's
    corners to the source's (a decoded crop window, a plain resize, possibly flipped), which
    samples at most half a pixel beyond the source's outermost pixel centres (``cv2.resize``
    clamps there, as the ``nearest`` fill does; a constant fill is blended in after,
    :func:`_blend_edges`)."""
    m = np.asarray(matrix, np.float64).reshape(2, 3)
    if abs(m[0, 1]) > 1e-9 or abs(m[1, 0]) > 1e-9:
        return None
    (h, w), (sh, sw) = size, source
    x0, y0 = m[0, 2], m[1, 2]
    x1, y1 = m[0, 0] * w + x0, m[1, 1] * h + y0
    whole = all(
        abs(min(a, b)) < 1e-3 and abs(max(a, b) - end) < 1e-3
        for a, b, end in ((x0, x1, sw), (y0, y1, sh))
    )
    if not whole:
        return None
    return bool(x0 > x1), bool(y0 > y1)


def _blend_edges(image: np.ndarray, source: tuple[int, int], fill: float) -> None:
    """A resize (``cv2.resize``, which clamps) of a ``source``-sized image made the warp's
    with a constant ``fill``: each output row or column whose source coordinate lies beyond
    the outermost pixel centres by ``t`` (< 1) takes ``(1 - t) x + t fill``, as bilinear
    sampling with the fill outside gives (one axis after the other: the fill is constant)."""
    for axis, length in ((1, source[1]), (0, source[0])):
        for k, t in _beyond(length, image.shape[axis]):
            line = image[:, k] if axis == 1 else image[k]
            line *= 1.0 - t
            line += t * fill


@functools.lru_cache(maxsize=1024)
def _beyond(length: int, count: int) -> tuple[tuple[int, np.float32], ...]:
    """The lines of :func:`_blend_edges` for a resize of ``length`` to ``count`` pixels: each
    output line whose source coordinate lies beyond the outermost pixel centres, and by how
    much (a few lines at each end, the same for every sample of that size)."""
    at = (np.arange(count) + 0.5) * (length / count) - 0.5
    beyond = np.clip(np.maximum(-at, at - (length - 1)), 0.0, 1.0).astype(np.float32)
    return tuple((int(k), beyond[k]) for k in np.flatnonzero(beyond > 0))


def _fill_outside(image: np.ndarray, m: np.ndarray, source: tuple[int, int], fill: float) -> None:
    """``fill`` wherever the index-coordinate matrix ``m`` maps a pixel of ``image`` beyond
    the source's outermost pixel centres (:func:`~daliaug.kernels.targets.within`), in place."""
    rows, cols = np.mgrid[0 : image.shape[0], 0 : image.shape[1]].astype(np.float64)
    x = m[0, 0] * cols + m[0, 1] * rows + m[0, 2]
    y = m[1, 0] * cols + m[1, 1] * rows + m[1, 2]
    image[~within(x, y, source[0], source[1])] = fill


def recolour(image: np.ndarray, inputs: dict[str, np.ndarray], channels: int) -> None:
    """One resampled float32 image shifted within its own range (``offset``), then through
    ``colour`` (``[M | t]``, plus ``colour_mean`` ``N`` times the image's per-channel mean)
    and clipped to 0..255 where ``recolour`` says the map changes anything; in place."""
    if "offset" in inputs:
        low, high = float(image.min()), float(image.max())
        np.clip(image + np.float32(inputs["offset"][0]), low, high, out=image)
    if "colour" not in inputs or not inputs["recolour"]:
        return
    colour = np.asarray(inputs["colour"], np.float32).reshape(channels, channels + 1).copy()
    if "colour_mean" in inputs:
        means = np.asarray(inputs["colour_mean"], np.float32).reshape(channels, channels)
        mean = image.reshape(-1, channels).mean(axis=0)
        colour[:, channels] += means @ mean
    flat = image.reshape(image.shape[0], image.shape[1], channels)
    moved = cv2.transform(flat, colour)
    np.clip(moved.reshape(image.shape), 0.0, 255.0, out=image)


def normalizer(spec: EngineSpec) -> np.ndarray | None:
    """The output's normalization ``(x - mean) * (1 / std)`` as a colour matrix ``[diag(1 /
    std) | -mean / std]`` for ``cv2.transform`` (``None`` for ``uint8`` output)."""
    if spec.output.dtype == "uint8":
        return None
    mean, std = spec.output.mean_std(spec.channels)
    scale = np.float32(1.0) / np.broadcast_to(np.asarray(std, np.float32), (spec.channels,))
    shift = -np.broadcast_to(np.asarray(mean, np.float32), (spec.channels,)) * scale
    return np.concatenate([np.diag(scale), shift[:, None]], 1).astype(np.float32)


def to_output(image: np.ndarray, norm: np.ndarray | None, layout: str, out: np.ndarray) -> None:
    """One float32 0..255 HWC image written into ``out`` (its row of the output batch, in
    ``layout``): for ``uint8`` output (``norm`` ``None``) rounded half up, else through the
    normalization matrix ``norm`` (:func:`normalizer`) in the output's dtype."""
    if norm is not None and layout == "NHWC" and out.dtype == np.float32:
        cv2.transform(image, norm, dst=out.reshape(image.shape))  # no copy: the row itself
        return
    if norm is not None:
        image = cv2.transform(image, norm).reshape(image.shape)
    if layout == "NCHW":
        image = np.moveaxis(image, -1, 0)
    if norm is None:
        np.add(image, np.float32(0.5), out=out, casting="unsafe")  # 0..255: truncation floors
    else:
        np.copyto(out, image, casting="unsafe")


ALIGN = 64
"""Bytes the output batches are aligned to: TensorFlow takes a ``tf.numpy_function``'s result
of this alignment as it is, and copies any other (at ~1 ms per MB here; ``bench/README.md``)."""


def output_array(spec: EngineSpec, count: int) -> np.ndarray:
    """An empty batch of ``count`` output images (dtype and layout as the output says), its
    data aligned to :data:`ALIGN` bytes."""
    h, w = spec.image_size
    c = spec.channels
    shape = (count, h, w, c) if spec.output.layout == "NHWC" else (count, c, h, w)
    dtype = np.dtype(spec.output.dtype)
    size = count * h * w * c * dtype.itemsize
    raw = np.empty(size + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start : start + size].view(dtype).reshape(shape)


def decode_mask(data: bytes | np.ndarray, spec: EngineSpec) -> np.ndarray:
    """One encoded mask (a file's bytes, or a shard member's zero-padded row) as float32 HWC:
    one channel of class indices, or RGB for colour-coded masks."""
    source = spec.masks
    assert isinstance(source, MaskTargets)
    table = source.class_table()
    buffer = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else data
    image = cv2.imdecode(buffer, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError("OpenCV cannot decode the mask")
    if image.ndim == 2:
        image = image[..., None]
    if image.shape[2] >= 3:
        image = image[..., 2::-1]
    if table is not None and image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    if table is None and image.shape[2] != 1:
        image = image[..., :1]
    return np.ascontiguousarray(image, np.float32)
