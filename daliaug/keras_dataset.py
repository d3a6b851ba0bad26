"""The Keras-facing side: ``make_dataset`` returns a ``tf.data.Dataset`` for ``model.fit``.

With :mod:`daliaug.tf_ops` and :mod:`daliaug.tf_backend`, the only modules that import
TensorFlow. DALI is imported only for the DALI backends: ``backend: tf`` (and ``auto`` without
DALI) runs :mod:`daliaug.tf_backend` on the same streams.

TensorFlow owns the epoch, DALI does the pixels. A DALI pipeline rebuilt for every epoch
(which is what iterating a ``DALIDataset`` again does) would replay the same shuffle and the
same random parameters; so the sample order (reshuffled each epoch), the batch boundaries
(the last batch of an epoch is smaller unless ``drop_remainder``) and the random parameters
(stateless draws, fresh each epoch) come from small ``tf.data`` streams, and DALI decodes and
augments the files they name. Every input stream is built from the same seed, so the
streams stay aligned sample for sample.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from daliaug.config import Config, load_config
from daliaug.device import Device, resolve_backend
from daliaug.epochs import batch_bounds, resolve_seed
from daliaug.errors import BackendError, DataError
from daliaug.plan import Plan
from daliaug.sources import FileSamples
from daliaug.tf_ops import draw_params

_TF_DTYPES = {"float32": tf.float32, "float16": tf.float16, "uint8": tf.uint8}


def element_spec(config: Config, num_classes: int) -> tuple[tf.TensorSpec, tf.TensorSpec]:
    """Shapes and dtypes of one ``(images, labels)`` batch, known from the config alone."""
    h, w = config.image_size
    c = config.channels
    batch = config.batch_size if config.drop_remainder else None
    image_shape = (batch, h, w, c) if config.output.layout == "NHWC" else (batch, c, h, w)
    label_spec = {
        "int": tf.TensorSpec((batch,), tf.int32),
        "categorical": tf.TensorSpec((batch, num_classes), tf.float32),
        "binary": tf.TensorSpec((batch, 1), tf.float32),
    }[config.label_mode]
    return tf.TensorSpec(image_shape, _TF_DTYPES[config.output.dtype]), label_spec


def index_batches(n: int, config: Config, seed: int) -> tf.data.Dataset:
    """Sample indices of one epoch in batches; reshuffled (reproducibly) on every iteration."""
    ds = tf.data.Dataset.range(n)
    if config.shuffle:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    return ds.batch(config.batch_size, drop_remainder=config.drop_remainder)


def param_batches(n: int, config: Config, plan: Plan, seed: int) -> tf.data.Dataset:
    """Random parameters for :func:`index_batches`' batches, drawn afresh every epoch."""
    keys = tf.data.Dataset.random(seed=seed + 1, rerandomize_each_iteration=True).batch(2)
    return tf.data.Dataset.zip(index_batches(n, config, seed), keys).map(
        lambda i, key: draw_params(plan, key, tf.shape(i)[0])
    )


def _input_datasets(config: Config, samples: FileSamples, plan: Plan, seed: int) -> dict[str, Any]:
    from nvidia.dali.plugin import tf as dali_tf

    from daliaug.dali_pipeline import encode_paths

    n = len(samples)
    paths = tf.constant(encode_paths(samples.paths))
    labels = tf.constant(samples.labels)
    inputs = {
        "path": index_batches(n, config, seed).map(lambda i: tf.gather(paths, i)),
        "label": index_batches(n, config, seed).map(lambda i: tf.gather(labels, i)),
    }
    if plan.param_keys:
        inputs["params"] = param_batches(n, config, plan, seed)
    return {
        name: dali_tf.experimental.Input(ds.prefetch(2), batch=True) for name, ds in inputs.items()
    }


def _tf_device(device: Device, config: Config) -> str:
    if device == "cpu":
        return "/cpu:0"
    if not tf.config.list_physical_devices("GPU"):
        raise BackendError(
            "DALI sees a GPU but TensorFlow does not (is the CUDA build of TensorFlow installed?); "
            "use backend: cpu to run DALI on the CPU"
        )
    return f"/gpu:{config.device_id}"


def make_dataset(config: Any, *, samples: FileSamples | None = None) -> tf.data.Dataset:
    """A dataset of ``(images, labels)`` batches augmented by DALI, ready for ``model.fit``.

    One iteration is one epoch: every sample exactly once, in a new order each epoch when
    ``shuffle``; the last batch is smaller unless ``drop_remainder``. Images come out on the
    GPU with ``backend`` gpu (or auto on a GPU machine), else from DALI on the CPU, or from
    TensorFlow ops with ``backend: tf`` (or auto without DALI), with the same element spec.
    """
    config = load_config(config)
    samples = samples if samples is not None else config.source.samples()
    if config.label_mode == "binary" and samples.num_classes != 2:
        raise DataError(
            f"label_mode: binary needs exactly 2 classes, found {samples.num_classes}: "
            f"{samples.class_names[:10]}"
        )
    backend = resolve_backend(config)
    if backend == "tf":
        from daliaug.tf_backend import tf_dataset

        return tf_dataset(config, samples)
    return _dali_dataset(config, samples, backend)


def _dali_dataset(config: Config, samples: FileSamples, device: Device) -> tf.data.Dataset:
    from nvidia.dali.plugin import tf as dali_tf

    from daliaug.dali_pipeline import GraphOptions, build_pipeline

    tf_device = _tf_device(device, config)
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    seed = resolve_seed(config.seed)
    pipe = build_pipeline(
        config,
        GraphOptions(device, samples.num_classes, explicit_params=bool(plan.param_keys)),
    )
    specs = element_spec(config, samples.num_classes)
    with tf.device("/cpu:0"):
        inputs = _input_datasets(config, samples, plan, seed)
    with tf.device(tf_device):
        ds = dali_tf.experimental.DALIDatasetWithInputs(
            pipeline=pipe,
            input_datasets=inputs,
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
