"""DALI's pixel operations for per-sample pixel stages and batch stages, the twins of
:class:`daliaug.kernels.formulas.ArrayKernels` and :mod:`daliaug.engines.tf.pixels` (same
names, same arguments, same results; the semantics are stated there once).

Functions of ``DataNode``s, used inside a graph definition. Images are batches of HWC
``float32`` samples on the 0..255 scale, on ``"cpu"`` or ``"gpu"``; every per-sample parameter
is a scalar ``DataNode`` (``float32``, shape ``()``) on the CPU, or a Python number. Parameters
that enter the arithmetic move to the image's device here; those given to operators as named
arguments stay on the CPU. Every operator used has a CPU and a GPU implementation, except
``fn.experimental.remap`` (GPU only; the transforms using it say so: ``dali_lacks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import nvidia.dali.math as dmath
from nvidia.dali import fn, types
from nvidia.dali.pipeline import DataNode

from daliaug.engines.dali import branches
from daliaug.kernels import Noise

Value = DataNode | float

SMOOTH_DETAIL = ((1, 1, 1), (1, -8, 1), (1, 1, 1))
"""PIL's ``ImageFilter.SMOOTH`` kernel ``[[1, 1, 1], [1, 5, 1], [1, 1, 1]]`` minus 13 times the
identity: divided by 13 and correlated with an image, it gives ``smooth(x) - x``."""

MIN_SIGMA = 1e-3
"""Smaller blur sigmas act as this one (DALI would read a sigma of 0 as "from the size")."""

POSTERIZE_STEPS = [float(2 ** (8 - bits)) for bits in range(9)]
"""The quantization step ``2 ** (8 - bits)`` for ``bits`` = 0..8 (looked up, exact)."""


def _on(value: Value, images: DataNode) -> Value:
    """A per-sample parameter on the images' device (numbers stay numbers)."""
    if isinstance(value, DataNode) and images.device == "gpu":
        return value.gpu()
    return value


def _vector(values: Sequence[Value], dtype: types.DALIDataType = types.FLOAT) -> DataNode:
    """Per-sample scalars (or numbers) stacked into one per-sample vector on the CPU."""
    nodes = [
        v if isinstance(v, DataNode) else types.Constant(float(v), dtype=types.FLOAT)
        for v in values
    ]
    return fn.cast(fn.stack(*nodes), dtype=dtype)


def _quantized(images: DataNode) -> DataNode:
    """Round half up and saturate to the integers 0..255 (still ``float32``)."""
    return dmath.clamp(dmath.floor(images + 0.5), 0.0, 255.0)


def _index(partner: Value) -> DataNode:
    """Batch indices given as floats, as ``permute_batch`` takes them (one per sample)."""
    if not isinstance(partner, DataNode):
        return types.Constant(int(partner), dtype=types.INT32, device="cpu")
    return fn.cast(partner, dtype=types.INT32)


def solarize(images: DataNode, threshold: Value) -> DataNode:
    t = _on(threshold, images)
    # products with 0/1 and a sum with one zero term are exact: the same values as tf.where
    return (images >= t) * (255.0 - images) + (images < t) * images


def add_clipped(images: DataNode, delta: Value) -> DataNode:
    return dmath.clamp(images + _on(delta, images), 0.0, 255.0)


def posterize(images: DataNode, bits: Value) -> DataNode:
    if isinstance(bits, DataNode):
        index = fn.cast(dmath.clamp(dmath.floor(bits + 0.5), 0.0, 8.0), dtype=types.INT32)
        step = fn.lookup_table(index, keys=list(range(9)), values=POSTERIZE_STEPS)
        step = _on(fn.cast(step, dtype=types.FLOAT), images)
    else:
        step = POSTERIZE_STEPS[min(max(int(bits + 0.5), 0), 8)]
    return dmath.floor(_quantized(images) / step) * step


def equalize(images: DataNode) -> DataNode:
    """``fn.equalize`` (OpenCV's ``equalizeHist``) on the images rounded to ``uint8``."""
    values = fn.cast(_quantized(images), dtype=types.UINT8)
    return fn.cast(fn.equalize(values), dtype=types.FLOAT)


def auto_contrast(images: DataNode) -> DataNode:
    low = fn.reductions.min(images, axis_names="HW", keep_dims=True)
    high = fn.reductions.max(images, axis_names="HW", keep_dims=True)
    spread = high > low
    scale = 255.0 / ((high - low) * spread + 255.0 * (high <= low))
    return dmath.min((images - low * spread) * scale, 255.0)


def sharpness(images: DataNode, factor: Value) -> DataNode:
    """The smoothing's detail ``smooth(x) - x`` by ``fn.filter``, zeroed on the one-pixel border
    (rows and columns erased about the normalized anchors 0 and 1, so that no image shape is
    read back from the GPU): the border keeps the input."""
    kernel = types.Constant(np.array(SMOOTH_DETAIL, np.float32) / np.float32(13))
    detail = fn.filter(images, kernel, border="clamp")
    for axis in "HW":
        detail = fn.erase(
            detail,
            anchor=[0.0, 1.0],
            shape=[2.0, 2.0],
            axis_names=axis,
            normalized_anchor=True,
            normalized_shape=False,
            centered_anchor=True,
            fill_value=0.0,
        )
    return dmath.clamp(images + (1.0 - _on(factor, images)) * detail, 0.0, 255.0)


def gaussian_blur(images: DataNode, sigma: Value, size: int) -> DataNode:
    """``fn.gaussian_blur`` (its border is ``reflect_101``) with a fixed window."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"gaussian_blur needs an odd kernel size, got {size}")
    s = dmath.max(sigma, MIN_SIGMA) if isinstance(sigma, DataNode) else max(sigma, MIN_SIGMA)
    return fn.gaussian_blur(images, sigma=s, window_size=size, dtype=types.FLOAT)


def erase(
    images: DataNode,
    y0: Value,
    x0: Value,
    h: Value,
    w: Value,
    fill: Sequence[Value],
) -> DataNode:
    return fn.erase(
        images,
        anchor=_vector([y0, x0]),
        shape=_vector([h, w]),
        axes=[0, 1],
        fill_value=_vector(fill),
    )


def erase_noise(
    images: DataNode, y0: Value, x0: Value, h: Value, w: Value, noise: Noise
) -> DataNode:
    """The noise by ``fn.random.normal`` (seeded by the pipeline's seed; ``noise.seed`` is for
    the other engines), put in the box as a blend with the erased ones (exact: products with 0
    or 1)."""
    drawn = fn.random.normal(images, mean=noise.mean, stddev=noise.std)
    outside = erase(images * 0.0 + 1.0, y0, x0, h, w, (0.0,))
    return images * outside + dmath.clamp(drawn, 0.0, 255.0) * (1.0 - outside)


def perspective(
    images: DataNode, matrix: Sequence[Value], fill: float | str, nearest: bool
) -> DataNode:
    """``fn.experimental.warp_perspective`` (destination to source, pixel centres at whole
    numbers) with the per-sample 3x3 matrix ``[[m0, m1, m2], [m3, m4, m5], [m6, m7, 1]]``;
    ``fill`` ``"reflect"`` is its ``reflect`` border."""
    m = fn.reshape(_vector([*matrix, 1.0]), shape=[3, 3])
    return fn.experimental.warp_perspective(
        images,
        matrix=m,
        fill_value=0.0 if isinstance(fill, str) else float(fill),
        border_mode=fill if isinstance(fill, str) else "constant",
        pixel_origin="center",
        interp_type=types.INTERP_NN if nearest else types.INTERP_LINEAR,
    )


def _grid(images: DataNode, size: DataNode) -> tuple[DataNode, DataNode]:
    """The column and row index of each pixel of each sample of ``size`` (height, width; a
    vector per sample on the CPU), ``(H, W, 1)`` on the images' device: two-pixel ramps
    resized there, from their pixel centres, to that size."""
    out = []
    for ramp, side in (([[0.0, 1.0], [0.0, 1.0]], size[1]), ([[0.0, 0.0], [1.0, 1.0]], size[0])):
        ramp = np.array(ramp, np.float32).reshape(2, 2, 1)
        source = types.Constant(ramp, device=images.device)
        unit = fn.resize(
            source,
            size=size,
            roi_start=[0.5, 0.5],
            roi_end=[1.5, 1.5],
            roi_relative=False,
            interp_type=types.INTERP_LINEAR,
            antialias=False,
        )
        out.append(_on(unit, images) * _on(side, images) - 0.5)
    return out[0], out[1]


def _wrapped(v: DataNode, period: Value) -> DataNode:
    return v - period * dmath.floor(v / period)


def _folded(v: DataNode, size: Value, fill: float | str) -> DataNode:
    """See :meth:`daliaug.kernels.formulas.ArrayKernels.folded`."""
    if not isinstance(fill, str):
        return v
    if fill == "reflect":
        t = _wrapped(dmath.abs(v), 2.0 * size)
        below = t < size
        v = below * t + (1.0 - below) * (2.0 * size - t - 1.0)
    return dmath.clamp(v, 0.0, size - 1.0)


def elastic(
    images: DataNode, values: DataNode, grid: int, fill: float | str, nearest: bool
) -> DataNode:
    """Two ``fn.experimental.remap`` (GPU only; constant border 0, pixel centres at whole
    numbers): the node grid to each pixel's shift, then the image to its shifted points,
    brought inside for a ``fill`` mode first, or shifted by a constant ``fill`` around the
    remap's 0. ``values``: a vector per sample (the spacing, the height and width, the grid).
    DALI's remap gives an output of its input's size and reads its maps as ``HW`` planes on the
    GPU, so the grid is padded to the image's size (at least the grid's) and the maps are
    planes; the shifted points are then cut to the image's size."""
    nodes = fn.reshape(values[3:], shape=[grid, grid, 1])
    nodes = fn.cat(nodes, nodes[0:1], axis=0)
    nodes = fn.cat(nodes, nodes[:, 0:1], axis=1)
    size = values[1:3]
    room = dmath.max(size, float(grid + 1))
    field = _on(fn.pad(nodes, axes=(0, 1), shape=fn.cast(room, dtype=types.INT32)), images)
    x, y = _grid(images, room)
    spacing = _on(values[0], images)
    shift = fn.experimental.remap(
        field,
        _plane(_wrapped(x / spacing, float(grid))),
        _plane(_wrapped(y / spacing, float(grid))),
        pixel_origin="center",
        interp=types.INTERP_LINEAR,
    )
    whole = fn.cast(size, dtype=types.INT32)
    x = _plane(_folded(_cut(x + shift, whole), _on(size[1], images), fill))
    y = _plane(_folded(_cut(y + shift, whole), _on(size[0], images), fill))
    offset = 0.0 if isinstance(fill, str) else float(fill)
    moved = fn.experimental.remap(
        images - offset,
        x,
        y,
        pixel_origin="center",
        interp=types.INTERP_NN if nearest else types.INTERP_LINEAR,
    )
    return moved + offset


def _plane(v: DataNode) -> DataNode:
    """An ``(H, W, 1)`` map as the ``(H, W)`` plane DALI's GPU remap reads."""
    return v[:, :, 0]


def _cut(v: DataNode, size: DataNode) -> DataNode:
    """The top-left ``size`` (height, width; an ``int32`` vector per sample on the CPU, as
    ``fn.slice`` takes it) of ``v``."""
    return fn.slice(v, start=[0, 0], shape=size, axes=[0, 1])


def _rgb_to_hsv(images: DataNode) -> tuple[DataNode, DataNode, DataNode]:
    """Hue (turns, in [0, 1)), saturation and value of each pixel as HW1 tensors, by the
    definition of TensorFlow's ``rgb_to_hsv`` (``fn.hsv`` is a linear approximation of it in
    YIQ, not this): the hue from the channel holding the maximum (red first, then green), 0 on
    grey pixels; the saturation ``(max - min) / max``, 0 on black."""
    r, g, b = (images[:, :, c : c + 1] for c in range(3))
    v = dmath.max(r, dmath.max(g, b))
    spread = v - dmath.min(r, dmath.min(g, b))
    s = spread / (v + (v <= 0.0))
    norm = 1.0 / (6.0 * (spread + (spread <= 0.0)))
    on_r = r == v
    on_g = (g == v) * (1.0 - on_r)
    on_b = 1.0 - on_r - on_g
    h = on_r * ((g - b) * norm) + on_g * ((b - r) * norm + 2.0 / 6.0)
    h = (h + on_b * ((r - g) * norm + 4.0 / 6.0)) * (spread > 0.0)
    return h + (h < 0.0), s, v


def _hsv_to_rgb(h: DataNode, s: DataNode, v: DataNode) -> DataNode:
    """HWC RGB from HW1 hue (turns, in [0, 1]), saturation and value, by the definition of
    TensorFlow's ``hsv_to_rgb``: each channel ``v * (1 - s + s * d)`` with ``d`` the channel's
    piecewise-linear share of the hue."""
    sixths = h * 6.0
    shares = (
        dmath.abs(sixths - 3.0) - 1.0,
        2.0 - dmath.abs(sixths - 2.0),
        2.0 - dmath.abs(sixths - 4.0),
    )
    grey = 1.0 - s
    channels = [(grey + s * dmath.clamp(d, 0.0, 1.0)) * v for d in shares]
    return fn.cat(*channels, axis=2)


def keras_saturation(images: DataNode, factor: Value, low: float, high: float) -> DataNode:
    h, s, v = _rgb_to_hsv(images)
    s = dmath.clamp(s * _on(factor, images), low, high)
    return dmath.clamp(_hsv_to_rgb(h, s, v), 0.0, 255.0)


def keras_hue(images: DataNode, shift: Value) -> DataNode:
    h, s, v = _rgb_to_hsv(images)
    h = h + _on(shift, images)
    h = h - (h > 1.0)
    h = h + (h < 0.0)
    return dmath.clamp(_hsv_to_rgb(h, s, v), 0.0, 255.0)


def mix(batch: DataNode, partner: Value, lam: Value) -> DataNode:
    """Any per-sample tensors (images, one-hot labels or masks) on any device."""
    other = fn.permute_batch(batch, indices=_index(partner))
    lam = _on(lam, batch)
    return lam * batch + (1.0 - lam) * other


def paste(batch: DataNode, partner: Value, y0: Value, x0: Value, h: Value, w: Value) -> DataNode:
    """The partner's box by ``fn.multi_paste`` (onto an empty canvas), added to the sample
    erased there: HWC samples of any dtype (images, one-hot masks; give index masks a channel
    axis first). No image shape is read back from the GPU, so the box must lie within the image
    (``multi_paste`` refuses one that does not)."""
    other = fn.permute_batch(batch, indices=_index(partner))
    corner = _vector([y0, x0], types.INT32)
    box = _vector([h, w], types.INT32)
    pasted = fn.multi_paste(
        other, in_anchors=fn.stack(corner), shapes=fn.stack(box), out_anchors=fn.stack(corner)
    )
    return erase(batch, y0, x0, h, w, (0.0,)) + pasted


def blend(batch: DataNode, partners: Sequence[Value], weights: Sequence[Value]) -> DataNode:
    out = _on(weights[0], batch) * batch
    for partner, weight in zip(partners, weights[1:], strict=True):
        other = fn.permute_batch(batch, indices=_index(partner))
        out = out + _on(weight, batch) * other
    return out


def mosaic(batch: DataNode, partners: Sequence[Value], row: Value, column: Value) -> DataNode:
    """On the CPU one ``fn.multi_paste`` of the four quarters onto the output, the sample's own
    (its first input) and its partners' (``fn.permute_batch``): one write of the output and a
    copy of each partner, where the cuts below make about nine copies of the image (its
    ``in_ids`` would spare the partners' copies, but need each sample's own index in the batch,
    which no operator gives and the kernel is not handed). Each quarter's extent needs the
    image's size on the host, which a CPU graph reads from the images' shape. A GPU graph does
    not: reading the shape of a GPU node makes DALI's CPU thread wait for the GPU (the graph's
    device rules, :mod:`daliaug.engines.dali.check`), so there the quarters are cut by
    subscripts and joined by ``fn.cat`` (:func:`_mosaic_by_cuts`), copies in device memory."""
    if batch.device == "gpu":
        return _mosaic_by_cuts(batch, partners, row, column)
    height, width = (batch.shape(dtype=types.FLOAT)[k] for k in (0, 1))
    top, left = height - row, width - column

    def pairs(*values: Value) -> DataNode:  # one (y, x) row per quarter
        return fn.reshape(_vector(values, types.INT32), shape=[4, 2])

    # quarters: the sample above left, then its partners above right, below left, below right
    return fn.multi_paste(
        batch,
        *(fn.permute_batch(batch, indices=_index(p)) for p in partners),
        in_anchors=pairs(row, column, row, 0.0, 0.0, column, 0.0, 0.0),
        shapes=pairs(top, left, top, column, row, left, row, column),
        out_anchors=pairs(0.0, 0.0, 0.0, left, top, 0.0, top, left),
    )


def _mosaic_by_cuts(
    batch: DataNode, partners: Sequence[Value], row: Value, column: Value
) -> DataNode:
    """:func:`mosaic` from parts cut by subscripts (``x[:, column:]``: per-sample bounds from
    the CPU) and joined by ``fn.cat``: no image shape is read. Columns are joined first over
    the whole height, then rows over the whole width: ``cat`` leaves out an input that is empty
    in every sample, which is harmless only where each part spans the other axis whole."""
    b, c, d = (fn.permute_batch(batch, indices=_index(p)) for p in partners)
    y, x = (fn.cast(v, dtype=types.INT32) if isinstance(v, DataNode) else v for v in (row, column))
    upper = fn.cat(batch[:, x:], b[:, :x], axis=1)
    lower = fn.cat(c[:, x:], d[:, :x], axis=1)
    return fn.cat(upper[y:], lower[:y], axis=0)


def scaled(images: DataNode, factor: Value) -> DataNode:
    return images * _on(factor, images)


def recolour(images: DataNode, entries: Sequence[Value]) -> DataNode:
    """``fn.coord_transform`` by ``[M | t]`` plus ``N`` times each image's per-channel mean
    (``fn.reductions.mean``), clipped."""
    moved = fn.coord_transform(
        images, MT=fn.reshape(_vector(entries[:12]), shape=[3, 4]), dtype=types.FLOAT
    )
    mean = fn.reshape(fn.reductions.mean(images, axes=[0, 1]), shape=[1, 3])
    shift = fn.coord_transform(mean, M=fn.reshape(_vector(entries[12:]), shape=[3, 3]))
    return dmath.clamp(moved + fn.reshape(shift, shape=[1, 1, 3]), 0.0, 255.0)


def each_sample(op: Callable[[DataNode], DataNode], images: DataNode) -> DataNode:
    """``op(images)``: DALI's operators compute each sample on its own already, and
    :func:`select` runs an operation only for the samples that chose it."""
    return op(images)


def select(flag: Value, op: Callable[[DataNode], DataNode], images: DataNode) -> DataNode:
    """Per sample, ``op(images)`` where ``flag`` (0 or 1) is 1, else ``images``; in daliaug's
    graphs ``op`` runs only for the samples whose flag is 1 (:func:`branches.where`)."""
    return branches.where(flag > 0.5, op, images)


def choose(
    options: Sequence[tuple[Value, Callable[[DataNode], DataNode]]], images: DataNode
) -> DataNode:
    """Per sample, ``op(images)`` for the option ``(flag, op)`` whose flag (0 or 1, at most
    one 1) is 1, else ``images``: :func:`select` for each option in turn."""
    for flag, op in options:
        images = select(flag, op, images)
    return images
