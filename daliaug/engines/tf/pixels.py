"""TensorFlow's pixel operations for per-sample pixel stages and batch stages, the twins of
:mod:`daliaug.engines.dali.pixels` (same names, same arguments, same results).

Images are batches ``(N, H, W, C)`` of ``float32`` on the 0..255 scale; every per-sample
parameter is a tensor of shape ``(N,)`` (a Python number means the same value for every
sample). Everything here compiles with XLA (``tf.function(jit_compile=True)``): static
shapes, no data-dependent control flow. Results stay ``float32``; operations that quantize
(``posterize``, ``equalize``) first round each value half up (``floor(x + 0.5)``), as the
output's ``uint8`` conversion does. The semantics are stated in each function and in
``NOTES``/README: these are the definitions both engines are tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar

import numpy as np
import tensorflow as tf

from daliaug.kernels import MIN_SIGMA, POSTERIZE_STEPS, SMOOTH_DETAIL, clahe_neighbours

Value = tf.Tensor | float

_SAMPLE: ContextVar[tf.Tensor | None] = ContextVar("daliaug_tf_sample", default=None)
"""The index of the sample computed on its own (:func:`each_sample`), if one is."""


def _of_sample(value: Value) -> Value:
    """A ``(N,)`` parameter's value for the sample computed on its own, as ``(1,)`` (every
    value as it is outside :func:`each_sample`)."""
    i = _SAMPLE.get()
    if i is None or not isinstance(value, tf.Tensor) or value.shape.rank != 1:
        return value
    return value[i][None]


def _per_sample(value: Value, rank: int) -> tf.Tensor:
    """A ``(N,)`` parameter (or a number) shaped to broadcast against a rank-``rank`` batch."""
    return tf.reshape(tf.cast(_of_sample(value), tf.float32), [-1] + [1] * (rank - 1))


def _quantized(images: tf.Tensor) -> tf.Tensor:
    """Round half up and saturate to the integers 0..255 (still ``float32``)."""
    return tf.clip_by_value(tf.floor(images + 0.5), 0.0, 255.0)


def _box(shape: tf.Tensor, y0: Value, x0: Value, h: Value, w: Value) -> tf.Tensor:
    """``(N, H, W)`` booleans: rows ``y0 <= i < y0 + h`` and columns ``x0 <= j < x0 + w`` of
    each sample (whole pixels; a box reaching outside the image is cut by its border)."""
    rows = tf.range(shape[1], dtype=tf.float32)[None, :, None]
    cols = tf.range(shape[2], dtype=tf.float32)[None, None, :]
    y0, x0, h, w = (_per_sample(v, 3) for v in (y0, x0, h, w))
    return (rows >= y0) & (rows < y0 + h) & (cols >= x0) & (cols < x0 + w)


def _trailing(mask: tf.Tensor, rank: int) -> tf.Tensor:
    """A ``(N, H, W)`` mask with unit axes appended to broadcast against a rank-``rank`` batch."""
    return tf.reshape(mask, tf.concat([tf.shape(mask), tf.ones([rank - 3], tf.int32)], 0))


def solarize(images: tf.Tensor, threshold: Value) -> tf.Tensor:
    """``255 - x`` where ``x >= threshold``, else ``x`` (PIL's ``ImageOps.solarize``)."""
    return tf.where(images >= _per_sample(threshold, 4), 255.0 - images, images)


def add_clipped(images: tf.Tensor, delta: Value) -> tf.Tensor:
    """``clip(x + delta, 0, 255)``, one ``delta`` per sample."""
    return tf.clip_by_value(images + _per_sample(delta, 4), 0.0, 255.0)


def posterize(images: tf.Tensor, bits: Value) -> tf.Tensor:
    """Keep the top ``bits`` (an integer 0..8 per sample) bits of each value rounded to
    ``uint8`` (PIL's ``ImageOps.posterize``; 0 bits gives black, 8 the rounded image)."""
    index = tf.cast(tf.clip_by_value(tf.floor(tf.cast(bits, tf.float32) + 0.5), 0.0, 8.0), tf.int32)
    step = _per_sample(tf.gather(tf.constant(POSTERIZE_STEPS), index), 4)
    return tf.floor(_quantized(images) / step) * step


def equalize(images: tf.Tensor) -> tf.Tensor:
    """Histogram equalization of each channel of each image rounded to ``uint8``, by OpenCV's
    ``equalizeHist`` (DALI's ``fn.equalize``, Keras' ``Equalization``): with ``cdf`` the
    cumulative histogram and ``first`` the count of the lowest value present,
    ``lut[v] = round_half_even((cdf[v] - first) * (255 / (H * W - first)))`` in ``float32``;
    a channel with one value keeps it. (PIL and torchvision use another table; see NOTES.)
    Each value's bin is ``256 * (sample * C + channel) + value``: one histogram and one table
    per channel of each sample, in the images' own layout."""
    shape = tf.shape(images)
    n, h, w, c = shape[0], shape[1], shape[2], shape[3]
    rows = n * c
    channel = tf.reshape(256 * tf.range(rows), [n, 1, 1, c])
    ids = tf.cast(_quantized(images), tf.int32) + channel
    hist = tf.reshape(tf.math.unsorted_segment_sum(tf.ones_like(ids), ids, rows * 256), [rows, 256])
    cdf = tf.cumsum(hist, axis=1)
    first = tf.reduce_min(tf.where(hist > 0, cdf, h * w), axis=1, keepdims=True)
    span = h * w - first
    scale = 255.0 / tf.cast(tf.maximum(span, 1), tf.float32)
    lut = tf.clip_by_value(tf.round(tf.cast(cdf - first, tf.float32) * scale), 0.0, 255.0)
    lut = tf.where(span > 0, lut, tf.range(256, dtype=tf.float32)[None, :])
    return tf.gather(tf.reshape(lut, [-1]), ids)


def auto_contrast(images: tf.Tensor) -> tf.Tensor:
    """Stretch each channel of each image from its own ``[min, max]`` to ``[0, 255]``:
    ``(x - min) * (255 / (max - min))``; a channel with ``max == min`` is unchanged (PIL's
    ``ImageOps.autocontrast`` with no cutoff, before its truncation to ``uint8``)."""
    low = tf.reduce_min(images, axis=[1, 2], keepdims=True)
    high = tf.reduce_max(images, axis=[1, 2], keepdims=True)
    spread = high > low
    scale = 255.0 / tf.where(spread, high - low, 255.0)
    return tf.minimum((images - tf.where(spread, low, 0.0)) * scale, 255.0)


def sharpness(images: tf.Tensor, factor: Value) -> tf.Tensor:
    """PIL's ``ImageEnhance.Sharpness``: ``smooth + factor * (x - smooth)``, clipped to 0..255,
    where ``smooth`` is ``x`` correlated with ``ImageFilter.SMOOTH`` inside the image and ``x``
    itself on the one-pixel border. 0 gives the smoothed image, 1 the input, > 1 sharpens."""
    h, w = tf.shape(images)[1], tf.shape(images)[2]
    taps = [
        weight / 13.0 * images[:, dy : dy + h - 2, dx : dx + w - 2]
        for dy, row in enumerate(SMOOTH_DETAIL)
        for dx, weight in enumerate(row)
    ]
    detail = tf.pad(tf.add_n(taps), [[0, 0], [1, 1], [1, 1], [0, 0]])  # smooth - x; 0 on the border
    detail = detail[:, :h, :w]  # a side of 1 pixel is all border: no taps, padded to 2
    return tf.clip_by_value(images + (1.0 - _per_sample(factor, 4)) * detail, 0.0, 255.0)


def gaussian_blur(images: tf.Tensor, sigma: Value, size: int) -> tf.Tensor:
    """Correlate each image with a normalized ``size`` x ``size`` Gaussian of its own ``sigma``
    (``size`` odd, the same for every sample; sigmas below :data:`MIN_SIGMA` act as it),
    mirroring the image at its border without repeating the edge pixel (``dcb|abcd``: DALI's
    ``reflect_101``, torchvision's ``reflect``, SciPy's ``mirror``). ``size`` must be smaller
    than twice the image's height and width."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"gaussian_blur needs an odd kernel size, got {size}")
    radius = size // 2
    offsets = tf.range(-radius, radius + 1, dtype=tf.float32)[None, :]
    s = tf.maximum(tf.reshape(tf.cast(sigma, tf.float32), [-1, 1]), MIN_SIGMA)
    weights = tf.exp(-0.5 * tf.square(offsets / s))
    weights = weights / tf.reduce_sum(weights, axis=1, keepdims=True)  # (N or 1, size)
    padded = tf.pad(images, [[0, 0], [radius, radius], [radius, radius], [0, 0]], "REFLECT")
    h, w = tf.shape(images)[1], tf.shape(images)[2]
    taps = [_per_sample(weights[:, k], 4) for k in range(size)]
    rows = tf.add_n([taps[k] * padded[:, k : k + h] for k in range(size)])
    return tf.add_n([taps[k] * rows[:, :, k : k + w] for k in range(size)])


def erase(
    images: tf.Tensor,
    y0: Value,
    x0: Value,
    h: Value,
    w: Value,
    fill: Sequence[Value],
) -> tf.Tensor:
    """Set rows ``y0 <= i < y0 + h``, columns ``x0 <= j < x0 + w`` (whole pixels per sample)
    to ``fill``: one value per channel, each a number or a ``(N,)`` tensor."""
    values = tf.stack(
        [tf.broadcast_to(tf.cast(v, tf.float32), [tf.shape(images)[0]]) for v in fill], 1
    )
    inside = _box(tf.shape(images), y0, x0, h, w)[..., None]
    return tf.where(inside, values[:, None, None, :], images)


def erase_noise(
    images: tf.Tensor,
    y0: Value,
    x0: Value,
    h: Value,
    w: Value,
    mean: float,
    std: float,
    seed: Value,
) -> tf.Tensor:
    """:func:`erase` with per-pixel, per-channel noise ``clip(mean + std * n, 0, 255)``, ``n ~
    N(0, 1)``: drawn in the graph, not on the host, so the engines' noise differs (TensorFlow:
    the stateless normal seeded by the first sample's ``seed`` in [0, 1); DALI: its
    ``random.normal``, seeded by the pipeline's seed)."""
    first = tf.reshape(tf.cast(seed, tf.float32), [-1])[0]
    key = tf.stack([tf.cast(first * 2.0**31, tf.int32), tf.constant(23, tf.int32)])
    noise = tf.random.stateless_normal(tf.shape(images), key, mean, std, tf.float32)
    inside = _box(tf.shape(images), y0, x0, h, w)[..., None]
    return tf.where(inside, tf.clip_by_value(noise, 0.0, 255.0), images)


def perspective(
    images: tf.Tensor, matrix: Sequence[Value], fill: float | str, nearest: bool
) -> tf.Tensor:
    """Projective resampling onto the same size: output pixel ``(x, y)`` (index coordinates,
    pixel centres at whole numbers) takes the input at ``((m0 x + m1 y + m2) / k, (m3 x + m4 y
    + m5) / k)``, ``k = m6 x + m7 y + 1`` (:func:`_sample`; ``fill`` ``"reflect"``: the
    points mirrored inside first, :func:`_reflected`). ``matrix``: 8 per-sample values;
    any batch ``(N, H, W, C)`` (images, masks); the result is ``float32``. Gathers and
    arithmetic, as XLA compiles them (it has no ``ImageProjectiveTransformV3``)."""
    rows, cols = _grid(images)
    m = [_per_sample(v, 3) for v in matrix]
    k = m[6] * cols + m[7] * rows + 1.0
    x = (m[0] * cols + m[1] * rows + m[2]) / k
    y = (m[3] * cols + m[4] * rows + m[5]) / k
    if isinstance(fill, str):
        shape = tf.cast(tf.shape(images), tf.float32)
        x, y = _reflected(x, shape[2]), _reflected(y, shape[1])
    return _sample(images, x, y, 0.0 if isinstance(fill, str) else fill, nearest)


def _reflected(v: tf.Tensor, size: tf.Tensor) -> tf.Tensor:
    """Source coordinates ``v`` on an axis of ``size`` pixels mirrored about the image's edges
    (``... b a | a b ... y z | z y ...``), then clamped: TensorFlow's
    ``ImageProjectiveTransformV3`` ``reflect`` (Keras' affine layers), OpenCV's
    ``BORDER_REFLECT``."""
    t = _wrapped(v, 2.0 * size)
    t = tf.where(t >= size, 2.0 * size - t - 1.0, t)
    return tf.clip_by_value(t, 0.0, size - 1.0)


def _grid(images: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The row and column index of each pixel, ``(1, H, 1)`` and ``(1, 1, W)``."""
    shape = tf.shape(images)
    rows = tf.cast(tf.range(shape[1]), tf.float32)[None, :, None]
    cols = tf.cast(tf.range(shape[2]), tf.float32)[None, None, :]
    return rows, cols


def _sample(images: tf.Tensor, x: tf.Tensor, y: tf.Tensor, fill: float, nearest: bool) -> tf.Tensor:
    """Each sample of ``images`` at the points ``(x, y)`` (``(N, H', W')``, index coordinates):
    its nearest pixel (half up) or the four around it (bilinear), those outside the image
    taking ``fill``; ``float32`` ``(N, H', W', C)``. The images are padded by one ``fill``
    pixel and each point clamped into that border, so a neighbour is one gather at a fixed
    offset from the point's index."""
    shape = tf.shape(images)
    h, w, c = shape[1], shape[2], images.shape[3]
    padded = tf.pad(
        tf.cast(images, tf.float32), [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=fill
    )
    flat = tf.reshape(padded, [-1, c])
    stride = w + 2
    base = (tf.range(shape[0]) * ((h + 2) * stride))[:, None, None]
    hf, wf = tf.cast(h, tf.float32), tf.cast(w, tf.float32)
    x, y = tf.clip_by_value(x, -1.0, wf), tf.clip_by_value(y, -1.0, hf)
    if nearest:
        x0, y0 = tf.floor(x + 0.5), tf.floor(y + 0.5)
    else:
        x0, y0 = tf.minimum(tf.floor(x), wf - 1.0), tf.minimum(tf.floor(y), hf - 1.0)
    at = base + (tf.cast(y0, tf.int32) + 1) * stride + tf.cast(x0, tf.int32) + 1
    if nearest:
        return tf.gather(flat, at)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    top = tf.gather(flat, at) * (1 - fx) + tf.gather(flat, at + 1) * fx
    bottom = tf.gather(flat, at + stride) * (1 - fx) + tf.gather(flat, at + stride + 1) * fx
    return top * (1 - fy) + bottom * fy


def _wrapped(v: tf.Tensor, period: float) -> tf.Tensor:
    return v - period * tf.floor(v / period)


def _folded(v: tf.Tensor, size: tf.Tensor, fill: float | str) -> tf.Tensor:
    """Source coordinates ``v`` on an axis of ``size`` pixels brought inside for a ``fill``
    mode: ``nearest`` clamps; ``reflect`` mirrors below 0 about the first pixel centre and
    above the last about the image's edge (Keras' ``map_coordinates``: ``... c b | a b c d | d
    c ...``), then clamps; a constant leaves them."""
    if not isinstance(fill, str):
        return v
    if fill == "reflect":
        t = _wrapped(tf.abs(v), 2.0 * size)
        v = tf.where(t < size, t, 2.0 * size - t - 1.0)
    return tf.clip_by_value(v, 0.0, size - 1.0)


def elastic(
    images: tf.Tensor, values: tf.Tensor, grid: int, fill: float | str, nearest: bool
) -> tf.Tensor:
    """An elastic distortion. ``values`` ``(N, 3 + G * G)``, ``G = grid``: per sample the node
    spacing in pixels, the images' height and width, then a periodic ``G x G`` grid of shifts,
    row by row. The shift ``s(x, y)`` of
    output pixel ``(x, y)`` is the grid interpolated bilinearly at ``(x / spacing, y /
    spacing)`` modulo ``G``; the output takes the input at ``(x + s, y + s)`` (:func:`_sample`;
    both axes move by the one shift, as in Keras' ``RandomElasticTransform``), outside the
    image by ``fill``: a constant, or the ``nearest`` or ``reflect`` pixel (:func:`_folded`).
    Any batch ``(N, H, W, C)``; ``float32``."""
    nodes = tf.reshape(values[:, 3:], [-1, grid, grid])
    nodes = tf.concat([nodes, nodes[:, :1]], 1)
    nodes = tf.concat([nodes, nodes[:, :, :1]], 2)[..., None]
    rows, cols = _grid(images)
    spacing = _per_sample(values[:, 0], 3)
    u = _wrapped(cols / spacing, float(grid)) + 0.0 * rows
    v = _wrapped(rows / spacing, float(grid)) + 0.0 * cols
    shift = _sample(nodes, u, v, 0.0, False)[..., 0]
    shape = tf.cast(tf.shape(images), tf.float32)
    x = _folded(cols + shift, shape[2], fill)
    y = _folded(rows + shift, shape[1], fill)
    return _sample(images, x, y, 0.0 if isinstance(fill, str) else fill, nearest)


def clahe(images: tf.Tensor, tiles: tuple[int, int], clip_limit: float) -> tf.Tensor:
    """Keras' ``ContrastLimitedAdaptiveHistogramEqualization``, per channel: the image (static
    ``H x W``) padded at the bottom and right by mirroring (edge included) to whole tiles of
    ``ceil(H / rows) x ceil(W / cols)`` pixels (``tiles`` = rows, cols); per tile a 256-bin
    histogram of the values truncated to whole numbers, each bin cut at ``clip_limit * area /
    256`` (when ``clip_limit > 0``) and the cut counts spread evenly over the 256 bins; the
    table ``(cdf - cdf[0]) * 255 / (area - cdf[0])`` (clipped to 0..255); each pixel's value
    looked up in the tables of the four tiles whose centres surround it (the outer tiles' own
    beyond them) and blended bilinearly. ``float32``, not rounded."""
    rows, cols = tiles
    n, h, w, c = tf.shape(images)[0], images.shape[1], images.shape[2], images.shape[3]
    th, tw = -(-h // rows), -(-w // cols)
    padded = tf.pad(images, [[0, 0], [0, th * rows - h], [0, tw * cols - w], [0, 0]], "SYMMETRIC")
    values = tf.clip_by_value(tf.cast(padded, tf.int32), 0, 255)
    tiled = tf.reshape(values, [-1, rows, th, cols, tw, c])
    tiled = tf.reshape(tf.transpose(tiled, [0, 1, 3, 5, 2, 4]), [-1, th * tw])
    count = tf.shape(tiled)[0]
    ids = tiled + 256 * tf.range(count)[:, None]
    hist = tf.math.unsorted_segment_sum(tf.ones_like(ids, tf.float32), ids, count * 256)
    hist = tf.reshape(hist, [count, 256])
    area = float(th * tw)
    if clip_limit > 0:
        cut = tf.minimum(hist, clip_limit * area / 256.0)
        hist = cut + tf.reduce_sum(hist - cut, axis=1, keepdims=True) / 256.0
    cdf = tf.cumsum(hist, axis=1)
    span = area - cdf[:, :1]
    lut = (cdf - cdf[:, :1]) * 255.0 / tf.where(span == 0.0, 1.0, span)
    lut = tf.reshape(tf.clip_by_value(lut, 0.0, 255.0), [-1, rows, cols, c, 256])
    lut = tf.concat([lut[:, :1], lut, lut[:, -1:]], 1)
    lut = tf.reshape(tf.concat([lut[:, :, :1], lut, lut[:, :, -1:]], 2), [-1])

    y0, y1, wy = (v[None, :, None, None] for v in clahe_neighbours(th * rows, th, rows))
    x0, x1, wx = (v[None, None, :, None] for v in clahe_neighbours(tw * cols, tw, cols))
    base = (tf.range(n)[:, None, None, None] * (rows + 2) * (cols + 2) * c) * 256
    base = base + tf.range(c)[None, None, None, :] * 256 + values

    def table(y: np.ndarray, x: np.ndarray) -> tf.Tensor:
        return tf.gather(lut, base + (y * (cols + 2) * c + x * c) * 256)

    top = table(y0, x0) * (1.0 - wx) + table(y0, x1) * wx
    bottom = table(y1, x0) * (1.0 - wx) + table(y1, x1) * wx
    return (top * (1.0 - wy) + bottom * wy)[:, :h, :w, :]


def keras_saturation(images: tf.Tensor, factor: Value, low: float, high: float) -> tf.Tensor:
    """Keras' ``RandomSaturation``: in HSV (``tf.image.rgb_to_hsv`` of the 0..255 values),
    ``S' = clip(factor * S, low, high)``, back to RGB, clipped to 0..255."""
    hsv = tf.image.rgb_to_hsv(images)
    s = tf.clip_by_value(hsv[..., 1] * _per_sample(factor, 3), low, high)
    rgb = tf.image.hsv_to_rgb(tf.stack([hsv[..., 0], s, hsv[..., 2]], -1))
    return tf.clip_by_value(rgb, 0.0, 255.0)


def keras_hue(images: tf.Tensor, shift: Value) -> tf.Tensor:
    """Keras' ``RandomHue``: in HSV, ``H' = H + shift`` turns (``shift`` within [-0.5, 0.5]),
    minus one turn above 1 and plus one below 0, back to RGB, clipped to 0..255."""
    hsv = tf.image.rgb_to_hsv(images)
    h = hsv[..., 0] + _per_sample(shift, 3)
    h = tf.where(h > 1.0, h - 1.0, h)
    h = tf.where(h < 0.0, h + 1.0, h)
    rgb = tf.image.hsv_to_rgb(tf.stack([h, hsv[..., 1], hsv[..., 2]], -1))
    return tf.clip_by_value(rgb, 0.0, 255.0)


def mix(batch: tf.Tensor, partner: Value, lam: Value) -> tf.Tensor:
    """``lam * x + (1 - lam) * x[partner]`` per sample (MixUp), for images and soft targets
    (one-hot labels, one-hot masks) alike: any batch ``(N, ...)``; ``partner`` holds batch
    indices (as floats)."""
    rank = batch.shape.rank
    other = tf.gather(batch, tf.cast(partner, tf.int32))
    lam = _per_sample(lam, rank)
    return lam * batch + (1.0 - lam) * other


def paste(batch: tf.Tensor, partner: Value, y0: Value, x0: Value, h: Value, w: Value) -> tf.Tensor:
    """``x`` with the box (as in :func:`erase`, but lying within the image: the host cuts it,
    DALI's ``multi_paste`` refuses one that does not) replaced by the same box of
    ``x[partner]`` (CutMix), for images and masks alike: any batch ``(N, H, W, ...)`` of any
    dtype (DALI: HWC samples). The label
    weight of the partner is the box's area over ``H * W``; mix the labels with :func:`mix` and
    ``lam = 1 - h * w / (H * W)``."""
    other = tf.gather(batch, tf.cast(partner, tf.int32))
    inside = _trailing(_box(tf.shape(batch), y0, x0, h, w), batch.shape.rank)
    return tf.where(inside, other, batch)


def blend(batch: tf.Tensor, partners: Sequence[Value], weights: Sequence[Value]) -> tf.Tensor:
    """``weights[0] * x + weights[1] * x[partners[0]] + weights[2] * x[partners[1]] + ...`` per
    sample, summed in that order (Mosaic's labels): any batch ``(N, ...)``."""
    rank = batch.shape.rank
    out = _per_sample(weights[0], rank) * batch
    for partner, weight in zip(partners, weights[1:], strict=True):
        out = out + _per_sample(weight, rank) * tf.gather(batch, tf.cast(partner, tf.int32))
    return out


def _rolled(index: tf.Tensor, cut: Value) -> tf.Tensor:
    """``(N, L)`` source indices along a mosaic axis of length ``L`` cut at ``cut``: ``i +
    cut`` for the first ``L - cut`` (the part from the cut on), then ``i - (L - cut)``."""
    cut = _per_sample(cut, 2)
    first = tf.cast(tf.shape(index)[-1], tf.float32) - cut
    return tf.cast(tf.where(index < first, index + cut, index - first), tf.int32)


def mosaic(batch: tf.Tensor, partners: Sequence[Value], row: Value, column: Value) -> tf.Tensor:
    """Four images of the batch in a 2x2 grid (Mosaic): each of ``x``, ``x[partners[0]]``,
    ``x[partners[1]]``, ``x[partners[2]]`` (``a``, ``b``, ``c``, ``d``) cut at the whole row
    ``row`` and column ``column`` (per sample), the output is ``[[a[row:, column:], b[row:,
    :column]], [c[:row, column:], d[:row, :column]]]``: its centre ``H - row`` rows from the top
    and ``W - column`` columns from the left, where the four images' corners meet. Images and
    masks alike: any batch ``(N, H, W, ...)`` of any dtype (DALI: HWC samples)."""
    b, c, d = (tf.gather(batch, tf.cast(p, tf.int32)) for p in partners)
    shape, rank = tf.shape(batch), batch.shape.rank
    rows = tf.range(shape[1], dtype=tf.float32)[None, :]
    cols = tf.range(shape[2], dtype=tf.float32)[None, :]
    # the grid laid out where each image's pixels are, then each axis rolled to the centre
    lower = (rows >= _per_sample(row, 2))[:, :, None]
    righter = (cols >= _per_sample(column, 2))[:, None, :]
    grid = tf.where(
        _trailing(lower & righter, rank),
        batch,
        tf.where(
            _trailing(lower & ~righter, rank),
            b,
            tf.where(_trailing(righter & ~lower, rank), c, d),
        ),
    )
    grid = tf.gather(grid, _rolled(rows, row), axis=1, batch_dims=1)
    return tf.gather(grid, _rolled(cols, column), axis=2, batch_dims=1)


def scaled(images: tf.Tensor, factor: Value) -> tf.Tensor:
    """Each sample times its ``factor`` (unclipped)."""
    return images * _per_sample(factor, images.shape.rank)


def recolour(images: tf.Tensor, entries: Sequence[Value]) -> tf.Tensor:
    """RGB images through a per-sample colour map, clipped to 0..255: ``entries`` are ``[M |
    t]`` (3 x 4) then ``N`` (3 x 3), row by row; ``out = M @ rgb + t + N @ mean`` with
    ``mean`` each image's per-channel mean."""
    e = [_per_sample(v, 4) for v in entries]
    mean = tf.reduce_mean(images, axis=[1, 2], keepdims=True)
    out = []
    for c in range(3):
        value = e[4 * c + 3]
        for j in range(3):
            value = value + e[4 * c + j] * images[..., j : j + 1]
            value = value + e[12 + 3 * c + j] * mean[..., j : j + 1]
        out.append(value)
    return tf.clip_by_value(tf.concat(out, -1), 0.0, 255.0)


def select(flag: Value, op: Callable[[tf.Tensor], tf.Tensor], images: tf.Tensor) -> tf.Tensor:
    """Per sample, ``op(images)`` where ``flag`` (0 or 1) is 1, else ``images``: on a batch,
    ``op`` runs for every sample and XLA fuses the choice into it; within :func:`each_sample`,
    it runs only where chosen (``tf.cond``)."""
    return choose([(flag, op)], images)


def choose(
    options: Sequence[tuple[Value, Callable[[tf.Tensor], tf.Tensor]]], images: tf.Tensor
) -> tf.Tensor:
    """Per sample, ``op(images)`` for the option ``(flag, op)`` whose flag (0 or 1, at most
    one 1) is 1, else ``images``. On a batch every ``op`` runs for every sample and XLA fuses
    the choices into them; within :func:`each_sample` only the chosen one runs: nested
    ``tf.cond``s on the chosen option's number, the outer one asking whether any was chosen
    (an untaken ``tf.cond`` still cost about 15 us per 224 x 224 image here, so one per
    option cost more than the cheap operations themselves)."""
    if _SAMPLE.get() is None:
        for flag, op in options:
            images = tf.where(_per_sample(flag, images.shape.rank) > 0.5, op(images), images)
        return images
    if not options:
        return images
    picked = [
        (k + 1.0) * tf.reshape(tf.cast(_of_sample(flag), tf.float32), [])
        for k, (flag, _) in enumerate(options)
    ]
    index = tf.cast(tf.round(tf.add_n(picked)), tf.int32)

    def from_option(k: int) -> tf.Tensor:
        """The result for a sample that chose option ``k`` or a later one."""
        op = options[k][1]
        if k == len(options) - 1:
            return op(images)
        return tf.cond(tf.equal(index, k + 1), lambda: op(images), lambda: from_option(k + 1))

    return tf.cond(tf.equal(index, 0), lambda: images, lambda: from_option(0))


def each_sample(op: Callable[[tf.Tensor], tf.Tensor], images: tf.Tensor) -> tf.Tensor:
    """``op(images)`` computed one sample at a time (``tf.map_fn``: a loop under XLA), each
    per-sample parameter that sample's, and :func:`select` computing only the operation the
    sample chose: for stages that pick among many operations per sample (AugMix's chains),
    which on the whole batch would compute every operation for every sample."""

    def one(i: tf.Tensor) -> tf.Tensor:
        token = _SAMPLE.set(i)
        try:
            return op(images[i][None])[0]
        finally:
            _SAMPLE.reset(token)

    return tf.map_fn(one, tf.range(tf.shape(images)[0]), fn_output_signature=images.dtype)
