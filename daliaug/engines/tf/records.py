"""TensorFlow reads TFRecords: the one place an engine's ``tf.data`` reads a
:class:`~daliaug.sources.tfrecord.RecordSamples` (DALI's own reader is in
:mod:`daliaug.engines.dali.pipeline`).

:func:`read_records` is the choice: the records' batches of ``(encoded images, labels,
weights, warp)`` for the TensorFlow graph (:func:`~daliaug.engines.tf.pipeline.record_batches`)
or, :func:`packed` into rows of :class:`~daliaug.engines.feed.RecordLayout`, for DALI's; the plan
is evaluated in the TensorFlow graph, where the images' sizes are known. Column samples get
``None``: the host feeds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import tensorflow as tf

from daliaug.engine_spec import EngineSpec
from daliaug.engines.feed import RecordLayout, WarpLayout
from daliaug.engines.tf.math import TF_ARRAYS
from daliaug.engines.tf.traced import plain
from daliaug.epoch import Epochs, shard_range
from daliaug.sources.sample_set import SampleSet
from daliaug.sources.tfrecord import RecordSamples

RECORD_BUFFER = 10_000
"""Records a TFRecord stream shuffles at a time: consecutive blocks of this many records of the
shard are each permuted, by a permutation fixed by the seed, the shard, the epoch and the
block."""

Clocked = Callable[[Callable[[int, int], Iterator], tf.TensorSpec], tf.data.Dataset]
"""A dataset whose iterations yield ``epoch_batches(e, first)`` for the epochs of the dataset's
clock (:func:`daliaug.outputs.tfdata.streams.counted`, bound to the clock)."""


def read_records(
    spec: EngineSpec,
    samples: SampleSet,
    epochs: Epochs,
    resizes: bool,
    clocked: Clocked,
    weights: np.ndarray | None = None,
) -> tuple[tf.data.Dataset, WarpLayout] | None:
    """Where TensorFlow reads ``samples`` itself (TFRecords): their batches (see
    :func:`_record_stream`) and the ``warp`` layout (``resizes``: the graph's, see
    :meth:`WarpLayout.of`); ``None`` where the host feeds them. The one place that picks
    TensorFlow's reader for a kind of :class:`SampleSet`."""
    if not isinstance(samples, RecordSamples):
        return None
    layout = WarpLayout.of(spec.plan, ("record",), resizes)
    return _record_stream(spec, samples, epochs, layout, clocked, weights), layout


def image_size(encoded: tf.Tensor) -> tf.Tensor:
    """``(height, width)`` (int32) of an encoded JPEG or PNG, read from its header."""

    def png() -> tf.Tensor:
        width_height = tf.io.decode_raw(tf.strings.substr(encoded, 16, 8), tf.int32, False)
        return tf.reverse(width_height, [0])

    return tf.cond(tf.io.is_jpeg(encoded), lambda: tf.image.extract_jpeg_shape(encoded)[:2], png)


def _record_stream(
    spec: EngineSpec,
    records: RecordSamples,
    epochs: Epochs,
    layout: WarpLayout,
    clocked: Clocked,
    weights: np.ndarray | None,
) -> tf.data.Dataset:
    """Batches of ``(encoded images, labels, weights, warp)`` from the TFRecords: this shard's
    contiguous range, shuffled per epoch in blocks of :data:`RECORD_BUFFER` records, in an
    order fixed by the seed, the shard and the epoch, and cut or padded (weight 0) to the
    epoch's positions; ``weights`` from the class ``weights`` (1 without); ``warp``
    (``layout``) evaluated in the graph from the epoch's parameter rows. An epoch resumed at
    batch ``first`` skips the records of the positions before it (read, not parsed nor
    decoded: a TFRecord file has no index TensorFlow's reader can seek by)."""
    start, _ = shard_range(sum(records.counts), records.shard_id, records.num_shards)
    table = tf.constant(np.ones(records.num_classes, np.float32) if weights is None else weights)
    features = {
        records.image_key: tf.io.FixedLenFeature([], tf.string),
        records.label_key: tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(position: tf.Tensor, serialized: tf.Tensor) -> tuple:
        example = tf.io.parse_single_example(serialized, features)
        encoded, label = example[records.image_key], tf.cast(example[records.label_key], tf.int32)
        weight = tf.gather(table, label) * tf.cast(position < len(records), tf.float32)
        return encoded, label, weight, image_size(encoded)

    base = np.random.SeedSequence([epochs.seed, epochs.stream]).generate_state(1, np.uint64)[0]
    window = min(len(records), RECORD_BUFFER)

    def shuffled(key: tf.Tensor, i: tf.Tensor, block: tf.Tensor) -> tf.Tensor:
        seed = tf.random.experimental.stateless_fold_in(key, i)
        return tf.random.experimental.stateless_shuffle(block, seed=seed)

    def epoch_records(epoch_and_first: tf.Tensor) -> tf.data.Dataset:
        epoch, first = epoch_and_first[0], epoch_and_first[1]
        ds = shard_records(records, start)
        if spec.shuffle:
            key = tf.stack([tf.constant(int(base >> 1), tf.int64), epoch])
            blocks = ds.batch(window).enumerate()
            ds = blocks.map(lambda i, block: shuffled(key, i, block)).unbatch()
        ds = ds.repeat().take(epochs.positions).enumerate().skip(first * epochs.batch_size)
        ds = ds.map(plain(parse), num_parallel_calls=tf.data.AUTOTUNE)
        return ds.batch(epochs.batch_size, drop_remainder=epochs.drop_remainder)

    def epoch_number(epoch: int, first: int) -> Iterator[np.ndarray]:
        yield np.array([epoch, first], np.int64)

    numbers = clocked(epoch_number, tf.TensorSpec((2,), tf.int64))
    batches = numbers.flat_map(plain(epoch_records))
    rows_spec = tf.TensorSpec((None, len(spec.plan.param_keys)), tf.float32)
    rows = clocked(partial(epochs.parameters, spec.plan), rows_spec)

    def with_warp(batch: tuple[tf.Tensor, ...], r: tf.Tensor) -> tuple:
        encoded, labels, weight, sizes = batch
        return encoded, labels, weight, layout.evaluate(spec.plan.paired(r), sizes, TF_ARRAYS)

    return tf.data.Dataset.zip(batches, rows).map(with_warp)


def shard_records(records: RecordSamples, start: int) -> tf.data.Dataset:
    """The serialized records of the shard (``start``: its first record's position): read by
    ``TFRecordDataset`` from local files, from ``s3://`` objects by the host
    (:meth:`RecordSamples.host_records`: boto3, one streamed read per file), which TensorFlow
    2.21 cannot read itself (no S3 file system; tensorflow-io's newest, 0.37.1, which had one,
    asks for TensorFlow 2.16)."""
    if not records.on_s3:
        return tf.data.TFRecordDataset(records.files).skip(start).take(len(records))
    spec = tf.TensorSpec((), tf.string)
    return tf.data.Dataset.from_generator(records.host_records, output_signature=spec)


def packed(stream: tf.data.Dataset, layout: RecordLayout) -> tf.data.Dataset:
    """``(encoded, labels, weights, warp)`` batches packed into rows of :class:`RecordLayout`."""

    def pack(
        encoded: tf.Tensor, labels: tf.Tensor, weights: tf.Tensor, warp: tf.Tensor
    ) -> tf.Tensor:
        n = tf.shape(labels)[0]
        lengths = tf.strings.length(encoded)
        head = tf.bitcast(tf.stack([lengths, labels], axis=1), tf.uint8)  # length, label
        body = tf.io.decode_raw(encoded, tf.uint8, fixed_length=tf.reduce_max(lengths))
        parts = [head, tf.bitcast(weights, tf.uint8), tf.bitcast(warp, tf.uint8), body]
        return tf.concat([tf.reshape(p, [n, -1]) for p in parts], axis=1)

    return stream.map(pack)
