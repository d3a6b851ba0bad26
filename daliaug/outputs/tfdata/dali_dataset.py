"""The DALI backend's dataset for ``model.fit``: the DALI graph fed by the epoch streams
through ``DALIDatasetWithInputs``. Imports TensorFlow (the rest of the DALI backend does not).

A DALI pipeline rebuilt for every epoch (which is what iterating a ``DALIDataset`` again does)
would replay the same order and the same random parameters, so the epochs come from
:mod:`daliaug.outputs.tfdata.streams`, one stream per graph input, built on the CPU and placed
on the dataset's device as the plugin requires.
"""

from __future__ import annotations

import os
import warnings
from functools import partial

import tensorflow as tf
from nvidia.dali.plugin import tf as dali_tf

from daliaug.cuda import GROWTH_VARIABLE
from daliaug.engines.dali.pipeline import RESIZES, feed_form, named_pipeline
from daliaug.engines.feed import EpochFeed, RecordLayout
from daliaug.engines.select import TF_CUDA_FIX
from daliaug.engines.tf.records import packed, read_records
from daliaug.epoch import EpochClock, Epochs
from daliaug.errors import BackendError, BackendWarning, user_stacklevel
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions
from daliaug.outputs.tfdata.faults import named_faults
from daliaug.outputs.tfdata.streams import (
    column_stream,
    counted,
    epoch_length,
    feed_stream,
    in_flight,
    nested,
    report_length,
    signature,
)
from daliaug.run import Run


def tf_gpu(device_id: int) -> str:
    """TensorFlow's name for the GPU that DALI calls ``device_id`` (the CUDA ordinal, as in
    ``CUDA_VISIBLE_DEVICES`` order): its place among the GPUs TensorFlow may use
    (``tf.config.set_visible_devices``), counting the logical devices each is split into."""
    physical = tf.config.list_physical_devices("GPU")
    if device_id >= len(physical):
        raise BackendError(
            f"device_id: {device_id}, but TensorFlow sees {len(physical)} GPU(s) "
            "(GPU numbers follow CUDA_VISIBLE_DEVICES); use a device_id below that"
        )
    logical = 0
    for gpu in tf.config.get_visible_devices("GPU"):
        if gpu.name == physical[device_id].name:
            return f"/gpu:{logical}"
        logical += len(tf.config.get_logical_device_configuration(gpu) or [gpu])
    raise BackendError(
        f"device_id: GPU {device_id} is hidden from TensorFlow (tf.config.set_visible_devices); "
        "make it visible or pick a visible one"
    )


def cuda_ordinal(device: str) -> int:
    """DALI's ``device_id`` for TensorFlow's GPU ``device`` (a replica's device): the inverse
    of :func:`tf_gpu`."""
    index = tf.DeviceSpec.from_string(device).device_index or 0
    physical = tf.config.list_physical_devices("GPU")
    logical = 0
    for gpu in tf.config.get_visible_devices("GPU"):
        logical += len(tf.config.get_logical_device_configuration(gpu) or [gpu])
        if index < logical:
            return next(i for i, p in enumerate(physical) if p.name == gpu.name)
    raise BackendError(f"no GPU {device} among TensorFlow's visible GPUs")


def memory_policy() -> None:
    """Make sure TensorFlow leaves DALI GPU memory (see :mod:`daliaug.cuda`). Nothing to do
    where ``TF_FORCE_GPU_ALLOW_GROWTH`` is set: by ``import daliaug`` before TensorFlow's
    runtime started, or by the user. Otherwise (TensorFlow started before ``import daliaug``,
    or no CUDA driver was found then) memory growth is turned on with ``tf.config``, unless the
    user decided (memory growth or a memory limit set); once the runtime has started that is
    too late, and a warning says what to do."""
    if GROWTH_VARIABLE in os.environ:
        return
    for gpu in tf.config.list_physical_devices("GPU"):
        decided = tf.config.get_logical_device_configuration(gpu) is not None
        if decided or tf.config.experimental.get_memory_growth(gpu):
            continue
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:
            warnings.warn(
                "TensorFlow's runtime started before daliaug could turn on its GPU memory "
                "growth, so TensorFlow may hold nearly all GPU memory and DALI run out of it; "
                "import daliaug before anything starts TensorFlow (a model, a tf.distribute "
                f"strategy, a tf op), or set {GROWTH_VARIABLE}=true before Python starts",
                BackendWarning,
                stacklevel=user_stacklevel(),
            )
            return


def on_first_batch(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` whose iterator is made when the first batch is asked for, not when an
    iterator of the result is made.

    DALI's iterator starts its pipeline as soon as it is made (``Initialize`` prefetches
    ``prefetch`` batches), so it reads its input streams at once and each claims an epoch from
    the clock. ``model.fit`` makes iterators it never reads: where the batches per epoch are
    known, Keras 3's ``EpochIterator`` makes the next epoch's iterator after an epoch's last
    step, then makes another at the next epoch's start (it keeps one only with
    ``steps_per_epoch``), so a plain ``fit`` would read data epochs 0, 2, 4... A ``flat_map``
    makes its inner iterator at its first ``GetNext``, as ``tf.data``'s own datasets (the
    streams of :func:`~daliaug.outputs.tfdata.streams.counted`) start their work, so an
    iterator never read claims no epoch."""
    return tf.data.Dataset.from_tensors(0).flat_map(lambda _: dataset)


def _inputs(
    run: Run, options: DatasetOptions, clock: EpochClock
) -> tuple[dict[str, tf.data.Dataset], Epochs, EpochFeed | None]:
    """One CPU stream per graph input of the run's DALI graph, their epochs numbered by
    ``clock``, and the feed that makes them (None for TFRecords, which ``tf.data`` reads)."""
    spec, samples, device = run.spec, run.samples, run.device
    epochs = options.epochs(run)
    weights = options.weights(samples.num_classes)

    read = read_records(spec, samples, epochs, RESIZES, partial(counted, clock=clock), weights)
    if read is not None:
        stream, layout = read
        return {"record": packed(stream, RecordLayout(layout))}, epochs, None
    per_sample = options.per_sample(samples)
    feed = EpochFeed(
        spec,
        samples,
        resizes=RESIZES,
        form=feed_form(spec.plan, samples.column_names, device),
        epochs=epochs,
        weights=per_sample,
        recent=in_flight(run),
    )
    streams = {
        name: column_stream(feed, name, clock)
        if feed.gathers(name)
        else feed_stream(feed, name, clock, check_files=feed.checks_files(name))
        for name in feed.inputs
    }
    return streams, epochs, feed


def dali_dataset(run: Run, options: DatasetOptions = DEFAULT_OPTIONS) -> tf.data.Dataset:
    """``(images, targets[, weights])`` batches from the run's DALI graph, one epoch per
    iteration (see :class:`DatasetOptions`), placed on ``options.place``: by default the
    host CPU for DALI on the CPU and DALI's GPU for DALI on the GPU. The number of batches per
    epoch is the dataset's ``batches_per_epoch`` and its ``cardinality()``
    (:func:`report_length`). On the host, an iterator reads its epoch's streams from its first
    batch (:func:`on_first_batch`); a GPU-placed one from the moment it is made."""
    device = run.device
    if device == "gpu":
        memory_policy()  # first: what follows starts TensorFlow's runtime
        if not tf.config.list_physical_devices("GPU"):
            raise BackendError(f"DALI on the GPU needs TensorFlow to see it too; {TF_CUDA_FIX}")
    place = options.place or ("/cpu:0" if device == "cpu" else tf_gpu(run.device_id))
    on_gpu = tf.DeviceSpec.from_string(place).device_type == "GPU"
    clock = options.epoch_clock()
    with tf.device("/cpu:0" if on_gpu else place):
        inputs, epochs, feed = _inputs(run, options, clock)
        inputs = {name: stream.prefetch(2) for name, stream in inputs.items()}
    if on_gpu:
        copy = tf.data.experimental.copy_to_device(place)
        inputs = {name: stream.apply(copy) for name, stream in inputs.items()}
    weighted = options.weighs
    layout, specs = signature(run, weighted)
    # inputs copied to the GPU reach DALI there where only GPU operators read them
    pipeline = named_pipeline(run, weighted, on_gpu, options.gpus)
    with tf.device(place):
        ds = dali_tf.experimental.DALIDatasetWithInputs(
            pipeline=pipeline,
            input_datasets={
                name: dali_tf.experimental.Input(stream, batch=True)
                for name, stream in inputs.items()
            },
            batch_size=run.batch_size,
            num_threads=pipeline.num_threads,
            device_id=None if device == "cpu" else run.device_id,
            prefetch_queue_depth=run.spec.prefetch,
            output_shapes=tuple(s.shape for s in specs),
            output_dtypes=tuple(s.dtype for s in specs),
            # DALI on a GPU with the dataset on the host (a replica under a strategy that
            # only places datasets on hosts): DALI copies its outputs to the host.
            fail_on_device_mismatch=on_gpu or device == "cpu",
        )
    if on_gpu:
        ds = nested(ds, layout)
        report_length(ds, len(epochs))
    else:
        ds = epoch_length(nested(on_first_batch(ds), layout), len(epochs), options.resumes)
    ds.batches_per_epoch = len(epochs)
    ds.epoch_clock = clock
    return named_faults(ds, feed)
