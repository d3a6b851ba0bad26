"""The Keras-facing side: ``make_dataset`` returns a ``tf.data.Dataset`` for ``model.fit``.

This is the only module (with :mod:`daliaug.tf_ops`) that imports TensorFlow.

TensorFlow owns the epoch, DALI does the pixels. A DALI pipeline rebuilt for every epoch
(which is what iterating a ``DALIDataset`` again does) would replay the same shuffle and the
same random parameters; so the sample order (reshuffled each epoch), the batch boundaries
(the last batch of an epoch is smaller unless ``drop_remainder``) and the random parameters
(stateless draws, fresh each epoch) come from small ``tf.data`` streams, and DALI reads,
decodes and augments what they name. Each input is its own stream, built from the same seed,
so the streams stay aligned sample for sample. The random parameters become decode windows and
warp/colour matrices right here, vectorized over each batch (see :mod:`daliaug.dali_pipeline`
for why). TFRecords are read once, by TensorFlow, and each batch goes to DALI as one packed
input: each image's bytes with its length, label and plan inputs.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from nvidia.dali.plugin import tf as dali_tf

from daliaug.config import Config, load_config
from daliaug.dali_pipeline import GraphOptions, build_pipeline, warp_input_shape
from daliaug.device import Device, resolve_device
from daliaug.epochs import batch_bounds, resolve_seed
from daliaug.errors import BackendError, DataError
from daliaug.plan import Plan
from daliaug.sources import Samples, prepare_samples
from daliaug.sources.segmentation import SegmentationSource
from daliaug.sources.tfrecord import RecordSamples
from daliaug.tf_ops import warp_batch

_TF_DTYPES = {"float32": tf.float32, "float16": tf.float16, "uint8": tf.uint8}


def element_spec(config: Config, num_classes: int) -> tuple[tf.TensorSpec, tf.TensorSpec]:
    """Shapes and dtypes of one ``(images, labels or masks)`` batch, known from the config."""
    h, w = config.image_size
    c = config.channels
    batch = config.batch_size if config.drop_remainder else None
    nhwc = config.output.layout == "NHWC"
    images = tf.TensorSpec(
        (batch, h, w, c) if nhwc else (batch, c, h, w), _TF_DTYPES[config.output.dtype]
    )
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


def _index_batches(n: int, config: Config, seed: int) -> tf.data.Dataset:
    """Sample indices of one epoch in batches; reshuffled (reproducibly) on every iteration."""
    ds = tf.data.Dataset.range(n)
    if config.shuffle:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    return ds.batch(config.batch_size, drop_remainder=config.drop_remainder)


def _warp_streams(
    config: Config, sizes: tf.Tensor, seed: int, *, fuse_roi: bool, masks: bool
) -> dict[str, tf.data.Dataset]:
    """One stream per plan input: fresh parameters each epoch, turned into decode windows and
    matrices for the images' ``sizes``, vectorized over each batch."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    names = plan.warp_input_names(fuse_roi=fuse_roi, masks=masks)
    shapes = {name: warp_input_shape(name, config.channels) for name in names}

    def stream(name: str) -> tf.data.Dataset:
        keys = tf.data.Dataset.random(seed=seed + 1, rerandomize_each_iteration=True).batch(2)
        batches = tf.data.Dataset.zip(_index_batches(len(sizes), config, seed), keys)
        return batches.map(
            lambda i, key: warp_batch(
                plan, key, tf.gather(sizes, i), fuse_roi=fuse_roi, masks=masks, shapes=shapes
            )[name]
        )

    return {name: stream(name) for name in names}


def _column_inputs(config: Config, samples: Samples, seed: int) -> dict[str, tf.data.Dataset]:
    def gather(column: tf.Tensor) -> tf.data.Dataset:
        return _index_batches(len(samples), config, seed).map(lambda i: tf.gather(column, i))

    columns = {name: gather(tf.constant(column)) for name, column in samples.columns.items()}
    warps = _warp_streams(
        config,
        tf.constant(samples.sizes),
        seed,
        fuse_roi="image" not in samples.columns,
        masks="mask_path" in samples.columns,
    )
    return {**columns, **warps}


def _image_size(encoded: tf.Tensor) -> tf.Tensor:
    """(height, width) of an encoded JPEG or PNG, from its header."""
    png_header = tf.io.decode_raw(tf.strings.substr(encoded, 16, 8), tf.uint8)
    # PNG stores width then height, each a big-endian uint32
    big_endian = tf.cast(tf.reshape(png_header, [2, 4]), tf.int32) * [1 << 24, 1 << 16, 1 << 8, 1]
    png_wh = tf.reduce_sum(big_endian, axis=1)
    return tf.cond(
        tf.io.is_jpeg(encoded),
        lambda: tf.image.extract_jpeg_shape(encoded)[:2],
        lambda: tf.stack([png_wh[1], png_wh[0]]),
    )


def _record_batches(config: Config, records: RecordSamples, seed: int) -> tf.data.Dataset:
    """Batches of packed TFRecord rows: image, length, label, plan inputs (``_unpack_record``)."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    names = plan.warp_input_names(fuse_roi=True, masks=False)
    shapes = {name: warp_input_shape(name, config.channels) for name in names}
    total = sum(records.counts)
    start = total * records.shard_id // records.num_shards
    features = {
        records.image_key: tf.io.FixedLenFeature([], tf.string),
        records.label_key: tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(serialized, features)
        encoded = example[records.image_key]
        return encoded, tf.cast(example[records.label_key], tf.int32), _image_size(encoded)

    def pack(batch: tuple[tf.Tensor, tf.Tensor, tf.Tensor], key: tf.Tensor) -> tf.Tensor:
        encoded, labels, sizes = batch
        warp = warp_batch(plan, key, sizes, fuse_roi=True, masks=False, shapes=shapes)
        floats = tf.concat([tf.reshape(warp[n], [tf.shape(sizes)[0], -1]) for n in names], 1)
        lengths = tf.strings.length(encoded)
        head = tf.reshape(tf.bitcast(tf.stack([lengths, labels], axis=1), tf.uint8), [-1, 8])
        body = tf.io.decode_raw(encoded, tf.uint8, fixed_length=tf.reduce_max(lengths))
        packed_floats = tf.reshape(tf.bitcast(floats, tf.uint8), [tf.shape(sizes)[0], -1])
        return tf.concat([head, packed_floats, body], axis=1)

    ds = tf.data.TFRecordDataset(records.files).skip(start).take(len(records))
    if config.shuffle:
        ds = ds.shuffle(min(len(records), 10_000), seed=seed, reshuffle_each_iteration=True)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(config.batch_size, drop_remainder=config.drop_remainder)
    keys = tf.data.Dataset.random(seed=seed + 1, rerandomize_each_iteration=True).batch(2)
    return tf.data.Dataset.zip(ds, keys).map(pack)


def _check_record_keys(records: RecordSamples) -> None:
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


def _tf_device(device: Device, config: Config) -> str:
    if device == "cpu":
        return "/cpu:0"
    if not tf.config.list_physical_devices("GPU"):
        raise BackendError(
            "DALI sees a GPU but TensorFlow does not (is the CUDA build of TensorFlow installed?); "
            "use backend: cpu to run DALI on the CPU"
        )
    return f"/gpu:{config.device_id}"


def make_dataset(
    config: Any,
    *,
    samples: Samples | RecordSamples | None = None,
    x: Any = None,
    y: Any = None,
) -> tf.data.Dataset:
    """A dataset of ``(images, labels or masks)`` batches augmented by DALI, for ``model.fit``.

    ``config`` is anything :func:`~daliaug.config.load_config` takes. For an ``arrays``
    source pass the uint8 images ``x`` (N, H, W, C) and integer labels ``y``; ``samples``
    replaces the config's source altogether.

    One iteration is one epoch: every sample exactly once, in a new order each epoch when
    ``shuffle``; the last batch is smaller unless ``drop_remainder``. Images come out on the
    GPU with ``backend`` gpu (or auto on a GPU machine), else from DALI on the CPU.
    """
    config = load_config(config)
    samples = prepare_samples(config, samples, x, y)
    device = resolve_device(config)
    tf_device = _tf_device(device, config)
    seed = resolve_seed(config.seed)
    with tf.device("/cpu:0"):
        if isinstance(samples, RecordSamples):
            _check_record_keys(samples)
            inputs = {"record": _record_batches(config, samples, seed)}
        else:
            inputs = _column_inputs(config, samples, seed)
    options = GraphOptions(device, samples.num_classes, inputs=tuple(inputs))
    specs = element_spec(config, samples.num_classes)
    with tf.device(tf_device):
        ds = dali_tf.experimental.DALIDatasetWithInputs(
            pipeline=build_pipeline(config, options),
            input_datasets={
                name: dali_tf.experimental.Input(stream.prefetch(2), batch=True)
                for name, stream in inputs.items()
            },
            batch_size=config.batch_size,
            num_threads=config.num_threads,
            device_id=None if device == "cpu" else config.device_id,
            prefetch_queue_depth=config.prefetch,
            output_shapes=tuple(s.shape for s in specs),
            output_dtypes=tuple(s.dtype for s in specs),
        )
    if device == "cpu":
        # Lets Keras show epoch progress from the first epoch, and fails loudly should an epoch
        # ever hold a different number of batches. (GPU-placed DALI datasets take no further
        # tf.data stages.)
        num_batches = len(batch_bounds(len(samples), config.batch_size, config.drop_remainder))
        ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches))
    return ds
