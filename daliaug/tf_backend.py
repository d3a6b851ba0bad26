"""The TensorFlow backend: the DALI graph's twin, built from TensorFlow ops.

Used for ``backend: tf``, and by ``backend: auto`` where DALI cannot be imported. The epoch and
the plan inputs (decode windows, warp and colour matrices) come from the same
:mod:`daliaug.tf_epoch` streams as on the DALI path, so for one seed both backends see the same
samples, in the same order, with the same parameters. Only the primitives are TensorFlow's own:
decode (only the crop window of a JPEG when the plan fuses a crop into decoding), resample once,
recolour once, normalize; masks are resampled with nearest neighbours and never recoloured.
:mod:`daliaug.parity` measures how closely the two agree.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from daliaug.config import Config
from daliaug.epochs import batch_bounds, resolve_seed
from daliaug.sources import Samples
from daliaug.sources.segmentation import SegmentationSource
from daliaug.sources.tfrecord import RecordSamples
from daliaug.tf_epoch import element_spec, param_batches, record_batches, warp_batches
from daliaug.tf_ops import warp_batch
from daliaug.transforms.saturation import LUMA

_DCT = "INTEGER_ACCURATE"
"""libjpeg-turbo's accurate integer IDCT, the one DALI's CPU decoder uses (TensorFlow's default,
the fast one, was up to 17 grey levels and 1.56 on average off it on our test JPEGs)."""

Inputs = dict[str, tf.Tensor]


def quantize(x: tf.Tensor) -> tf.Tensor:
    """Round half up and saturate to 0..255, as DALI converts float results to ``uint8``
    (kept in float32 between the stages, cast once at the end)."""
    return tf.clip_by_value(tf.floor(x + 0.5), 0.0, 255.0)


def to_uint8(x: tf.Tensor) -> tf.Tensor:
    return tf.cast(quantize(x), tf.uint8)


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


def warp(
    images: tf.Tensor, matrices: tf.Tensor, size: tuple[int, int], fill: float | str, nearest: bool
) -> tf.Tensor:
    """Resample a batch of float ``images`` onto ``size`` with their destination-to-source
    ``matrices`` (``(batch, 2, 3)``); the result is quantized (float32).

    The matrices work in pixel-corner coordinates (centres at +0.5); TensorFlow's transform
    works on pixel indices, so ``src_idx = A (dst_idx + 0.5) + t - 0.5``. A constant fill is
    first rounded and saturated to ``uint8``, as DALI does.
    """
    linear = matrices[:, :, :2]
    shift = index_translation(linear, matrices[:, :, 2])
    zeros = tf.zeros_like(shift)
    transforms = tf.concat([linear[:, 0], shift[:, :1], linear[:, 1], shift[:, 1:], zeros], 1)
    fill_value = 0.0 if fill == "nearest" else float(np.clip(np.floor(float(fill) + 0.5), 0, 255))
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=images,
        transforms=transforms,
        output_shape=tf.constant(size, tf.int32),
        fill_value=fill_value,
        interpolation="NEAREST" if nearest else "BILINEAR",
        fill_mode="NEAREST" if fill == "nearest" else "CONSTANT",
    )
    return quantize(out)


def resample(image: tf.Tensor, matrix: tf.Tensor, config: Config) -> tf.Tensor:
    """One float image resampled as the plan says: a border-clamped map that covers the whole
    image (a decoded crop window, a plain resize), possibly flipped, takes the same samples from
    ``tf.image.resize`` and a reversal, about three times faster than :func:`warp`."""
    size = config.image_size

    def warped() -> tf.Tensor:
        return warp(image[tf.newaxis], matrix[tf.newaxis], size, config.fill, nearest=False)[0]

    if not config.plan.resizes:
        return warped()
    h, w = tf.unstack(tf.cast(tf.shape(image)[:2], tf.float32))
    x0, y0 = matrix[0, 2], matrix[1, 2]
    x1, y1 = matrix[0, 0] * size[1] + x0, matrix[1, 1] * size[0] + y0
    spans = [tf.sort(tf.stack(v)) for v in ((x0, x1), (y0, y1))]
    whole = tf.reduce_all(tf.abs(tf.concat(spans, 0) - tf.stack([0.0, w, 0.0, h])) < 1e-3)

    def resized() -> tf.Tensor:
        out = tf.image.resize(image, size, antialias=False)
        out = tf.cond(x0 > x1, lambda: tf.reverse(out, [1]), lambda: out)
        return quantize(tf.cond(y0 > y1, lambda: tf.reverse(out, [0]), lambda: out))

    return tf.cond(whole, resized, warped)


def index_translation(linear: tf.Tensor, shift: tf.Tensor) -> tf.Tensor:
    """The translation of pixel-corner maps ``(linear, shift)`` in index coordinates."""
    return shift + 0.5 * tf.reduce_sum(linear, axis=-1) - 0.5


def finish(images: tf.Tensor, inputs: Inputs, config: Config) -> tf.Tensor:
    """Recolour (``out = M @ rgb + t`` with ``inputs["colour"]`` = ``[M | t]`` per image,
    quantized) and normalize a batch of resampled images: ``(x - mean) * (1 / std)`` like DALI,
    then dtype and layout."""
    if "colour" in inputs:
        colour, c = inputs["colour"], config.channels
        moved = tf.einsum("bhwc,bkc->bhwk", images, colour[:, :, :c])
        images = quantize(moved + colour[:, tf.newaxis, tf.newaxis, :, c])
    mean, std = config.output.mean_std(config.channels)
    if config.output.dtype == "uint8":
        out = tf.cast(images, tf.uint8)
    else:
        scale = np.float32(1.0) / np.asarray(std, np.float32)
        out = tf.cast((images - mean) * scale, tf.as_dtype(config.output.dtype))
    return tf.transpose(out, [0, 3, 1, 2]) if config.output.layout == "NCHW" else out


def mask_target(encoded: tf.Tensor, matrix: tf.Tensor, config: Config) -> tf.Tensor:
    """One mask, warped like its image (nearest, the source's ``mask_fill``), as class indices
    or one-hot (as :func:`daliaug.dali_pipeline.mask_target`)."""
    source = config.source
    assert isinstance(source, SegmentationSource)
    table = source.class_table()
    mask = tf.cast(tf.io.decode_png(encoded, 3 if table else 1), tf.float32)
    mask = warp(mask[tf.newaxis], matrix[tf.newaxis], config.image_size, source.mask_fill, True)[0]
    if table is None:
        index = tf.cast(mask[..., 0], tf.int32)
    else:
        key = tf.tensordot(mask, [65536.0, 256.0, 1.0], [[2], [0]])
        hits = tf.cast(key[..., tf.newaxis] == tf.constant(table.keys, tf.float32), tf.int32)
        classes = tf.range(len(table.keys), dtype=tf.int32) - source.ignore_index
        index = source.ignore_index + tf.reduce_sum(hits * classes, axis=-1)
    if source.mask_output == "index":
        return tf.cast(index, tf.as_dtype(source.mask_dtype))
    one_hot = tf.one_hot(index, len(source.mask_classes()), dtype=tf.float32)
    return one_hot if config.output.layout == "NHWC" else tf.transpose(one_hot, [2, 0, 1])


def label_target(label: tf.Tensor, config: Config, num_classes: int) -> tf.Tensor:
    """One sample's label as ``label_mode`` says (as :func:`daliaug.dali_pipeline.label_target`)."""
    if config.label_mode == "categorical":
        return tf.one_hot(label, num_classes, dtype=tf.float32)
    if config.label_mode == "binary":
        return tf.reshape(tf.cast(label, tf.float32), [1])
    return label


def _finish_one(image: tf.Tensor, inputs: Inputs, config: Config) -> tf.Tensor:
    """:func:`finish` for one image (per-sample stages parallelize better than batch ones)."""
    return finish(image[tf.newaxis], {k: v[tf.newaxis] for k, v in inputs.items()}, config)[0]


def _file_samples(
    config: Config, samples: Samples, seed: int, rows: np.ndarray | None
) -> tf.data.Dataset:
    """Finished ``(image, target)`` batches for file sources: each file is decoded, resampled
    and finished on its own (its size is its own), in parallel."""
    paths = {name: tf.constant(p) for name, p in samples.files.items()}
    labels = tf.constant(samples.columns["label"]) if "label" in samples.columns else None
    masks = "mask_path" in paths
    batches = warp_batches(config, samples.sizes, seed, fuse_roi=True, masks=masks, rows=rows)

    def sample(index: tf.Tensor, inputs: Inputs) -> tuple[tf.Tensor, tf.Tensor]:
        encoded = tf.io.read_file(tf.gather(paths["path"], index))
        image = tf.cast(decode(encoded, inputs, config.channels), tf.float32)
        if masks:
            mask = tf.io.read_file(tf.gather(paths["mask_path"], index))
            target = mask_target(mask, inputs["mask_matrix"], config)
        else:
            target = label_target(tf.gather(labels, index), config, samples.num_classes)
        return _finish_one(resample(image, inputs["matrix"], config), inputs, config), target

    per_sample = batches.unbatch().map(sample, num_parallel_calls=tf.data.AUTOTUNE)
    return per_sample.batch(config.batch_size, drop_remainder=config.drop_remainder)


def _array_samples(
    config: Config, samples: Samples, seed: int, rows: np.ndarray | None
) -> tf.data.Dataset:
    """Finished ``(images, labels)`` batches for in-memory arrays: all of a batch is gathered,
    warped and finished at once (the arrays share one size)."""
    images, labels = (tf.constant(samples.columns[k]) for k in ("image", "label"))
    batches = warp_batches(config, samples.sizes, seed, fuse_roi=False, masks=False, rows=rows)

    def batch(index: tf.Tensor, inputs: Inputs) -> tuple[tf.Tensor, tf.Tensor]:
        pixels = tf.cast(tf.gather(images, index), tf.float32)
        warped = warp(pixels, inputs["matrix"], config.image_size, config.fill, nearest=False)
        targets = label_target(tf.gather(labels, index), config, samples.num_classes)
        return finish(warped, inputs, config), targets

    return batches.map(batch, num_parallel_calls=tf.data.AUTOTUNE)


def _record_samples(config: Config, records: RecordSamples, seed: int) -> tf.data.Dataset:
    """Finished ``(image, label)`` batches for TFRecords, decoded one by one like files."""
    plan = config.plan
    rows = param_batches(plan, len(records), config, seed).map(lambda i, r: r)

    def with_inputs(batch: tuple[tf.Tensor, tf.Tensor, tf.Tensor], r: tf.Tensor) -> tuple:
        encoded, labels, sizes = batch
        return encoded, labels, warp_batch(plan, r, sizes, fuse_roi=True, masks=False)

    def sample(encoded: tf.Tensor, label: tf.Tensor, inputs: Inputs) -> tuple:
        image = tf.cast(decode(encoded, inputs, config.channels), tf.float32)
        image = _finish_one(resample(image, inputs["matrix"], config), inputs, config)
        return image, label_target(label, config, records.num_classes)

    batches = tf.data.Dataset.zip(record_batches(config, records, seed), rows).map(with_inputs)
    per_sample = batches.unbatch().map(sample, num_parallel_calls=tf.data.AUTOTUNE)
    return per_sample.batch(config.batch_size, drop_remainder=config.drop_remainder)


def tf_dataset(
    config: Config, samples: Samples | RecordSamples, params: np.ndarray | None = None
) -> tf.data.Dataset:
    """``(images, labels or masks)`` batches of ``samples`` computed with TensorFlow ops.

    One iteration is one epoch, exactly as on the DALI path. ``params`` (one row of
    :attr:`Plan.param_keys` per sample) replaces the random draws (column sources only).
    """
    seed = resolve_seed(config.seed)
    if isinstance(samples, RecordSamples):
        if params is not None:
            raise ValueError("explicit params need a column source, not TFRecords")
        batches = _record_samples(config, samples, seed)
    elif "image" in samples.columns:
        batches = _array_samples(config, samples, seed, params)
    else:
        batches = _file_samples(config, samples, seed, params)
    specs = element_spec(config, samples.num_classes)
    shaped = batches.map(
        lambda images, targets: (
            tf.ensure_shape(images, specs[0].shape),
            tf.ensure_shape(targets, specs[1].shape),
        )
    )
    num_batches = len(batch_bounds(len(samples), config.batch_size, config.drop_remainder))
    return shaped.prefetch(tf.data.AUTOTUNE).apply(
        tf.data.experimental.assert_cardinality(num_batches)
    )
