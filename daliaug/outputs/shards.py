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
from typing import Any

from daliaug.config import Config
from daliaug.epoch import replica_length, resolve_seed, shard_range
from daliaug.errors import ConfigError, DataError
from daliaug.outputs.options import DatasetOptions
from daliaug.sources.sample_set import SampleSet


@dataclass(frozen=True)
class Shards:
    """``count`` shards of ``samples`` (all of them): ``config`` holds the shard's batch and
    the resolved seed, ``options`` the padded length, as every shard shares them."""

    config: Config
    samples: SampleSet
    options: DatasetOptions
    count: int

    @staticmethod
    def split(
        config: Config,
        samples: SampleSet,
        options: DatasetOptions,
        count: int,
        unit: str,
        under: str,
    ) -> Shards:
        """The config's samples over ``count`` shards, checked; errors name a shard's ``unit``
        (``"replica"``) and what splits them (``"a strategy"``)."""
        if config.batch_size % count:
            raise ConfigError(
                f"batch_size: {config.batch_size} (the global batch) does not divide by the "
                f"{count} {unit}s under {under}; use a multiple of {count}"
            )
        if config.source.num_shards != 1:
            raise ConfigError(
                f"source.num_shards: {config.source.num_shards}, but under {under} daliaug "
                f"shards the source itself, one shard per {unit}; leave shard_id and num_shards "
                "out"
            )
        if len(samples) < count:
            raise DataError(
                f"source: {len(samples)} samples for {count} {unit}s; every {unit} needs at least "
                "one"
            )
        per_shard = config.batch_size // count
        config = config.model_copy(
            update={"seed": resolve_seed(config.seed), "batch_size": per_shard}
        )
        length = replica_length(len(samples), count, per_shard, config.drop_remainder)
        options = dataclasses.replace(
            options, length=length, weighted=options.weighs or not config.drop_remainder
        )
        return Shards(config, samples, options, count)

    def shard(self, index: int, **update: Any) -> tuple[Config, SampleSet, DatasetOptions]:
        """Shard ``index``'s config (``update`` applied too), samples and options."""
        source = self.config.source.model_copy(update={"shard_id": index, "num_shards": self.count})
        config = self.config.model_copy(update={"source": source, **update})
        weights = self.options.sample_weights
        if weights is not None:
            weights = weights[slice(*shard_range(len(self.samples), index, self.count))]
        options = dataclasses.replace(self.options, sample_weights=weights)
        return config, self.samples.shard(index, self.count), options
