"""TensorFlow's image operations for the plan, the DALI graph's twins: decode (only the crop
window of a JPEG when the plan fuses a crop into decoding), resample once, recolour once,
normalize, and the targets; masks are resampled with nearest neighbours and never recoloured.
Pixels stay ``float32`` from the resampling to the output (see :func:`finish`).
:mod:`daliaug.parity` measures how closely the two backends agree.

Two resamplers compute the same warp: :func:`transform` (TensorFlow's projective transform,
any image size, one image at a time in the files' graph) and :func:`sample` (gathers and
arithmetic only, which XLA fuses into one loop: batches of equal-sized arrays, about three
times faster there). ``tests/engines/test_tf_backend.py`` holds them to each other.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np
import tensorflow as tf

from daliaug.engine_spec import EngineSpec
from daliaug.engines.tf.math import TF_ARRAYS
from daliaug.engines.tf.pixels import KERNELS
from daliaug.kernels.targets import mask_classes, within
from daliaug.sources.segmentation import MaskTargets
from daliaug.transforms.base import Fill, fill_value
from daliaug.transforms.saturation import LUMA

_DCT = "INTEGER_ACCURATE"
"""libjpeg-turbo's accurate integer IDCT, the one DALI's CPU decoder uses (TensorFlow's default,
the fast one, was up to 17 grey levels and 1.56 on average off it on our test JPEGs)."""

Inputs = dict[str, tf.Tensor]


def to_uint8(x: tf.Tensor) -> tf.Tensor:
    """Round half up and saturate to 0..255, as DALI converts float results to ``uint8``."""
    return tf.cast(tf.clip_by_value(tf.floor(x + 0.5), 0.0, 255.0), tf.uint8)


def decode(encoded: tf.Tensor, inputs: Inputs, channels: int) -> tf.Tensor:
    """Decode to ``uint8`` HWC: only the plan's crop window (``crop_start`` x, y and
    ``crop_shape`` w, h in ``inputs``) if it has one (JPEG: fused decode and crop)."""
    crop = "crop_start" in inputs
    if crop:
        corner = tf.cast(tf.reverse(inputs["crop_start"], [0]), tf.int32)
        size = tf.cast(tf.reverse(inputs["crop_shape"], [0]), tf.int32)

    def jpeg(c: int) -> tf.Tensor:
        if not crop:
            return tf.io.decode_jpeg(encoded, c, dct_method=_DCT)
        # TensorFlow upsamples chroma at the edges of a cropped decode as if they were the
        # image's (up to 35 grey levels off a full decode, which DALI's ROI decode matches):
        # decode one more pixel on each side, then cut it off.
        start = tf.maximum(corner - 1, 0)
        stop = tf.minimum(corner + size + 1, tf.image.extract_jpeg_shape(encoded)[:2])
        window = tf.concat([start, stop - start], 0)
        wide = tf.image.decode_and_crop_jpeg(encoded, window, c, dct_method=_DCT)
        return _cut(wide, corner - start, size)

    def jpeg_any() -> tf.Tensor:
        if channels == 3:
            return jpeg(3)
        # libjpeg cannot turn CMYK into grey: decode to RGB, then take the luma.
        cmyk = tf.image.extract_jpeg_shape(encoded)[2] == 4
        return tf.cond(cmyk, lambda: luma(jpeg(3)), lambda: jpeg(1))

    def png() -> tf.Tensor:
        # 16 bits per sample to 8 as DALI does, round(v * 255 / 65535); 8-bit PNGs stay exact.
        image = tf.io.decode_png(encoded, channels, dtype=tf.uint16)
        if crop:
            image = _cut(image, corner, size)
        return to_uint8(tf.cast(image, tf.float32) / 257.0)

    image = tf.cond(tf.io.is_jpeg(encoded), jpeg_any, png)
    return tf.ensure_shape(image, [None, None, channels])


def _cut(image: tf.Tensor, corner: tf.Tensor, size: tf.Tensor) -> tf.Tensor:
    """The ``size`` (height, width) window of ``image`` at ``corner`` (row, column)."""
    return tf.slice(image, tf.concat([corner, [0]], 0), tf.concat([size, [-1]], 0))


def luma(rgb: tf.Tensor) -> tf.Tensor:
    """Rec. 601 luma of ``uint8`` RGB as one ``uint8`` channel, truncated (as DALI does it)."""
    y = tf.floor(tf.tensordot(tf.cast(rgb, tf.float32), LUMA, [[2], [0]]))
    return tf.cast(y, tf.uint8)[..., tf.newaxis]


def transform(
    images: tf.Tensor,
    matrices: tf.Tensor,
    size: tuple[int, int],
    fill: Fill,
    nearest: bool,
    cut: bool = False,
) -> tf.Tensor:
    """Resample a batch of float ``images`` onto ``size`` with their destination-to-source
    ``matrices`` (``(batch, 2, 3)``), in float32, unrounded: ``fill`` is a constant (as given),
    or ``nearest``, ``reflect`` or ``wrap`` (TensorFlow's fill modes); with ``cut`` a constant
    fill takes every point beyond the outermost pixel centres (config ``fill_edge: cut``).

    The matrices work in pixel-corner coordinates (centres at +0.5); TensorFlow's transform
    works on pixel indices, so ``src_idx = A (dst_idx + 0.5) + t - 0.5``.
    """
    linear = matrices[:, :, :2]
    shift = index_translation(linear, matrices[:, :, 2])
    zeros = tf.zeros_like(shift)
    transforms = tf.concat([linear[:, 0], shift[:, :1], linear[:, 1], shift[:, 1:], zeros], 1)
    constant = not isinstance(fill, str)
    cut = cut and constant
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=images,
        transforms=transforms,
        output_shape=tf.constant(size, tf.int32),
        fill_value=float(fill) if constant else 0.0,
        interpolation="NEAREST" if nearest else "BILINEAR",
        fill_mode="NEAREST" if cut else "CONSTANT" if constant else str(fill).upper(),
    )
    if not cut:
        return out
    x, y = source_points(matrices, size)
    source = tf.cast(tf.shape(images)[1:3], tf.float32)
    return _fill_outside(out, x, y, source[0], source[1], float(fill))


def source_points(matrices: tf.Tensor, size: tuple[int, int]) -> tuple[tf.Tensor, tf.Tensor]:
    """The source index coordinates ``x`` and ``y`` (each ``(batch, height * width)``) of every
    pixel of a ``size`` output under pixel-corner ``matrices``."""
    rows, cols = np.meshgrid(np.arange(size[0]), np.arange(size[1]), indexing="ij")
    grid = np.stack([cols.ravel(), rows.ravel(), np.ones(rows.size)]).astype(np.float32)
    linear = matrices[:, :, :2]
    index = tf.concat([linear, index_translation(linear, matrices[:, :, 2])[..., None]], 2)
    points = tf.einsum("bij,jp->bip", index, grid)
    return points[:, 0], points[:, 1]


def _fill_outside(
    images: tf.Tensor, x: tf.Tensor, y: tf.Tensor, height: Any, width: Any, fill: float
) -> tf.Tensor:
    """``images`` (``(batch, h, w, c)``) with ``fill`` wherever the source point ``(x, y)``
    (index coordinates, :func:`source_points`) lies outside the outermost pixel centres
    (:func:`~daliaug.kernels.targets.within`): SciPy's ``constant`` mode."""
    inside = within(x, y, height, width)
    inside = tf.reshape(inside, [tf.shape(images)[0], images.shape[1], images.shape[2], 1])
    return tf.where(inside, images, tf.constant(fill, images.dtype))


def resample(image: tf.Tensor, matrix: tf.Tensor, spec: EngineSpec) -> tf.Tensor:
    """One decoded ``uint8`` image resampled as the plan says, in float32: a border-clamped
    map that covers the whole image (a decoded crop window, a plain resize), possibly flipped,
    takes the same samples from ``tf.image.resize`` (straight from ``uint8``) and a reversal,
    about three times faster than :func:`transform`."""
    size = spec.image_size
    nearest = spec.interpolation == "nearest"

    def warped() -> tf.Tensor:
        pixels = tf.cast(image, tf.float32)[tf.newaxis]
        fill, cut = fill_value(spec.fill), spec.fill_edge == "cut"
        return transform(pixels, matrix[tf.newaxis], size, fill, nearest, cut)[0]

    if not spec.plan.resizes:
        return warped()
    if not spec.plan.warps:  # the map is the output's scale of the whole image, unflipped
        return tf.image.resize(image, size, antialias=False)
    h, w = tf.unstack(tf.cast(tf.shape(image)[:2], tf.float32))
    x0, y0 = matrix[0, 2], matrix[1, 2]
    x1, y1 = matrix[0, 0] * size[1] + x0, matrix[1, 1] * size[0] + y0
    spans = [tf.sort(tf.stack(v)) for v in ((x0, x1), (y0, y1))]
    whole = tf.reduce_all(tf.abs(tf.concat(spans, 0) - tf.stack([0.0, w, 0.0, h])) < 1e-3)

    def resized() -> tf.Tensor:
        out = tf.image.resize(image, size, antialias=False)
        out = tf.cond(x0 > x1, lambda: tf.reverse(out, [1]), lambda: out)
        return tf.cond(y0 > y1, lambda: tf.reverse(out, [0]), lambda: out)

    return tf.cond(whole, resized, warped)


def sample(
    images: tf.Tensor,
    matrices: tf.Tensor,
    size: tuple[int, int],
    fill: Fill,
    nearest: bool,
    cut: bool = False,
) -> tf.Tensor:
    """:func:`transform`'s result (float32) for a batch of equal-sized ``images`` (any dtype),
    computed with gathers and arithmetic that XLA fuses: each output pixel's source point, its
    coordinates mapped as the fill mode says (clamped for ``nearest``, mirrored for
    ``reflect``, tiled for ``wrap``), then its nearest pixel or the four around it, those
    outside the image taking a constant fill (with ``cut``: the point takes it, once beyond
    the outermost pixel centres)."""
    batch = tf.shape(images)[0]
    height, width, channels = images.shape[1], images.shape[2], images.shape[3]
    points = source_points(matrices, size)
    x = _map_coordinate(points[0], width, fill)
    y = _map_coordinate(points[1], height, fill)
    flat = tf.reshape(images, [-1, channels])
    base = (tf.range(batch) * (height * width))[:, tf.newaxis]

    def pixel(row: tf.Tensor, col: tf.Tensor) -> tf.Tensor:
        inside = (row >= 0) & (row < height) & (col >= 0) & (col < width)
        row, col = tf.clip_by_value(row, 0, height - 1), tf.clip_by_value(col, 0, width - 1)
        value = tf.cast(tf.gather(flat, base + row * width + col), tf.float32)
        return tf.where(inside[..., tf.newaxis], value, _constant(fill))

    if nearest:  # half away from zero, as std::round (points below 0 are outside)
        out = pixel(_index(tf.floor(y + 0.5)), _index(tf.floor(x + 0.5)))
    else:
        x0, y0 = tf.floor(x), tf.floor(y)
        fx, fy = (x - x0)[..., tf.newaxis], (y - y0)[..., tf.newaxis]
        col, row = _index(x0), _index(y0)
        top = pixel(row, col) * (1 - fx) + pixel(row, col + 1) * fx
        bottom = pixel(row + 1, col) * (1 - fx) + pixel(row + 1, col + 1) * fx
        out = top * (1 - fy) + bottom * fy
    out = tf.reshape(out, [batch, size[0], size[1], channels])
    if cut and not isinstance(fill, str):
        out = _fill_outside(out, x, y, height, width, float(fill))
    return out


def _constant(fill: Fill) -> float:
    return 0.0 if isinstance(fill, str) else float(fill)


def _index(coordinate: tf.Tensor) -> tf.Tensor:
    return tf.cast(coordinate, tf.int32)


def _map_coordinate(coordinate: tf.Tensor, length: int, fill: Fill) -> tf.Tensor:
    """An index-space source coordinate mapped into the image as TensorFlow's projective
    transform maps it for ``fill`` (SciPy's ``ndimage`` conventions); a constant fill leaves
    it as it is."""
    if not isinstance(fill, str):
        return coordinate
    last = float(length - 1)
    if length <= 1:
        return tf.zeros_like(coordinate)
    if fill == "reflect":  # [abcd] -> [dcba|abcd|dcba]
        period = 2.0 * length
        low = coordinate + period * tf.floor(-coordinate / period)
        low = tf.where(low < -length, low + period, -low - 1)
        high = coordinate - period * tf.floor(coordinate / period)
        high = tf.where(high >= length, period - high - 1, high)
        coordinate = tf.where(coordinate < 0, low, tf.where(coordinate > last, high, coordinate))
    elif fill == "wrap":  # [abcd] -> [abcd|abcd|abcd]
        low = coordinate + length * (tf.floor(-coordinate / last) + 1)
        high = coordinate - length * tf.floor(coordinate / last)
        coordinate = tf.where(coordinate < 0, low, tf.where(coordinate > last, high, coordinate))
    return tf.clip_by_value(coordinate, 0.0, last)


def index_translation(linear: tf.Tensor, shift: tf.Tensor) -> tf.Tensor:
    """The translation of pixel-corner maps ``(linear, shift)`` in index coordinates."""
    return shift + 0.5 * tf.reduce_sum(linear, axis=-1) - 0.5


def shift_within_range(images: tf.Tensor, offset: tf.Tensor) -> tf.Tensor:
    """``images + offset`` (one value per image, ``(batch, 1)``) clipped to each image's own
    minimum and maximum over all channels."""
    low = tf.reduce_min(images, axis=[1, 2, 3], keepdims=True)
    high = tf.reduce_max(images, axis=[1, 2, 3], keepdims=True)
    return tf.clip_by_value(images + offset[:, :, tf.newaxis, tf.newaxis], low, high)


def recolour(images: tf.Tensor, colour: tf.Tensor, channels: int) -> tf.Tensor:
    """``out = M @ rgb + t`` per image, ``colour`` = ``[M | t]`` ``(batch, C, C + 1)``
    (unclipped). Written as ``t + sum_c rgb[c] * M[:, c]``, elementwise ops only: XLA fuses
    them with the clip and the normalization into one loop (an ``einsum`` here became a
    separate contraction that cost about twice as much CPU time per image)."""
    matrix = colour[:, tf.newaxis, tf.newaxis]  # (batch, 1, 1, C, C + 1)
    moved = matrix[..., channels]
    for c in range(channels):
        moved = moved + images[..., c : c + 1] * matrix[..., c]
    return moved


def stage_column(inputs: Inputs) -> Callable[[int], tf.Tensor]:
    """The ``(N,)`` values of the plan's stage parameter ``k`` in a batch (see
    :meth:`Plan.pixels`)."""
    return lambda k: inputs["stages"][:, k]


def apply_plan(image: np.ndarray, inputs: dict[str, Any], spec: EngineSpec) -> np.ndarray:
    """One float32 HWC ``image`` through the plan's evaluated ``inputs`` (``matrix``, and
    ``offset``, ``colour`` and ``colour_mean`` where the plan has them: :meth:`Plan.warp_inputs`
    without decode windows), onto ``config.image_size``: resampled with the config's fill as
    given (not rounded), shifted within its range, recoloured; float32, neither rounded nor
    clipped."""
    c = image.shape[-1]
    matrix = tf.constant(np.asarray(inputs["matrix"], np.float32).reshape(1, 2, 3))
    nearest = spec.interpolation == "nearest"
    cut = spec.fill_edge == "cut"
    out = transform(image[np.newaxis], matrix, spec.image_size, spec.fill, nearest, cut)
    if "offset" in inputs:
        out = shift_within_range(out, tf.constant([[inputs["offset"][0]]], tf.float32))
    if "colour" in inputs:
        colour = tf.constant(np.asarray(inputs["colour"], np.float32).reshape(1, c, c + 1))
        if "colour_mean" in inputs:
            means = np.asarray(inputs["colour_mean"], np.float32).reshape(1, c, c)
            colour = with_mean(out, colour, tf.constant(means), c)
        out = recolour(out, colour, c)
    return out[0].numpy()


def with_mean(images: tf.Tensor, colour: tf.Tensor, means: tf.Tensor, channels: int) -> tf.Tensor:
    """``colour`` (``[M | t]``, ``(batch, C, C + 1)``) with ``N @ mean`` added to ``t``:
    ``means`` is ``N`` ``(batch, C, C)``, ``mean`` each image's per-channel mean."""
    mean = tf.reduce_mean(images, axis=[1, 2])
    shift = tf.reduce_sum(means * mean[:, tf.newaxis, :], axis=-1)
    return tf.concat([colour[..., :channels], colour[..., channels:] + shift[..., tf.newaxis]], -1)


def finishes_nothing(spec: EngineSpec, inputs: Collection[str]) -> bool:
    """Whether :func:`finish` gives its images back as they are: no offset, colour or stage
    among the ``inputs``, and a float32 NHWC output with mean 0 and std 1."""
    mean, std = spec.output.mean_std(spec.channels)
    return (
        not {"offset", "colour", "stages"} & set(inputs)
        and spec.output.dtype == "float32"
        and spec.output.layout == "NHWC"
        and not any(mean)
        and all(s == 1 for s in std)
    )


def finish(images: tf.Tensor, inputs: Inputs, spec: EngineSpec) -> tf.Tensor:
    """A batch of resampled float32 images to the output: shifted within each image's range
    (``inputs["offset"]``), recoloured (``out = M @ rgb + N @ mean + t`` with
    ``inputs["colour"]`` = ``[M | t]`` per image, ``inputs["colour_mean"]`` = ``N`` if given)
    and clipped to 0..255, through the pixel and batch stages (clipped to 0..255 again), then
    ``(x - mean) * (1 / std)`` like DALI in the output dtype, or for
    ``uint8`` output rounded half up, in the output layout. Nothing is rounded before that (one
    expression: XLA fuses it into one pass)."""
    if finishes_nothing(spec, inputs):
        return images
    if "offset" in inputs:
        images = shift_within_range(images, inputs["offset"])
    if "colour" in inputs:
        colour = inputs["colour"]
        if "colour_mean" in inputs:
            colour = with_mean(images, colour, inputs["colour_mean"], spec.channels)
        images = tf.clip_by_value(recolour(images, colour, spec.channels), 0.0, 255.0)
    if "stages" in inputs:
        column = stage_column(inputs)
        images = spec.plan.pixels(images, column, KERNELS)
        images = spec.plan.batch_images(images, column, KERNELS)
        # the stages' float arithmetic can leave 0..255 by a rounding step (255.00002)
        images = tf.clip_by_value(images, 0.0, 255.0)
    if spec.output.dtype == "uint8":
        out = tf.cast(tf.floor(images + 0.5), tf.uint8)
    else:
        mean, std = spec.output.mean_std(spec.channels)
        scale = np.float32(1.0) / np.asarray(std, np.float32)
        out = tf.cast((images - mean) * scale, tf.as_dtype(spec.output.dtype))
    return tf.transpose(out, [0, 3, 1, 2]) if spec.output.layout == "NCHW" else out


def mask_target(
    encoded: tf.Tensor, matrix: tf.Tensor, spec: EngineSpec, stages: tf.Tensor | None = None
) -> tf.Tensor:
    """One mask, warped like its image (nearest, the source's ``mask_fill``) and through the
    pixel stages that move pixels (their per-sample ``stages`` values), as class indices or
    one-hot (as :func:`daliaug.engines.dali.image.mask_target`)."""
    source = spec.masks
    assert isinstance(source, MaskTargets)
    table = source.class_table()
    mask = tf.cast(tf.io.decode_png(encoded, 3 if table else 1), tf.float32)
    fill = fill_value(source.mask_fill)
    mask = transform(mask[tf.newaxis], matrix[tf.newaxis], spec.image_size, fill, True)
    if stages is not None and spec.plan.moves_masks:
        column = stages[tf.newaxis]
        mask = spec.plan.mask_pixels(mask, lambda k: column[:, k], KERNELS, float(fill))
    return mask_classes(mask, source, spec.output.layout, TF_ARRAYS)[0]
