"""The TensorFlow graph of a config, the DALI graph's twin: from the feed protocol's batches
(:mod:`daliaug.backends.streams`) to finished ``(images, targets)`` batches, as ``tf.data`` maps
with no Python in them."""

from __future__ import annotations

import tensorflow as tf

from daliaug.backends.feed import WarpLayout
from daliaug.backends.tf.image import Inputs, decode, finish, mask_target, outputs, resample, warp
from daliaug.config import Config, target_column
from daliaug.sources.base import Samples

RESIZES = False
"""TensorFlow takes warp matrices even for axis-aligned plans: :func:`resample` finds its
resize fast path from the matrix itself."""


def _finish_one(image: tf.Tensor, inputs: Inputs, config: Config) -> tf.Tensor:
    """:func:`finish` for one image (per-sample stages parallelize better than batch ones)."""
    return finish(image[tf.newaxis], {k: v[tf.newaxis] for k, v in inputs.items()}, config)[0]


def _encoded_image(encoded: tf.Tensor, inputs: Inputs, config: Config) -> tf.Tensor:
    """One encoded image decoded, resampled and finished."""
    image = tf.cast(decode(encoded, inputs, config.channels), tf.float32)
    return _finish_one(resample(image, inputs["matrix"], config), inputs, config)


def file_batches(
    config: Config, samples: Samples, layout: WarpLayout, stream: tf.data.Dataset
) -> tf.data.Dataset:
    """Finished batches for file sources from ``(index, warp[, weight])`` batches: each file
    is read, decoded, resampled and finished on its own (its size is its own), in parallel."""
    paths = {name: tf.constant(p) for name, p in samples.files.items()}
    column = target_column(config.label_mode)
    targets = tf.constant(samples.columns[column]) if column in samples.columns else None

    def sample(index: tf.Tensor, flat: tf.Tensor, *weight: tf.Tensor) -> tuple:
        inputs = layout.unpack(flat, tf.reshape)
        image = _encoded_image(tf.io.read_file(tf.gather(paths["path"], index)), inputs, config)
        if "mask_path" in paths:
            mask = tf.io.read_file(tf.gather(paths["mask_path"], index))
            return image, mask_target(mask, inputs["mask_matrix"], config), *weight
        label = None if targets is None else tf.gather(targets, index)
        return (*outputs(image, label, config, samples.num_classes), *weight)

    per_sample = stream.unbatch().map(sample, num_parallel_calls=tf.data.AUTOTUNE)
    return per_sample.batch(config.batch_size, drop_remainder=config.drop_remainder)


def array_batches(
    config: Config, samples: Samples, layout: WarpLayout, stream: tf.data.Dataset
) -> tf.data.Dataset:
    """Finished batches for in-memory arrays from ``(index, warp[, weight])`` batches: a whole
    batch is gathered, warped and finished at once (the arrays share one size)."""
    images = tf.constant(samples.columns["image"])
    column = target_column(config.label_mode)
    targets = tf.constant(samples.columns[column]) if column in samples.columns else None
    nearest = config.interpolation == "nearest"

    def batch(index: tf.Tensor, flat: tf.Tensor, *weight: tf.Tensor) -> tuple:
        inputs = layout.unpack(flat, tf.reshape, batched=True)
        pixels = tf.cast(tf.gather(images, index), tf.float32)
        warped = warp(pixels, inputs["matrix"], config.image_size, config.fill, nearest)
        label = None if targets is None else tf.gather(targets, index)
        return (
            *outputs(finish(warped, inputs, config), label, config, samples.num_classes),
            *weight,
        )

    return stream.map(batch, num_parallel_calls=tf.data.AUTOTUNE)


def record_batches(
    config: Config, num_classes: int, layout: WarpLayout, stream: tf.data.Dataset, weighted: bool
) -> tf.data.Dataset:
    """Finished batches for TFRecords from ``(encoded, labels, weights, warp)`` batches,
    decoded one by one like files; the weights kept if ``weighted``."""

    def sample(encoded: tf.Tensor, label: tf.Tensor, weight: tf.Tensor, flat: tf.Tensor) -> tuple:
        image = _encoded_image(encoded, layout.unpack(flat, tf.reshape), config)
        return (*outputs(image, label, config, num_classes), *((weight,) if weighted else ()))

    per_sample = stream.unbatch().map(sample, num_parallel_calls=tf.data.AUTOTUNE)
    return per_sample.batch(config.batch_size, drop_remainder=config.drop_remainder)
