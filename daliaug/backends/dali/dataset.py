"""The DALI backend's dataset for ``model.fit``: the DALI graph fed by the epoch streams
through ``DALIDatasetWithInputs``. Imports TensorFlow (the rest of the DALI backend does not).

A DALI pipeline rebuilt for every epoch (which is what iterating a ``DALIDataset`` again does)
would replay the same order and the same random parameters, so the epochs come from
:mod:`daliaug.backends.streams`, one stream per graph input, built on the CPU and placed on the
dataset's device as the plugin requires.
"""

from __future__ import annotations

import warnings

import tensorflow as tf
from nvidia.dali.plugin import tf as dali_tf

from daliaug.backends.dali.pipeline import RESIZES, GraphOptions, build_pipeline
from daliaug.backends.feed import EpochFeed, RecordLayout, WarpLayout
from daliaug.backends.select import Device
from daliaug.backends.streams import element_spec, feed_stream, record_stream
from daliaug.config import Config
from daliaug.epoch import Epochs
from daliaug.errors import BackendError, BackendWarning
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples

TF_CUDA_FIX = "install TensorFlow's CUDA build: pip install 'tensorflow[and-cuda]==2.21.*'"


def placement(device: Device, config: Config) -> Device:
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
        stacklevel=4,
    )
    return "cpu"


def _packed(stream: tf.data.Dataset, layout: RecordLayout) -> tf.data.Dataset:
    """``(encoded, labels, warp)`` batches packed into rows of :class:`RecordLayout`."""

    def pack(encoded: tf.Tensor, labels: tf.Tensor, warp: tf.Tensor) -> tf.Tensor:
        n = tf.shape(labels)[0]
        lengths = tf.strings.length(encoded)
        head = tf.bitcast(tf.stack([lengths, labels], axis=1), tf.uint8)  # length, label
        body = tf.io.decode_raw(encoded, tf.uint8, fixed_length=tf.reduce_max(lengths))
        parts = [head, tf.bitcast(warp, tf.uint8), body]
        return tf.concat([tf.reshape(p, [n, -1]) for p in parts], axis=1)

    return stream.map(pack)


def _inputs(
    config: Config, samples: Samples | RecordSamples, initial_epoch: int
) -> tuple[dict[str, tf.data.Dataset], Epochs]:
    """One CPU stream per graph input, all counting epochs from ``initial_epoch``."""
    if isinstance(samples, RecordSamples):
        layout = WarpLayout.of(config.plan, ("record",), RESIZES)
        epochs = Epochs.of(config, len(samples))
        stream = record_stream(config, samples, epochs, layout, initial_epoch)
        return {"record": _packed(stream, RecordLayout(layout))}, epochs
    feed = EpochFeed(config, samples, resizes=RESIZES)
    return {name: feed_stream(feed, name, initial_epoch) for name in feed.inputs}, feed.epochs


def dali_dataset(
    config: Config, samples: Samples | RecordSamples, device: Device, initial_epoch: int = 0
) -> tf.data.Dataset:
    """``(images, targets)`` batches from the DALI graph on ``device``, one epoch per
    iteration (the n-th is epoch ``initial_epoch + n``)."""
    device = placement(device, config)
    with tf.device("/cpu:0"):
        inputs, epochs = _inputs(config, samples, initial_epoch)
        inputs = {name: stream.prefetch(2) for name, stream in inputs.items()}
    place = "/cpu:0" if device == "cpu" else f"/gpu:{config.device_id}"
    if device == "gpu":
        copy = tf.data.experimental.copy_to_device(place)
        inputs = {name: stream.apply(copy) for name, stream in inputs.items()}
    options = GraphOptions(device, samples.num_classes, inputs=tuple(inputs))
    specs = element_spec(config, samples.num_classes)
    with tf.device(place):
        ds = dali_tf.experimental.DALIDatasetWithInputs(
            pipeline=build_pipeline(config, options),
            input_datasets={
                name: dali_tf.experimental.Input(stream, batch=True)
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
        ds = ds.apply(tf.data.experimental.assert_cardinality(len(epochs)))
    return ds
