"""The OpenCV engine's pixel operations for per-sample pixel stages and batch stages: the
:class:`~daliaug.kernels.Kernels` protocol on NumPy batches, the twins of
:mod:`daliaug.engines.tf.pixels` (same names, same arguments, the definitions stated there).

Images are ``(N, H, W, C)`` ``float32`` batches on the 0..255 scale; a per-sample parameter is
a ``(N,)`` array (or a number, the same for every sample). :func:`select` and :func:`choose`
run an operation only on the samples that chose it, as DALI's conditionals do: the operation
gets those samples' rows, and every ``(N, ...)`` parameter a kernel is given inside it is cut
to the same rows (:data:`_ROWS`), so a kernel never sees another sample's values. Filters,
lookups and colour conversions are OpenCV's per image (each releases the GIL); the rest is
NumPy over the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

import cv2
import numpy as np

from daliaug.kernels import MIN_SIGMA, POSTERIZE_STEPS, SMOOTH_DETAIL, clahe_neighbours

Value = Any
Op = Callable[[np.ndarray], np.ndarray]

_ROWS: ContextVar[np.ndarray | None] = ContextVar("daliaug_opencv_rows", default=None)
"""The batch rows an operation run by :func:`select` computes (``None``: all of them)."""


def _rows(value: Value) -> Value:
    """A per-sample parameter cut to the rows being computed (a number as it is)."""
    rows = _ROWS.get()
    if rows is None or np.ndim(value) == 0:
        return value
    return np.asarray(value)[rows]


def _per_sample(value: Value, rank: int) -> np.ndarray:
    """A ``(N,)`` parameter (or a number) as ``float32`` shaped to broadcast against a
    rank-``rank`` batch."""
    return np.asarray(_rows(value), np.float32).reshape([-1] + [1] * (rank - 1))


def _each(value: Value, n: int) -> np.ndarray:
    """A per-sample parameter as ``n`` values (a number repeated)."""
    return np.broadcast_to(np.asarray(_rows(value), np.float32).reshape(-1), (n,))


def _quantized(images: np.ndarray) -> np.ndarray:
    """Round half up and saturate to the integers 0..255 (still ``float32``)."""
    return np.clip(np.floor(images + 0.5), 0.0, 255.0)


def _box(shape: tuple[int, ...], y0: Value, x0: Value, h: Value, w: Value) -> np.ndarray:
    """``(N, H, W)`` booleans: the whole pixels of each sample's box (as the TF engine's)."""
    rows = np.arange(shape[1], dtype=np.float32)[None, :, None]
    cols = np.arange(shape[2], dtype=np.float32)[None, None, :]
    y0, x0, h, w = (_per_sample(v, 3) for v in (y0, x0, h, w))
    return (rows >= y0) & (rows < y0 + h) & (cols >= x0) & (cols < x0 + w)


def _trailing(mask: np.ndarray, rank: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (rank - 3))


def _partner(batch: np.ndarray, partner: Value) -> np.ndarray:
    return batch[np.asarray(partner).astype(np.int64)]


def solarize(images: np.ndarray, threshold: Value) -> np.ndarray:
    """``255 - x`` where ``x >= threshold``, else ``x``."""
    return np.where(images >= _per_sample(threshold, 4), 255.0 - images, images)


def add_clipped(images: np.ndarray, delta: Value) -> np.ndarray:
    """``clip(x + delta, 0, 255)``, one ``delta`` per sample."""
    return np.clip(images + _per_sample(delta, 4), 0.0, 255.0)


def posterize(images: np.ndarray, bits: Value) -> np.ndarray:
    """The top ``bits`` bits of each value rounded to ``uint8``."""
    index = np.clip(np.floor(np.asarray(_rows(bits), np.float32) + 0.5), 0, 8).astype(np.int64)
    step = np.asarray(POSTERIZE_STEPS, np.float32)[index].reshape(-1, 1, 1, 1)
    return np.floor(_quantized(images) / step) * step


def _per_channel(images: np.ndarray, op: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``op`` on each ``uint8`` channel of each image (rounded half up), as ``float32``."""
    values = _quantized(images).astype(np.uint8)
    out = np.empty(images.shape, np.float32)
    for i in range(images.shape[0]):
        for c in range(images.shape[3]):
            out[i, :, :, c] = op(np.ascontiguousarray(values[i, :, :, c]))
    return out


def equalize(images: np.ndarray) -> np.ndarray:
    """OpenCV's ``equalizeHist`` of each channel rounded to ``uint8`` (the definition)."""
    return _per_channel(images, cv2.equalizeHist)


def auto_contrast(images: np.ndarray) -> np.ndarray:
    """Stretch each channel from its own ``[min, max]`` to ``[0, 255]`` (a flat one kept)."""
    low = images.min(axis=(1, 2), keepdims=True)
    high = images.max(axis=(1, 2), keepdims=True)
    spread = high > low
    scale = 255.0 / np.where(spread, high - low, 255.0)
    return np.minimum((images - np.where(spread, low, 0.0)) * scale, 255.0).astype(np.float32)


def sharpness(images: np.ndarray, factor: Value) -> np.ndarray:
    """PIL's ``ImageEnhance.Sharpness`` (the one-pixel border kept)."""
    kernel = np.asarray(SMOOTH_DETAIL, np.float32) / 13.0
    detail = np.zeros_like(images)
    h, w = images.shape[1:3]
    if h > 2 and w > 2:
        for i in range(images.shape[0]):
            smooth = cv2.filter2D(images[i], -1, kernel, borderType=cv2.BORDER_CONSTANT)
            detail[i, 1:-1, 1:-1] = smooth.reshape(images.shape[1:])[1:-1, 1:-1]
    return np.clip(images + (1.0 - _per_sample(factor, 4)) * detail, 0.0, 255.0)


def gaussian_blur(images: np.ndarray, sigma: Value, size: int) -> np.ndarray:
    """Each image correlated with a normalized ``size`` x ``size`` Gaussian of its own
    ``sigma``, mirrored at the border without repeating the edge (``reflect_101``)."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"gaussian_blur needs an odd kernel size, got {size}")
    offsets = np.arange(-(size // 2), size // 2 + 1, dtype=np.float32)
    sigmas = np.maximum(_each(sigma, images.shape[0]), MIN_SIGMA)
    out = np.empty_like(images)
    for i, s in enumerate(sigmas):
        taps = np.exp(-0.5 * np.square(offsets / s))
        taps = (taps / taps.sum()).astype(np.float32)
        blurred = cv2.sepFilter2D(images[i], -1, taps, taps, borderType=cv2.BORDER_REFLECT_101)
        out[i] = blurred.reshape(images.shape[1:])
    return out


def erase(
    images: np.ndarray, y0: Value, x0: Value, h: Value, w: Value, fill: Sequence[Value]
) -> np.ndarray:
    """The box (whole pixels) set to ``fill``, one value per channel."""
    n = images.shape[0]
    values = np.stack([_each(v, n) for v in fill], 1)[:, None, None, :]
    inside = _box(images.shape, y0, x0, h, w)[..., None]
    return np.where(inside, values, images).astype(np.float32)


def erase_noise(
    images: np.ndarray,
    y0: Value,
    x0: Value,
    h: Value,
    w: Value,
    mean: float,
    std: float,
    seed: Value,
) -> np.ndarray:
    """:func:`erase` with noise ``clip(mean + std * n, 0, 255)``, ``n ~ N(0, 1)`` drawn here,
    seeded by the first sample's ``seed`` (each engine's noise is its own)."""
    first = float(np.reshape(_rows(seed), -1)[0]) if np.size(_rows(seed)) else 0.0
    rng = np.random.default_rng(int(first * 2**31))
    noise = (mean + std * rng.standard_normal(images.shape)).astype(np.float32)
    inside = _box(images.shape, y0, x0, h, w)[..., None]
    return np.where(inside, np.clip(noise, 0.0, 255.0), images)


def _sample(
    images: np.ndarray, x: np.ndarray, y: np.ndarray, fill: float, nearest: bool
) -> np.ndarray:
    """Each sample at the points ``(x, y)`` (``(N, H', W')``, index coordinates): nearest
    (half up) or bilinear, outside the image ``fill`` (the TF engine's ``_sample``)."""
    n, h, w, c = images.shape
    padded = np.pad(
        images.astype(np.float32), [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=fill
    )
    flat = padded.reshape(-1, c)
    stride = w + 2
    base = (np.arange(n) * ((h + 2) * stride))[:, None, None]
    x, y = np.clip(x, -1.0, float(w)), np.clip(y, -1.0, float(h))
    if nearest:
        x0, y0 = np.floor(x + 0.5), np.floor(y + 0.5)
    else:
        x0, y0 = np.minimum(np.floor(x), w - 1.0), np.minimum(np.floor(y), h - 1.0)
    at = base + (y0.astype(np.int64) + 1) * stride + x0.astype(np.int64) + 1
    if nearest:
        return flat[at]
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    top = flat[at] * (1 - fx) + flat[at + 1] * fx
    bottom = flat[at + stride] * (1 - fx) + flat[at + stride + 1] * fx
    return (top * (1 - fy) + bottom * fy).astype(np.float32)


def _grid(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.arange(images.shape[1], dtype=np.float32)[None, :, None]
    cols = np.arange(images.shape[2], dtype=np.float32)[None, None, :]
    return rows, cols


def _wrapped(v: np.ndarray, period: Any) -> np.ndarray:
    return v - period * np.floor(v / period)


def _reflected(v: np.ndarray, size: float) -> np.ndarray:
    """Coordinates mirrored about the image's edges (``BORDER_REFLECT``), then clamped."""
    t = _wrapped(v, 2.0 * size)
    t = np.where(t >= size, 2.0 * size - t - 1.0, t)
    return np.clip(t, 0.0, size - 1.0)


def perspective(
    images: np.ndarray, matrix: Sequence[Value], fill: float | str, nearest: bool
) -> np.ndarray:
    """Projective resampling onto the same size (the TF engine's definition)."""
    rows, cols = _grid(images)
    m = [_per_sample(v, 3) for v in matrix]
    k = m[6] * cols + m[7] * rows + 1.0
    x = (m[0] * cols + m[1] * rows + m[2]) / k
    y = (m[3] * cols + m[4] * rows + m[5]) / k
    if isinstance(fill, str):
        x, y = _reflected(x, float(images.shape[2])), _reflected(y, float(images.shape[1]))
    return _sample(images, x, y, 0.0 if isinstance(fill, str) else float(fill), nearest)


def _folded(v: np.ndarray, size: float, fill: float | str) -> np.ndarray:
    """Coordinates brought inside for a ``fill`` mode (the TF engine's ``_folded``)."""
    if not isinstance(fill, str):
        return v
    if fill == "reflect":
        t = _wrapped(np.abs(v), 2.0 * size)
        v = np.where(t < size, t, 2.0 * size - t - 1.0)
    return np.clip(v, 0.0, size - 1.0)


def elastic(
    images: np.ndarray, values: Any, grid: int, fill: float | str, nearest: bool
) -> np.ndarray:
    """An elastic distortion (the TF engine's definition)."""
    values = np.asarray(_rows(values), np.float32)
    nodes = values[:, 3:].reshape(-1, grid, grid)
    nodes = np.concatenate([nodes, nodes[:, :1]], 1)
    nodes = np.concatenate([nodes, nodes[:, :, :1]], 2)[..., None]
    rows, cols = _grid(images)
    spacing = values[:, 0].reshape(-1, 1, 1)
    u = _wrapped(cols / spacing, float(grid)) + 0.0 * rows
    v = _wrapped(rows / spacing, float(grid)) + 0.0 * cols
    shift = _sample(nodes, u, v, 0.0, False)[..., 0]
    x = _folded(cols + shift, float(images.shape[2]), fill)
    y = _folded(rows + shift, float(images.shape[1]), fill)
    return _sample(images, x, y, 0.0 if isinstance(fill, str) else float(fill), nearest)


def clahe(images: np.ndarray, tiles: tuple[int, int], clip_limit: float) -> np.ndarray:
    """Keras' ``ContrastLimitedAdaptiveHistogramEqualization`` (the TF engine's definition)."""
    rows, cols = tiles
    n, h, w, c = images.shape
    th, tw = -(-h // rows), -(-w // cols)
    padded = np.pad(images, [(0, 0), (0, th * rows - h), (0, tw * cols - w), (0, 0)], "symmetric")
    values = np.clip(padded.astype(np.int64), 0, 255)
    tiled = values.reshape(n, rows, th, cols, tw, c).transpose(0, 1, 3, 5, 2, 4)
    tiled = tiled.reshape(-1, th * tw)
    count = tiled.shape[0]
    ids = tiled + 256 * np.arange(count)[:, None]
    hist = np.bincount(ids.ravel(), minlength=count * 256).astype(np.float32).reshape(count, 256)
    area = float(th * tw)
    if clip_limit > 0:
        cut = np.minimum(hist, np.float32(clip_limit * area / 256.0))
        hist = cut + (hist - cut).sum(axis=1, keepdims=True) / np.float32(256.0)
    cdf = np.cumsum(hist, axis=1, dtype=np.float32)
    span = area - cdf[:, :1]
    lut = (cdf - cdf[:, :1]) * np.float32(255.0) / np.where(span == 0.0, 1.0, span)
    lut = np.clip(lut, 0.0, 255.0).reshape(n, rows, cols, c, 256)
    lut = np.concatenate([lut[:, :1], lut, lut[:, -1:]], 1)
    lut = np.concatenate([lut[:, :, :1], lut, lut[:, :, -1:]], 2).reshape(-1)

    y0, y1, wy = (v[None, :, None, None] for v in clahe_neighbours(th * rows, th, rows))
    x0, x1, wx = (v[None, None, :, None] for v in clahe_neighbours(tw * cols, tw, cols))
    base = (np.arange(n)[:, None, None, None] * (rows + 2) * (cols + 2) * c) * 256
    base = base + np.arange(c)[None, None, None, :] * 256 + values

    def table(y: np.ndarray, x: np.ndarray) -> np.ndarray:
        return lut[base + (y * (cols + 2) * c + x * c) * 256]

    top = table(y0, x0) * (1.0 - wx) + table(y0, x1) * wx
    bottom = table(y1, x0) * (1.0 - wx) + table(y1, x1) * wx
    return (top * (1.0 - wy) + bottom * wy)[:, :h, :w, :].astype(np.float32)


def _hsv(images: np.ndarray) -> np.ndarray:
    """``(N, H, W, 3)`` HSV of the 0..255 RGB values: hue in turns, saturation 0..1, value
    0..255 (TensorFlow's ``rgb_to_hsv``), by OpenCV's conversion (hue in degrees)."""
    out = np.empty_like(images)
    for i in range(images.shape[0]):
        out[i] = cv2.cvtColor(images[i], cv2.COLOR_RGB2HSV)
    out[..., 0] *= np.float32(1.0 / 360.0)
    return out


def _rgb(hsv: np.ndarray) -> np.ndarray:
    """:func:`_hsv`'s inverse, clipped to 0..255."""
    hsv[..., 0] *= np.float32(360.0)
    out = np.empty_like(hsv)
    for i in range(hsv.shape[0]):
        out[i] = cv2.cvtColor(hsv[i], cv2.COLOR_HSV2RGB)
    return np.clip(out, 0.0, 255.0)


def keras_saturation(images: np.ndarray, factor: Value, low: float, high: float) -> np.ndarray:
    """Keras' ``RandomSaturation``: ``S' = clip(factor * S, low, high)`` in HSV."""
    hsv = _hsv(images)
    hsv[..., 1] = np.clip(hsv[..., 1] * _per_sample(factor, 3), low, high)
    return _rgb(hsv)


def keras_hue(images: np.ndarray, shift: Value) -> np.ndarray:
    """Keras' ``RandomHue``: ``H' = H + shift`` turns, kept within one turn."""
    hsv = _hsv(images)
    hue = hsv[..., 0] + _per_sample(shift, 3)
    hue = np.where(hue > 1.0, hue - 1.0, hue)
    hsv[..., 0] = np.where(hue < 0.0, hue + 1.0, hue)
    return _rgb(hsv)


def mix(batch: np.ndarray, partner: Value, lam: Value) -> np.ndarray:
    """``lam * x + (1 - lam) * x[partner]`` per sample, any batch ``(N, ...)``."""
    lam = _per_sample(lam, batch.ndim)
    return (lam * batch + (1.0 - lam) * _partner(batch, partner)).astype(np.float32)


def paste(
    batch: np.ndarray, partner: Value, y0: Value, x0: Value, h: Value, w: Value
) -> np.ndarray:
    """The box replaced by the same box of ``x[partner]`` (CutMix), any batch and dtype."""
    inside = _trailing(_box(batch.shape, y0, x0, h, w), batch.ndim)
    return np.where(inside, _partner(batch, partner), batch)


def blend(batch: np.ndarray, partners: Sequence[Value], weights: Sequence[Value]) -> np.ndarray:
    """``weights[0] * x + weights[1] * x[partners[0]] + ...`` per sample, in that order."""
    out = _per_sample(weights[0], batch.ndim) * batch
    for partner, weight in zip(partners, weights[1:], strict=True):
        out = out + _per_sample(weight, batch.ndim) * _partner(batch, partner)
    return out.astype(np.float32)


def mosaic(batch: np.ndarray, partners: Sequence[Value], row: Value, column: Value) -> np.ndarray:
    """Four images of the batch in a 2x2 grid cut at ``row`` and ``column`` (the TF engine's
    definition): any batch ``(N, H, W, ...)`` of any dtype."""
    quarters = [batch, *(_partner(batch, p) for p in partners)]
    out = np.empty_like(batch)
    h, w = batch.shape[1:3]
    rows = np.asarray(row).astype(np.int64).reshape(-1)
    columns = np.asarray(column).astype(np.int64).reshape(-1)
    for i in range(batch.shape[0]):
        r, c = int(rows[i % len(rows)]), int(columns[i % len(columns)])
        a, b, lower, right = (q[i] for q in quarters)
        top, left = h - r, w - c
        out[i, :top, :left] = a[r:, c:]
        out[i, :top, left:] = b[r:, :c]
        out[i, top:, :left] = lower[:r, c:]
        out[i, top:, left:] = right[:r, :c]
    return out


def scaled(images: np.ndarray, factor: Value) -> np.ndarray:
    """Each sample times its ``factor`` (unclipped)."""
    return images * _per_sample(factor, images.ndim)


def recolour(images: np.ndarray, entries: Sequence[Value]) -> np.ndarray:
    """RGB images through a per-sample ``[M | t]`` then ``N`` colour map, clipped to 0..255:
    ``out = M @ rgb + t + N @ mean``."""
    n = images.shape[0]
    e = np.stack([_each(v, n) for v in entries], 1)
    matrix = e[:, :12].reshape(n, 3, 4)
    means = e[:, 12:21].reshape(n, 3, 3)
    mean = images.mean(axis=(1, 2))
    shift = matrix[:, :, 3] + np.einsum("nij,nj->ni", means, mean)
    out = np.einsum("nhwj,nij->nhwi", images, matrix[:, :, :3]) + shift[:, None, None, :]
    return np.clip(out, 0.0, 255.0).astype(np.float32)


def select(flag: Value, op: Op, images: np.ndarray) -> np.ndarray:
    """Per sample, ``op(images)`` where ``flag`` (0 or 1) is 1, else ``images``; ``op`` runs on
    the chosen samples alone."""
    return choose([(flag, op)], images)


def choose(options: Sequence[tuple[Value, Op]], images: np.ndarray) -> np.ndarray:
    """Per sample, ``op(images)`` of the option whose flag (0 or 1, at most one 1) is 1, else
    ``images``; each ``op`` runs on the samples that chose it alone."""
    out = images
    current = _ROWS.get()
    for flag, op in options:
        picked = np.flatnonzero(_each(flag, images.shape[0]) > 0.5)
        if picked.size == 0:
            continue
        token = _ROWS.set(picked if current is None else current[picked])
        try:
            result = op(images[picked])
        finally:
            _ROWS.reset(token)
        if out is images:
            out = images.astype(np.float32, copy=True)
        out[picked] = result
    return out


def each_sample(op: Op, images: np.ndarray) -> np.ndarray:
    """``op(images)``: :func:`select` already computes each operation for the samples that
    chose it alone."""
    return op(images)
