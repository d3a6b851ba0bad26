"""One epoch as ``tf.data`` streams, shared by the DALI path and the TensorFlow backend.

An epoch is the sample order (reshuffled reproducibly on every iteration), the batch
boundaries (the last batch is smaller unless ``drop_remainder``) and, per batch, random
parameters drawn afresh every iteration (stateless, from the config's seed) and turned into the
plan's per-sample inputs: decode windows, warp matrices, colour matrices. Streams built from the
same seed yield the same order and parameters, so separate streams stay aligned sample for
sample, and both backends see the same epoch for one seed.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from daliaug.config import Config
from daliaug.epochs import shard_range
from daliaug.errors import DataError
from daliaug.plan import Plan
from daliaug.sources.segmentation import SegmentationSource
from daliaug.sources.tfrecord import RecordSamples
from daliaug.tf_ops import draw_params, warp_batch

_TF_DTYPES = {"float32": tf.float32, "float16": tf.float16, "uint8": tf.uint8}


def element_spec(config: Config, num_classes: int) -> tuple[tf.TensorSpec, tf.TensorSpec]:
    """Shapes and dtypes of one ``(images, labels or masks)`` batch, known from the config."""
    h, w = config.image_size
    c = config.channels
    batch = config.batch_size if config.drop_remainder else None
    nhwc = config.output.layout == "NHWC"
    image_shape = (batch, h, w, c) if nhwc else (batch, c, h, w)
    images = tf.TensorSpec(image_shape, _TF_DTYPES[config.output.dtype])
    source = config.source
    if isinstance(source, SegmentationSource):
        if source.mask_output == "one_hot":
            shape = (batch, h, w, num_classes) if nhwc else (batch, num_classes, h, w)
            return images, tf.TensorSpec(shape, tf.float32)
        return images, tf.TensorSpec((batch, h, w), tf.as_dtype(source.mask_dtype))
    labels = {
        "int": tf.TensorSpec((batch,), tf.int32),
        "categorical": tf.TensorSpec((batch, num_classes), tf.float32),
        "binary": tf.TensorSpec((batch, 1), tf.float32),
    }[config.label_mode]
    return images, labels


def index_batches(n: int, config: Config, seed: int) -> tf.data.Dataset:
    """Sample indices of one epoch in batches; reshuffled (reproducibly) on every iteration."""
    ds = tf.data.Dataset.range(n)
    if config.shuffle:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    return ds.batch(config.batch_size, drop_remainder=config.drop_remainder)


def param_batches(
    plan: Plan, n: int, config: Config, seed: int, rows: np.ndarray | None = None
) -> tf.data.Dataset:
    """``(indices, parameter rows)`` per batch: drawn afresh every iteration, or the given
    ``rows`` (one per sample, ordered like ``plan.param_keys``)."""
    batches = index_batches(n, config, seed)
    if rows is not None:
        table = tf.constant(np.asarray(rows, np.float32).reshape(n, len(plan.param_keys)))
        return batches.map(lambda i: (i, tf.gather(table, i)))
    keys = tf.data.Dataset.random(seed=seed + 1, rerandomize_each_iteration=True).batch(2)
    return tf.data.Dataset.zip(batches, keys).map(
        lambda i, key: (i, draw_params(plan, key, tf.shape(i)[0]))
    )


def warp_batches(
    config: Config,
    sizes: np.ndarray,
    seed: int,
    *,
    fuse_roi: bool,
    masks: bool,
    resize: bool = False,
    rows: np.ndarray | None = None,
) -> tf.data.Dataset:
    """``(indices, plan inputs)`` per batch for images of ``sizes`` ((height, width) per
    sample): see :meth:`Plan.warp_inputs`."""
    plan = config.plan
    table = tf.constant(sizes)

    def inputs(i: tf.Tensor, r: tf.Tensor) -> dict[str, tf.Tensor]:
        return warp_batch(
            plan, r, tf.gather(table, i), fuse_roi=fuse_roi, masks=masks, resize=resize
        )

    return param_batches(plan, len(sizes), config, seed, rows).map(lambda i, r: (i, inputs(i, r)))


def image_size(encoded: tf.Tensor) -> tf.Tensor:
    """``(height, width)`` (int32) of an encoded JPEG or PNG, read from its header."""

    def png() -> tf.Tensor:
        width_height = tf.io.decode_raw(tf.strings.substr(encoded, 16, 8), tf.int32, False)
        return tf.reverse(width_height, [0])

    return tf.cond(tf.io.is_jpeg(encoded), lambda: tf.image.extract_jpeg_shape(encoded)[:2], png)


def record_batches(config: Config, records: RecordSamples, seed: int) -> tf.data.Dataset:
    """Batches of ``(encoded images, labels, (height, width))`` from the TFRecords: this
    shard's contiguous range, shuffled with a buffer of 10,000 records each iteration."""
    start, _ = shard_range(sum(records.counts), records.shard_id, records.num_shards)
    features = {
        records.image_key: tf.io.FixedLenFeature([], tf.string),
        records.label_key: tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(serialized, features)
        encoded = example[records.image_key]
        return encoded, tf.cast(example[records.label_key], tf.int32), image_size(encoded)

    ds = tf.data.TFRecordDataset(records.files).skip(start).take(len(records))
    if config.shuffle:
        ds = ds.shuffle(min(len(records), 10_000), seed=seed, reshuffle_each_iteration=True)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(config.batch_size, drop_remainder=config.drop_remainder)


def check_record_keys(records: RecordSamples) -> None:
    """The first record holds both feature keys, with the expected kinds of values."""
    first = next(iter(tf.data.TFRecordDataset(records.files[:1])), None)
    if first is None:
        raise DataError(f"TFRecord file {records.files[0]} holds no records")
    feature = tf.train.Example.FromString(first.numpy()).features.feature
    for key, kind in ((records.image_key, "bytes_list"), (records.label_key, "int64_list")):
        if key not in feature or feature[key].WhichOneof("kind") != kind:
            raise DataError(
                f"TFRecord file {records.files[0]}: no {kind.split('_')[0]} feature {key!r} "
                f"(the records hold {sorted(feature)}); set source.image_key / source.label_key"
            )
