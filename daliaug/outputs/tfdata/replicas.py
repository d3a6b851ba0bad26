"""One pipeline per replica through ``tf.distribute``: what ``make_dataset(config,
strategy=...)`` returns for ``model.fit`` under a strategy.

The config's ``batch_size`` is the global batch, split evenly over the replicas. Replica ``r``
of ``R`` (numbered across all workers) reads contiguous shard ``r`` of ``R`` of the samples
with its own order and parameters (the shard's stream of the config's one seed), and every
replica runs the same number of batches per epoch (:func:`~daliaug.epoch.replica_length`).
Each replica's dataset of column sources holds all the samples (its own their span; the host
arrays behind them are one tensor all replicas capture) and reads the epoch clock they share
through its own
:class:`~daliaug.epoch.ShardClock`, so that a state another world took deals the rest of its
epoch out over the replicas (:mod:`daliaug.resume`);
with ``drop_remainder: false`` shorter shards are padded with samples of weight 0 and the
batches are ``(images, targets, weights)``; with ``drop_remainder: true`` every shard leaves out
the same number of samples.

Under ``MirroredStrategy`` each replica gets its own dataset
(``InputReplicationMode.PER_REPLICA``). With DALI on the GPU it is placed on the replica's own
GPU, DALI running there (as DALI's documentation does it); otherwise (DALI on the CPU, the
TensorFlow backend) it stays on the host and TensorFlow copies its batches to the replica's
device. ``MultiWorkerMirroredStrategy`` hands each worker one dataset for all its local
replicas, placed on the host (TensorFlow offers per-replica placement only to
``MirroredStrategy``): the worker's replica datasets take turns, each local replica's DALI runs
on that replica's own GPU and copies its batches to the host. One process per GPU (a worker
per GPU) avoids that copy.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from daliaug.engines.select import Device
from daliaug.epoch import ShardClock
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.shards import Shards
from daliaug.run import Run
from daliaug.sources.base import Samples

if TYPE_CHECKING:
    import tensorflow as tf


def _clocked(dataset: Any, options: DatasetOptions) -> Any:
    """The distributed ``dataset`` with the epoch clock all its replicas share."""
    dataset.epoch_clock = options.clock
    return dataset


def distributed_dataset(
    run: Run, strategy: Any, options: DatasetOptions
) -> tf.distribute.DistributedDataset | tf.data.Dataset:
    """The distributed dataset of a prepared run over all its samples, for ``strategy``;
    ``options`` as for one dataset (its sample weights, if any, one per sample)."""
    import tensorflow as tf

    from daliaug.outputs.bridges import engine_dataset

    device, replicas = run.device, strategy.num_replicas_in_sync
    shards = Shards.split(run, options, replicas, "replica", "a strategy")
    options = shards.options
    devices = tuple(getattr(strategy.extended, "worker_devices", ("/cpu:0",)))
    columns = isinstance(run.samples, Samples)  # (TFRecords: each replica reads its own files)
    # this process's GPU pipelines (one per local replica GPU) share its cores
    gpus = max(1, sum(dali_gpu(device, d) is not None for d in devices))

    def replica(shard: int, replica_device: str, on_device: bool) -> tf.data.Dataset:
        """Replica ``shard``'s dataset, for the replica on ``replica_device``: DALI on that
        replica's GPU, the dataset there too if ``on_device``, else on the host."""
        device_id = dali_gpu(device, replica_device)
        replica_run, replica_options = shards.shard(shard, whole=columns)
        if device_id is not None:
            replica_run = replica_run.on(device_id)
        place = replica_device if on_device and device_id is not None else "/cpu:0"
        clock = ShardClock(options.epoch_clock(), shard)
        replica_options = dataclasses.replace(replica_options, place=place, gpus=gpus, clock=clock)
        return engine_dataset(replica_run, replica_options)

    if isinstance(strategy, tf.distribute.MirroredStrategy):
        on_device = all(dali_gpu(device, d) is not None for d in devices)

        def per_replica_dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
            index = context.input_pipeline_id
            return replica(index, devices[index], on_device)

        return _clocked(
            strategy.distribute_datasets_from_function(
                per_replica_dataset, replica_input_options(on_device)
            ),
            options,
        )

    def per_worker_dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        parts = [replica(first + j, devices[j % len(devices)], False) for j in range(local)]
        if local == 1:
            return parts[0]
        turns = tf.data.Dataset.range(local).repeat()
        return tf.data.Dataset.choose_from_datasets(parts, turns, stop_on_empty_dataset=True)

    return _clocked(strategy.distribute_datasets_from_function(per_worker_dataset), options)


def dali_gpu(device: Device, replica_device: str) -> int | None:
    """The GPU (CUDA ordinal) DALI runs on for a replica on ``replica_device``: the replica's
    own GPU for DALI on the GPU; ``None`` for DALI on the CPU, the TensorFlow backend or a
    replica that is not on a GPU."""
    import tensorflow as tf

    if device != "gpu" or tf.DeviceSpec.from_string(replica_device).device_type != "GPU":
        return None
    from daliaug.outputs.tfdata.dali_dataset import cuda_ordinal

    return cuda_ordinal(replica_device)


def replica_input_options(on_device: bool) -> tf.distribute.InputOptions:
    """``MirroredStrategy``'s input options: one dataset per replica, placed on the replica's
    device (``on_device``: DALI on that GPU, whose batches are already there) or on the host,
    whose batches TensorFlow then prefetches to the replica's device."""
    import tensorflow as tf

    return tf.distribute.InputOptions(
        experimental_place_dataset_on_device=on_device,
        experimental_fetch_to_device=not on_device,
        experimental_replication_mode=tf.distribute.InputReplicationMode.PER_REPLICA,
    )
