"""A source split into contiguous shards that all run the same number of batches per epoch:
one per replica of a ``tf.distribute`` strategy, per device of a ``keras.distribution`` or per
``torch.distributed`` rank. Imports no framework.

The config's ``batch_size`` is the global batch, split evenly over the shards. Shard ``s`` of
``S`` reads its contiguous part of the samples with its own order and parameters (the shard's
stream of the config's one seed), and every shard runs :func:`~daliaug.epoch.replica_length`
positions per epoch: with ``drop_remainder: false`` shorter shards are padded with samples of
weight 0 and the batches are ``(images, targets, weights)``; with ``drop_remainder: true``
every shard leaves out the same number of samples.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from daliaug.epoch import replica_length, shard_range
from daliaug.errors import ConfigError, DataError
from daliaug.outputs.options import DatasetOptions
from daliaug.run import Run


@dataclass(frozen=True)
class Shards:
    """``count`` shards of a run (all its samples): ``run`` holds each shard's batch and the
    resolved seed, ``options`` the padded length, as every shard shares them."""

    run: Run
    options: DatasetOptions
    count: int

    @staticmethod
    def split(run: Run, options: DatasetOptions, count: int, unit: str, under: str) -> Shards:
        """The run's samples over ``count`` shards, checked; errors name a shard's ``unit``
        (``"replica"``) and what splits them (``"a strategy"``)."""
        config, samples = run.config, run.samples
        if run.batch_size % count:
            raise ConfigError(
                f"batch_size: {run.batch_size} (the global batch) does not divide by the "
                f"{count} {unit}s under {under}; use a multiple of {count}"
            )
        if run.shards != 1:
            raise ConfigError(
                f"source.num_shards: {run.shards}, but under {under} daliaug shards the source "
                f"itself, one shard per {unit}; leave shard_id and num_shards out"
            )
        if len(samples) < count:
            raise DataError(
                f"source: {len(samples)} samples for {count} {unit}s; every {unit} needs at least "
                "one"
            )
        per_shard = run.batch_size // count
        length = replica_length(len(samples), count, per_shard, config.drop_remainder)
        options = dataclasses.replace(
            options, length=length, weighted=options.weighs or not config.drop_remainder
        )
        return Shards(dataclasses.replace(run, batch_size=per_shard), options, count)

    def shard(self, index: int, whole: bool = False) -> tuple[Run, DatasetOptions]:
        """Shard ``index``'s run and options; ``whole``: over all the samples, its own their
        ``span`` (so that it can run its part of the rest of an epoch another world began)."""
        run, count = self.run, self.count
        span = shard_range(len(run.samples), index, count)
        if whole:
            sharded = dataclasses.replace(run.sharded(run.samples, index, count), span=span)
            return sharded, self.options
        weights = self.options.sample_weights
        if weights is not None:
            weights = weights[slice(*span)]
        options = dataclasses.replace(self.options, sample_weights=weights)
        return run.sharded(run.samples.shard(index, count), index, count), options
