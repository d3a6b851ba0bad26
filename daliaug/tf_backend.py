"""The TensorFlow backend: the same plan as the DALI graph, evaluated with TensorFlow ops.

Used for ``backend: tf``, and by ``backend: auto`` where DALI cannot be imported. It computes
what :mod:`daliaug.dali_pipeline` computes, step for step, so that the two agree to rounding
(measured by :mod:`daliaug.parity`): read the shape from the file header, evaluate the plan's
geometry with :data:`daliaug.tf_ops.MATH`, decode (only the crop window of a JPEG when the plan
fuses a crop into decoding), resample once, recolour once, normalize. Only these primitives
are TensorFlow's own; the transform math is the plan's.

The epoch (order, batch boundaries, random parameters) comes from the same ``tf.data`` streams
as the DALI path's, so for one seed both backends see the same samples in the same order with
the same parameters.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from daliaug.algebra import Affine, Box, Canvas, ColourMatrix, Scalar
from daliaug.config import Config, Output
from daliaug.epochs import batch_bounds, resolve_seed
from daliaug.keras_dataset import element_spec, index_batches, param_batches
from daliaug.plan import Plan
from daliaug.sources import FileSamples
from daliaug.tf_ops import MATH
from daliaug.transforms.saturation import LUMA

_DCT = "INTEGER_ACCURATE"
"""libjpeg-turbo's accurate integer IDCT, the one DALI's CPU decoder uses (TensorFlow's default,
the fast one, was up to 17 grey levels and 1.56 on average off it on our test JPEGs)."""


def to_uint8(x: tf.Tensor) -> tf.Tensor:
    """Round half up and saturate to 0..255, as DALI converts float results to ``uint8``."""
    return tf.cast(tf.clip_by_value(tf.floor(x + 0.5), 0.0, 255.0), tf.uint8)


def source_shape(encoded: tf.Tensor) -> Canvas:
    """Height and width from the file header (JPEG or PNG), without decoding the pixels."""

    def png() -> tf.Tensor:
        width_height = tf.io.decode_raw(tf.strings.substr(encoded, 16, 8), tf.int32, False)
        return tf.reverse(width_height, [0])

    hw = tf.cond(tf.io.is_jpeg(encoded), lambda: tf.image.extract_jpeg_shape(encoded)[:2], png)
    hw = tf.cast(hw, tf.float32)
    return Canvas(h=hw[0], w=hw[1])


def decode(encoded: tf.Tensor, roi: Box | None, channels: int) -> tf.Tensor:
    """Decode to ``uint8`` HWC, only the ``roi`` window if given (JPEG: fused decode and crop)."""
    corner = size = None
    if roi is not None:
        corner = tf.cast(tf.stack([roi.y, roi.x]), tf.int32)
        size = tf.cast(tf.stack([roi.h, roi.w]), tf.int32)

    def jpeg(c: int) -> tf.Tensor:
        if roi is None:
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
        if roi is not None:
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


def warp(image: tf.Tensor, inverse: Affine, size: tuple[int, int], fill: float | str) -> tf.Tensor:
    """Resample ``image`` bilinearly onto ``size`` with the dst->src map ``inverse``.

    ``inverse`` works in pixel-corner coordinates (centres at +0.5); TensorFlow's transform
    works on pixel indices, so ``src_idx = A (dst_idx + 0.5) + t - 0.5``. A constant fill is
    first rounded and saturated to ``uint8``, as DALI does.
    """
    a, b, c, d, e, f = inverse
    row = [a, b, _sub_half(a, b, c), d, e, _sub_half(d, e, f), 0.0, 0.0]
    transform = tf.reshape(tf.stack([tf.cast(v, tf.float32) for v in row]), [1, 8])
    fill_value = 0.0 if fill == "nearest" else float(np.clip(np.floor(float(fill) + 0.5), 0, 255))
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=tf.cast(image, tf.float32)[tf.newaxis],
        transforms=transform,
        output_shape=tf.constant(size, tf.int32),
        fill_value=fill_value,
        interpolation="BILINEAR",
        fill_mode="NEAREST" if fill == "nearest" else "CONSTANT",
    )[0]
    return to_uint8(out)


def _sub_half(p: Scalar, q: Scalar, t: Scalar) -> Scalar:
    """The translation of one row of the map after moving both sides to index coordinates."""
    return (p + q) * 0.5 + t - 0.5


def recolour(image: tf.Tensor, colour: ColourMatrix) -> tf.Tensor:
    """``out = M @ rgb + t`` per pixel on the 0..255 scale, rounded and saturated to ``uint8``."""
    c = colour.channels
    matrix = tf.reshape(tf.stack([tf.cast(v, tf.float32) for v in colour.flat()]), [c, c + 1])
    pixels = tf.cast(image, tf.float32)
    return to_uint8(tf.tensordot(pixels, matrix[:, :c], [[2], [1]]) + matrix[:, c])


def normalize(image: tf.Tensor, output: Output, channels: int) -> tf.Tensor:
    """``(x - mean) / std`` (computed as ``(x - mean) * (1 / std)``, like DALI), dtype, layout."""
    mean, std = output.mean_std(channels)
    if output.dtype == "uint8":
        out = image
    else:
        scale = np.float32(1.0) / np.asarray(std, np.float32)
        out = (tf.cast(image, tf.float32) - mean) * scale
        out = tf.cast(out, tf.as_dtype(output.dtype))
    return tf.transpose(out, [2, 0, 1]) if output.layout == "NCHW" else out


def augment(encoded: tf.Tensor, params: dict[str, Scalar], config: Config) -> tf.Tensor:
    """Decode and augment one encoded image as the config says (the DALI graph's twin)."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    geometry = plan.geometry(params, source_shape(encoded), MATH)
    image = decode(encoded, geometry.roi, config.channels)
    image = warp(image, geometry.forward.inverse(), config.image_size, config.fill)
    colour = plan.colour(params, MATH)
    if colour is not None:
        image = recolour(image, colour)
    return normalize(image, config.output, config.channels)


def labels(label: tf.Tensor, config: Config, num_classes: int) -> tf.Tensor:
    """One sample's label as ``label_mode`` says (as :func:`daliaug.dali_pipeline._labels`)."""
    if config.label_mode == "categorical":
        return tf.one_hot(label, num_classes, dtype=tf.float32)
    if config.label_mode == "binary":
        return tf.reshape(tf.cast(label, tf.float32), [1])
    return label


def tf_dataset(
    config: Config, samples: FileSamples, params: np.ndarray | None = None
) -> tf.data.Dataset:
    """``(images, labels)`` batches of ``samples`` computed with TensorFlow ops.

    One iteration is one epoch, exactly as on the DALI path. ``params`` (one row of
    :attr:`Plan.param_keys` per sample) replaces the random draws.
    """
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    seed = resolve_seed(config.seed)
    n = len(samples)
    paths = tf.constant(samples.paths)
    sample_labels = tf.constant(samples.labels)
    batches = index_batches(n, config, seed)
    # (Without parameters no rows at all: unbatching zero-width rows crashes TensorFlow 2.21.)
    if plan.param_keys and params is not None:
        rows = tf.constant(np.asarray(params, np.float32).reshape(n, len(plan.param_keys)))
        batches = batches.map(lambda i: (i, tf.gather(rows, i)))
    elif plan.param_keys:
        batches = tf.data.Dataset.zip(batches, param_batches(n, config, plan, seed))

    def sample(index: tf.Tensor, row: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
        encoded = tf.io.read_file(tf.gather(paths, index))
        drawn = {key: row[i] for i, key in enumerate(plan.param_keys)}
        image = tf.ensure_shape(augment(encoded, drawn, config), image_shape)
        return image, labels(tf.gather(sample_labels, index), config, samples.num_classes)

    image_shape = element_spec(config, samples.num_classes)[0].shape[1:]
    ds = (
        batches.unbatch()
        .map(sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .batch(config.batch_size, drop_remainder=config.drop_remainder)
        .prefetch(tf.data.AUTOTUNE)
    )
    num_batches = len(batch_bounds(n, config.batch_size, config.drop_remainder))
    return ds.apply(tf.data.experimental.assert_cardinality(num_batches))
