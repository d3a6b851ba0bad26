"""The Keras-facing side: ``make_dataset`` returns a ``tf.data.Dataset`` for ``model.fit``.

With DALI (``backend`` auto, gpu or cpu): TensorFlow owns the epoch, DALI does the pixels. A
DALI pipeline rebuilt for every epoch (which is what iterating a ``DALIDataset`` again does)
would replay the same shuffle and the same random parameters; so the epoch comes from the
``tf.data`` streams of :mod:`daliaug.tf_epoch`, fed to DALI through ``DALIDatasetWithInputs``,
one stream per input, all built from the same seed so they stay aligned sample for sample.
TFRecords are read once, by TensorFlow, and each batch goes to DALI as one packed input: each
image's bytes with its length, label and plan inputs. With ``backend: tf`` (or ``auto`` without
DALI) :mod:`daliaug.tf_backend` computes the same with TensorFlow ops. DALI is imported only
on the DALI path.
"""

from __future__ import annotations

import warnings
from typing import Any

import tensorflow as tf

from daliaug.config import Config, load_config
from daliaug.device import Device, resolve_backend
from daliaug.epochs import batch_bounds, resolve_seed
from daliaug.errors import BackendError, BackendWarning
from daliaug.sources import Samples, prepare_samples
from daliaug.sources.tfrecord import RecordSamples
from daliaug.tf_epoch import (
    check_record_keys,
    element_spec,
    index_batches,
    param_batches,
    record_batches,
    warp_batches,
)
from daliaug.tf_ops import warp_batch


def _flat(warp: dict[str, tf.Tensor], names: tuple[str, ...]) -> tf.Tensor:
    """The plan's inputs ``names`` of a batch as one float32 row per sample (the graph's
    ``warp`` input)."""
    n = tf.shape(warp[names[0]])[0]
    return tf.concat([tf.reshape(warp[name], [n, -1]) for name in names], axis=1)


def _column_inputs(config: Config, samples: Samples, seed: int) -> dict[str, tf.data.Dataset]:
    """One stream per source column (gathered by index), and one of the plan's inputs."""

    def gather(column: tf.Tensor) -> tf.data.Dataset:
        return index_batches(len(samples), config, seed).map(lambda i: tf.gather(column, i))

    feed = config.plan.graph_feed(samples.columns)
    names = config.plan.warp_input_names(**feed)
    warp = warp_batches(config, samples.sizes, seed, **feed)
    columns = {name: gather(tf.constant(column)) for name, column in samples.columns.items()}
    return {**columns, "warp": warp.map(lambda i, inputs: _flat(inputs, names))}


def _packed_records(config: Config, records: RecordSamples, seed: int) -> tf.data.Dataset:
    """Batches of packed rows (see ``dali_pipeline._unpack_record``): image length and label
    (int32 each), the plan inputs (float32), then the encoded image, zero-padded."""
    plan = config.plan
    feed = plan.graph_feed(("record",))
    names = plan.warp_input_names(**feed)

    def pack(batch: tuple[tf.Tensor, tf.Tensor, tf.Tensor], rows: tf.Tensor) -> tf.Tensor:
        encoded, labels, sizes = batch
        n = tf.shape(sizes)[0]
        warp = warp_batch(plan, rows, sizes, **feed)
        lengths = tf.strings.length(encoded)
        head = tf.bitcast(tf.stack([lengths, labels], axis=1), tf.uint8)
        body = tf.io.decode_raw(encoded, tf.uint8, fixed_length=tf.reduce_max(lengths))
        parts = [head, tf.bitcast(_flat(warp, names), tf.uint8), body]
        return tf.concat([tf.reshape(p, [n, -1]) for p in parts], axis=1)

    rows = param_batches(plan, len(records), config, seed).map(lambda i, r: r)
    return tf.data.Dataset.zip(record_batches(config, records, seed), rows).map(pack)


TF_CUDA_FIX = "install TensorFlow's CUDA build: pip install 'tensorflow[and-cuda]==2.21.*'"


def _placement(device: Device, config: Config) -> Device:
    """Where DALI runs for a TensorFlow dataset: on the GPU only if TensorFlow sees one too.

    ``backend: auto`` falls back to DALI on the CPU (with a warning naming the fix) where DALI
    sees a GPU but TensorFlow does not (TensorFlow's CPU-only build); ``backend: gpu`` fails.
    """
    if device == "cpu" or tf.config.list_physical_devices("GPU"):
        return device
    if config.backend == "gpu":
        raise BackendError(
            f"backend: gpu: DALI sees a GPU but TensorFlow does not; {TF_CUDA_FIX} "
            "(or use backend: cpu to run DALI on the CPU)"
        )
    warnings.warn(
        f"DALI sees a GPU but TensorFlow does not, so DALI runs on the CPU; {TF_CUDA_FIX}",
        BackendWarning,
        stacklevel=3,
    )
    return "cpu"


def make_dataset(
    config: Any,
    *,
    samples: Samples | RecordSamples | None = None,
    x: Any = None,
    y: Any = None,
) -> tf.data.Dataset:
    """A dataset of ``(images, labels or masks)`` batches, augmented as the config says.

    ``config`` is anything :func:`~daliaug.config.load_config` takes. For an ``arrays``
    source pass the uint8 images ``x`` (N, H, W, C) and integer labels ``y``; ``samples``
    replaces the config's source altogether.

    One iteration is one epoch: every sample exactly once, in a new order each epoch when
    ``shuffle``; the last batch is smaller unless ``drop_remainder``. Images come out of DALI
    on the GPU with ``backend`` gpu (or auto on a GPU machine), else from DALI on the CPU, or
    from TensorFlow ops with ``backend: tf`` (or auto without DALI), with the same element spec.
    """
    config = load_config(config)
    samples = prepare_samples(config, samples, x, y)
    if isinstance(samples, RecordSamples):
        check_record_keys(samples)
    backend = resolve_backend(config)
    if backend == "tf":
        from daliaug.tf_backend import tf_dataset

        return tf_dataset(config, samples)
    return _dali_dataset(config, samples, backend)


def _dali_dataset(
    config: Config, samples: Samples | RecordSamples, device: Device
) -> tf.data.Dataset:
    from nvidia.dali.plugin import tf as dali_tf

    from daliaug.dali_pipeline import GraphOptions, build_pipeline

    device = _placement(device, config)
    seed = resolve_seed(config.seed)
    with tf.device("/cpu:0"):
        if isinstance(samples, RecordSamples):
            inputs = {"record": _packed_records(config, samples, seed)}
        else:
            inputs = _column_inputs(config, samples, seed)
    options = GraphOptions(device, samples.num_classes, inputs=tuple(inputs))
    specs = element_spec(config, samples.num_classes)
    with tf.device("/cpu:0" if device == "cpu" else f"/gpu:{config.device_id}"):
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
