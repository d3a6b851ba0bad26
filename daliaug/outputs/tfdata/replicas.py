"""One pipeline per replica through ``tf.distribute``: what ``make_dataset(config,
strategy=...)`` returns for ``model.fit`` under a strategy.

The config's ``batch_size`` is the global batch, split evenly over the replicas. Replica ``r``
of ``R`` (numbered across all workers) reads contiguous shard ``r`` of ``R`` of the samples
with its own order and parameters (the shard's stream of the config's one seed), and every
replica runs the same number of batches per epoch (:func:`~daliaug.epoch.replica_length`):
with ``drop_remainder: false`` shorter shards are padded with samples of weight 0 and the
batches are ``(images, targets, weights)``; with ``drop_remainder: true`` every shard leaves out
the same number of samples.

Under ``MirroredStrategy`` each replica's dataset is placed on the replica's own device
(``InputReplicationMode.PER_REPLICA``, as DALI's documentation does it), DALI running on that
GPU. ``MultiWorkerMirroredStrategy`` hands each worker one dataset for all its local replicas,
placed on the host (TensorFlow offers per-replica placement only to ``MirroredStrategy``): the
worker's replica datasets take turns, and DALI on a GPU then copies its batches to the host.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.shards import Shards
from daliaug.prepare import Prepared

if TYPE_CHECKING:
    import tensorflow as tf


def _clocked(dataset: Any, options: DatasetOptions) -> Any:
    """The distributed ``dataset`` with the epoch clock all its replicas share."""
    dataset.epoch_clock = options.clock
    return dataset


def distributed_dataset(
    prepared: Prepared, strategy: Any, options: DatasetOptions
) -> tf.distribute.DistributedDataset | tf.data.Dataset:
    """The distributed dataset of a prepared config over all its samples, for ``strategy``;
    ``options`` as for one dataset (its sample weights, if any, one per sample)."""
    import tensorflow as tf

    from daliaug.outputs.tfdata.dataset import engine_dataset

    config, samples, device = prepared.config, prepared.samples, prepared.device

    replicas = strategy.num_replicas_in_sync
    shards = Shards.split(config, samples, options, replicas, "replica", "a strategy")
    options = shards.options
    devices = tuple(getattr(strategy.extended, "worker_devices", ("/cpu:0",)))

    def replica(shard: int, place: str) -> tf.data.Dataset:
        update: dict[str, Any] = {}
        if device == "gpu" and tf.DeviceSpec.from_string(place).device_type == "GPU":
            from daliaug.outputs.tfdata.dali_dataset import cuda_ordinal

            update["device_id"] = cuda_ordinal(place)
        replica_config, replica_samples, replica_options = shards.shard(shard, **update)
        replica_options = dataclasses.replace(replica_options, place=place)
        return engine_dataset(
            prepared.engine.name, replica_config, replica_samples, device, replica_options
        )

    if isinstance(strategy, tf.distribute.MirroredStrategy):

        def per_replica_dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
            return replica(context.input_pipeline_id, devices[context.input_pipeline_id])

        placement = tf.distribute.InputOptions(
            experimental_place_dataset_on_device=True,
            experimental_fetch_to_device=False,
            experimental_replication_mode=tf.distribute.InputReplicationMode.PER_REPLICA,
        )
        return _clocked(
            strategy.distribute_datasets_from_function(per_replica_dataset, placement), options
        )

    def per_worker_dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        parts = [replica(first + j, "/cpu:0") for j in range(local)]
        if local == 1:
            return parts[0]
        turns = tf.data.Dataset.range(local).repeat()
        return tf.data.Dataset.choose_from_datasets(parts, turns, stop_on_empty_dataset=True)

    return _clocked(strategy.distribute_datasets_from_function(per_worker_dataset), options)
