"""One prepared run: the user's config, unchanged, beside what was resolved for it on this host.

:func:`~daliaug.prepare.prepare` makes a :class:`Run` once (the front door of every output and
loader): the engine and device chosen, the seed resolved, the samples listed and checked. A
shard of it (a replica's, a device's, a rank's) is another :class:`Run` made by
:meth:`Run.sharded` and :meth:`Run.on`, never a copy of the config with those facts written
into it: the config stays the document the user wrote, and the run's facts are read from the
run. What the engines compute is the run's :attr:`Run.spec`. Imports no framework.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from daliaug.batch_layout import BatchLayout
from daliaug.engine_names import Choice
from daliaug.engine_spec import EngineSpec
from daliaug.epoch import Epochs, resolve_seed

if TYPE_CHECKING:
    from daliaug.config import Config
    from daliaug.engine_names import Device, EngineName
    from daliaug.sources.sample_set import SampleSet


@dataclass(frozen=True)
class Run:
    """A config prepared to run here: its checked ``samples`` (this shard's), the ``choice``
    of engine and device, the resolved ``seed``, this shard's ``batch_size``, the shard
    (``shard`` of ``shards``, as the epochs number it) and the GPU (``device_id``); ``span``:
    where a shard reads from all the samples (a replica under a strategy, to which the rest
    of an epoch another world began may deal any sample), its own among them."""

    config: Config
    samples: SampleSet
    choice: Choice
    seed: int
    batch_size: int
    shard: int = 0
    shards: int = 1
    device_id: int = 0
    span: tuple[int, int] | None = None

    @staticmethod
    def of(config: Config, samples: SampleSet, choice: Choice, seed: int | None = None) -> Run:
        """The run of ``config`` over ``samples`` (checked) on ``choice``'s engine and device,
        as the config shards and places it; its seed the config's, else ``seed`` (a state's),
        else a fresh one."""
        source = config.source
        return Run(
            config,
            samples,
            choice,
            resolve_seed(config.seed if config.seed is not None else seed),
            config.batch_size,
            source.shard_id,
            source.num_shards,
            config.device_id,
        )

    @property
    def engine(self) -> EngineName:
        """The engine's name."""
        return self.choice.engine

    @property
    def device(self) -> Device:
        """Where the engine runs."""
        return self.choice.device

    @cached_property
    def spec(self) -> EngineSpec:
        """What the engine computes for this run (:class:`~daliaug.engine_spec.EngineSpec`):
        the engines' graphs read this, never the config."""
        return EngineSpec.of(self.config, self.device, self.device_id, self.seed, self.batch_size)

    def epochs(self, length: int | None = None) -> Epochs:
        """This shard's epochs: its order, batches and parameter rows (``length``: positions
        per epoch where shards are padded or cut to equal batch counts)."""
        config = self.config
        start, stop = self.span or (0, len(self.samples))
        return Epochs(
            stop - start,
            self.batch_size,
            config.drop_remainder,
            config.shuffle,
            self.seed,
            self.shard,
            length,
            start,
        )

    def layout(self, weighted: bool = False) -> BatchLayout:
        """What this run's batches hold, in order (with ``weights`` where ``weighted``)."""
        config = self.config
        return BatchLayout.of(self.samples, config.label_mode, config.max_boxes, weighted)

    def sharded(self, samples: SampleSet, shard: int, shards: int) -> Run:
        """Shard ``shard`` of ``shards``, over its ``samples``."""
        return dataclasses.replace(self, samples=samples, shard=shard, shards=shards)

    def on(self, device_id: int) -> Run:
        """This run on GPU ``device_id``."""
        return dataclasses.replace(self, device_id=device_id)

    def with_samples(self, samples: SampleSet) -> Run:
        """This run over other ``samples`` (the rest of an epoch another world began)."""
        return dataclasses.replace(self, samples=samples)
