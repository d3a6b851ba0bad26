"""The epochs of :mod:`daliaug.epoch` as ``tf.data`` streams, for every backend's dataset.

A ``tf.data`` dataset is iterated once per epoch (``model.fit`` makes a new iterator each
epoch), so each stream asks the dataset's :class:`~daliaug.epoch.EpochClock` which epoch a new
iteration is. Streams of one dataset are built from one :class:`EpochFeed` (one seed) and one
clock, so they stay aligned sample for sample. Column sources come from the host
(:class:`EpochFeed`, through ``Dataset.from_generator``: one Python call per batch, arrays of
indices and per-sample numbers); TFRecords are read by ``tf.data`` in a per-epoch order and the
plan is evaluated in the TensorFlow graph, where their sizes are known.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from daliaug.config import Config
from daliaug.engines.feed import INPUTS, EpochFeed, WarpLayout
from daliaug.engines.tf.math import TF_ARRAYS
from daliaug.epoch import EpochClock, Epochs, shard_range
from daliaug.errors import DataError
from daliaug.sources.segmentation import SegmentationSource
from daliaug.sources.tfrecord import RecordSamples

CHUNK = 8192
"""Samples per Python call of a feed stream (index arrays and per-sample numbers are small)."""

RECORD_BUFFER = 10_000
"""Records a TFRecord stream shuffles at a time: consecutive blocks of this many records of the
shard are each permuted, by a permutation fixed by the seed, the shard, the epoch and the
block."""

_TF_DTYPES = {"float32": tf.float32, "float16": tf.float16, "uint8": tf.uint8}


def element_spec(
    config: Config,
    num_classes: int,
    weighted: bool = False,
    target_shape: tuple[int, ...] = (),
) -> tuple[tf.TensorSpec, ...]:
    """Shapes and dtypes of one ``(images, targets[, weights])`` batch, known from the config
    (``target_shape``: the per-sample shape of ``raw`` targets); with ``label_mode: none``
    ``(images,)`` (DALI's datasets yield tuples; Keras unpacks a 1-tuple as the inputs)."""
    h, w = config.image_size
    c = config.channels
    batch = config.batch_size if config.drop_remainder else None
    nhwc = config.output.layout == "NHWC"
    image_shape = (batch, h, w, c) if nhwc else (batch, c, h, w)
    images = tf.TensorSpec(image_shape, _TF_DTYPES[config.output.dtype])
    weights = (tf.TensorSpec((batch,), tf.float32),) if weighted else ()
    source = config.source
    if isinstance(source, SegmentationSource):
        if source.mask_output == "one_hot":
            shape = (batch, h, w, num_classes) if nhwc else (batch, num_classes, h, w)
            return images, tf.TensorSpec(shape, tf.float32), *weights
        return images, tf.TensorSpec((batch, h, w), tf.as_dtype(source.mask_dtype)), *weights
    if config.label_mode == "none":
        return (images,)
    targets = {
        "int": tf.TensorSpec((batch,), tf.int32),
        "categorical": tf.TensorSpec((batch, num_classes), tf.float32),
        "binary": tf.TensorSpec((batch, 1), tf.float32),
        "float": tf.TensorSpec((batch,), tf.float32),
        "raw": tf.TensorSpec((batch, *target_shape), tf.float32),
        "input": images,
    }[config.label_mode]
    return images, targets, *weights


def counted(
    epoch_batches: Callable[[int], Iterator],
    signature: tf.TensorSpec | tuple[tf.TensorSpec, ...],
    clock: EpochClock,
) -> tf.data.Dataset:
    """A dataset whose iterations yield ``epoch_batches(e)`` for the epochs ``e`` the clock
    gives this stream."""
    stream = object()

    def generate() -> Iterator:
        if _CALLS.exiting:
            return
        items = epoch_batches(clock.next(stream))
        while True:
            with _CALLS:
                item = _END if _CALLS.exiting else next(items, _END)
            if item is _END:
                return
            yield item

    return tf.data.Dataset.from_generator(generate, output_signature=signature)


class _StreamCalls:
    """The streams' Python calls in progress, and whether the interpreter is exiting.

    A ``tf.data`` iterator still being read when a script ends is destroyed during the
    interpreter's teardown, which holds the GIL while the iterator waits for its stream's call
    in flight; that call needs the GIL, and the process would hang. So at exit every stream is
    ended first (:func:`_end_streams`): calls in progress finish, later ones end the stream
    without running."""

    def __init__(self) -> None:
        self.exiting = False
        self.running = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.running += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.running -= 1


_CALLS = _StreamCalls()
_END = object()


@atexit.register
def _end_streams(timeout: float = 5.0) -> None:
    """Ends every stream before Python tears its objects down (see :class:`_StreamCalls`):
    calls already waiting for the GIL get it while this sleeps, and those running finish."""
    _CALLS.exiting = True
    deadline = time.monotonic() + timeout
    time.sleep(0.02)
    while _CALLS.running and time.monotonic() < deadline:
        time.sleep(0.01)


def _spec(feed: EpochFeed, name: str) -> tf.TensorSpec:
    """The batch ``TensorSpec`` of a feed's ``name`` (an input, ``index`` or ``params``)."""
    if name == "index":
        return tf.TensorSpec((None,), tf.int64)
    if name == "params":
        return tf.TensorSpec((None, len(feed.plan.param_keys)), tf.float32)
    if name == "warp":
        return tf.TensorSpec((None, feed.layout.width), tf.float32)
    if name == "weight":
        return tf.TensorSpec((None,), tf.float32)
    column = feed.samples.columns[name]
    spec = INPUTS[name]
    shape = column.shape[1:] if spec.ndim < 0 else column.shape[1 : 1 + spec.ndim]
    return tf.TensorSpec((None, *shape), tf.as_dtype(spec.dtype))


def feed_stream(
    feed: EpochFeed,
    names: str | Sequence[str],
    clock: EpochClock,
    check_files: bool = False,
) -> tf.data.Dataset:
    """Batches of ``names`` (see :meth:`EpochFeed.batches`, also for ``check_files``), one
    epoch per iteration: tuples, or plain tensors for a single name given as a string. Python
    makes them a chunk of batches at a time (:data:`CHUNK` samples), which ``tf.data`` cuts
    back into batches; a daliaug error in Python reaches the iterator with its message."""
    single = isinstance(names, str)
    wanted = (names,) if single else tuple(names)

    def epoch_chunks(epoch: int) -> Iterator:
        for chunk in feed.chunks(epoch, wanted, CHUNK, check_files):
            yield chunk[wanted[0]] if single else tuple(chunk[name] for name in wanted)

    specs = tuple(_spec(feed, name) for name in wanted)
    chunks = counted(epoch_chunks, specs[0] if single else specs, clock)
    return chunks.rebatch(feed.epochs.batch_size)


def column_stream(feed: EpochFeed, name: str, clock: EpochClock) -> tf.data.Dataset:
    """Batches of the source column ``name``, gathered in the graph from the epoch's sample
    indices."""
    column = tf.constant(feed.samples.columns[name])
    indices = feed_stream(feed, "index", clock, check_files=name in feed.samples.files)
    return indices.map(lambda index: tf.gather(column, index))


def image_size(encoded: tf.Tensor) -> tf.Tensor:
    """``(height, width)`` (int32) of an encoded JPEG or PNG, read from its header."""

    def png() -> tf.Tensor:
        width_height = tf.io.decode_raw(tf.strings.substr(encoded, 16, 8), tf.int32, False)
        return tf.reverse(width_height, [0])

    return tf.cond(tf.io.is_jpeg(encoded), lambda: tf.image.extract_jpeg_shape(encoded)[:2], png)


def record_stream(
    config: Config,
    records: RecordSamples,
    epochs: Epochs,
    layout: WarpLayout,
    clock: EpochClock,
    weights: np.ndarray | None = None,
) -> tf.data.Dataset:
    """Batches of ``(encoded images, labels, weights, warp)`` from the TFRecords: this shard's
    contiguous range, shuffled per epoch in blocks of :data:`RECORD_BUFFER` records, in an
    order fixed by the seed, the shard and the epoch, and cut or padded (weight 0) to the
    epoch's positions; ``weights`` from the class ``weights`` (1 without); ``warp``
    (``layout``) evaluated in the graph from the epoch's parameter rows."""
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

    def epoch_records(epoch: tf.Tensor) -> tf.data.Dataset:
        ds = tf.data.TFRecordDataset(records.files).skip(start).take(len(records))
        if config.shuffle:
            key = tf.stack([tf.constant(int(base >> 1), tf.int64), epoch])
            blocks = ds.batch(window).enumerate()
            ds = blocks.map(lambda i, block: shuffled(key, i, block)).unbatch()
        ds = ds.repeat().take(epochs.positions).enumerate()
        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.batch(config.batch_size, drop_remainder=config.drop_remainder)

    def epoch_number(epoch: int) -> Iterator[np.int64]:
        yield np.int64(epoch)

    numbers = counted(epoch_number, tf.TensorSpec((), tf.int64), clock)
    batches = numbers.flat_map(epoch_records)
    rows_spec = tf.TensorSpec((None, len(config.plan.param_keys)), tf.float32)
    rows = counted(lambda epoch: epochs.parameters(config.plan, epoch), rows_spec, clock)

    def with_warp(batch: tuple[tf.Tensor, ...], r: tf.Tensor) -> tuple:
        encoded, labels, weight, sizes = batch
        return encoded, labels, weight, layout.evaluate(r, sizes, TF_ARRAYS)

    return tf.data.Dataset.zip(batches, rows).map(with_warp)


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
