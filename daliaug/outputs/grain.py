"""The Grain output: ``make_dataset(..., framework="grain")``, the JAX output's batches
(:mod:`daliaug.outputs.jax`: ``jax.Array``\\ s laid out over ``keras.distribution``'s devices)
as a ``grain.IterDataset`` (the ``grain`` extra), which Keras' ``fit`` takes on the JAX backend
(its ``GrainDatasetAdapter``, Keras 3.11 on) and whose iterators Grain's checkpointing saves
(``get_state`` / ``set_state``, JSON, what orbax's Grain handlers store).

Every ``iter()`` is one epoch, the epoch the dataset is at (as every pass over the JAX output),
so each epoch of ``fit`` gets its own order and parameters; an iterator left unfinished (Keras
reads two batches of one to learn the element spec) does not count. Keras cannot ask a Grain
dataset its length, so it learns it at the epoch's end and warns that the input "ran out of
data"; ``ds.repeat()``
(:meth:`GrainBatches.repeat`) makes iterators that run epoch after epoch, for ``fit`` with
``steps_per_epoch=len(ds)`` (one iterator for the whole run, no warning) and for loops of one's
own. An iterator's state is
:class:`Position`: the epoch and the next batch it yields, the batches per epoch and the seed
it was saved under, and ``stream``, the stream's :class:`~daliaug.resume.State` there (what
every output's state is: the positions the world has consumed, the samples' and the config's
fingerprints; over TFRecords read by DALI's own reader on the CPU, the reader's checkpoints).
Restoring it into an iterator of the same config's dataset (the ``seed`` set in the config: a
seedless config draws a new one per dataset, and the restore refuses it) makes it yield the
rest of that epoch, byte for byte the batches the saved one would have given; into a dataset
of another number of processes or devices, the rest of that epoch dealt out over this world
(:class:`~daliaug.resume.Rest`), each sample once, then the next epochs whole. The restore
seeks (:meth:`~daliaug.outputs.batches.Batches.seek`, the seek behind :mod:`daliaug.resume`'s
states): no batch before the restored one is made or read.

Under a multi-process ``keras.distribution.DataParallel`` each process's dataset holds its own
shard already (:mod:`daliaug.outputs.jax`); Keras refuses any input but ``tf.data`` there
unless the distribution is made with ``auto_shard_dataset=False``, which says so.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator, Mapping
from typing import Any

import grain
import numpy as np

from daliaug.errors import ConfigError
from daliaug.outputs.batches import Batch, Batches, Start
from daliaug.resume import Readers, Rest, Stream, first_batch


@dataclasses.dataclass(frozen=True)
class Position:
    """Where an iterator is: the next batch it yields is ``batch`` of ``epoch`` (``batch`` =
    ``batches``: the epoch is over), in a dataset of ``batches`` per epoch drawn with ``seed``."""

    epoch: int
    batch: int
    batches: int
    seed: int

    def state(self) -> dict[str, int]:
        """The state Grain saves (JSON)."""
        return dataclasses.asdict(self)

    @classmethod
    def parsed(cls, state: Any, extra: tuple[str, ...] = ()) -> Position:
        """The position ``state`` holds, with its keys (and the ``extra`` ones) and whole
        numbers checked: a ``ConfigError`` naming what does not fit."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(state, Mapping) or sorted(state) != sorted([*names, *extra]):
            given = sorted(state) if isinstance(state, Mapping) else type(state).__name__
            keys = [*names, *extra]
            raise ConfigError(f"state: a daliaug Grain state has the keys {keys}, got {given}")
        for name in names:
            value = state[name]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ConfigError(f"state: {name} must be a whole number >= 0, got {value!r}")
        return cls(**{name: int(state[name]) for name in names})

    @classmethod
    def restored(cls, state: Any, batches: int, seed: int) -> Position:
        """``state`` checked against the dataset it is restored into (``batches`` per epoch,
        drawn with ``seed``): a ``ConfigError`` naming the field that does not fit."""
        position = cls.parsed(state)
        if position.seed != seed:
            raise ConfigError(
                f"state: saved with seed {position.seed}, but this dataset's seed is {seed}; "
                "restore into the same config's dataset (set seed in the config: without one, "
                "every dataset draws its own)"
            )
        if position.batches != batches:
            raise ConfigError(
                f"state: saved from a dataset of {position.batches} batches per epoch; this one "
                f"has {batches} (another source, batch size or number of processes)"
            )
        if position.batch > batches:
            raise ConfigError(f"state: batch {position.batch} is past the epoch's {batches}")
        return position


class GrainBatches(grain.IterDataset):
    """``(images, targets[, weights])`` batches of ``jax.Array``\\ s, one epoch per ``iter()``
    (:meth:`repeat`: epoch after epoch), each iterator a checkpointable :class:`BatchIterator`.
    ``len()``: batches per epoch."""

    def __init__(self, batches: Batches, seed: int, endless: bool = False) -> None:
        super().__init__()
        self.batches, self.seed, self.endless = batches, seed, endless

    @property
    def pipelines(self) -> int:
        """Pipelines run side by side (one per local device of a distribution)."""
        return self.batches.pipelines

    def __len__(self) -> int:
        return len(self.batches)

    def repeat(self) -> GrainBatches:
        """The same batches whose iterators run epoch after epoch without end, from the epoch
        this dataset is at: one iterator for a whole training (``model.fit(ds.repeat(),
        steps_per_epoch=len(ds), epochs=...)``, or a loop checkpointing its state)."""
        endless = copy.copy(self)  # what describe() reads comes along
        endless.endless = True
        return endless

    def __iter__(self) -> BatchIterator:
        first = self.batches.start  # a dataset made with a state: the rest of its epoch
        epoch = self.batches.epoch
        position = Position(epoch, first_batch(first), _length(first, len(self)), self.seed)
        restore = None if isinstance(first, int) else (epoch, first)
        return BatchIterator(self.batches, position, self.endless, restore)

    def __str__(self) -> str:
        every = "epoch after epoch" if self.endless else "one epoch per iteration"
        return f"daliaug.GrainBatches({len(self)} batches per epoch, {every})"


def _length(start: Start, batches: int) -> int:
    """The batches of a pass from ``start`` in a dataset of ``batches`` per epoch: the rest's
    own where another world began the epoch."""
    return start.batches if isinstance(start, Rest) else batches


def _rest_in(restore: tuple[int, Readers | Rest] | None) -> Rest | None:
    """The rest of an epoch another world began that a pass restores, if it is one."""
    return restore[1] if restore and isinstance(restore[1], Rest) else None


class BatchIterator(grain.DatasetIterator):
    """The batches of :class:`GrainBatches` from ``position`` to its epoch's end (``endless``:
    on through the epochs after it; ``restore``: the epoch that starts otherwise than at a
    batch, and how: DALI's readers restored, or the rest of it another world began); its
    state is its position and the stream's state there."""

    def __init__(
        self,
        batches: Batches,
        position: Position,
        endless: bool,
        restore: tuple[int, Readers | Rest] | None = None,
    ) -> None:
        self._batches, self._position, self._endless = batches, position, endless
        self._restore = restore
        self._rest = _rest_in(restore)
        self._stream: Generator[Batch] | None = None
        super().__init__()

    def __next__(self) -> Batch:
        self._assert_not_closed()
        position = self._position
        if position.batch == position.batches:
            if not self._endless:
                if self._stream is None:  # restored at the epoch's end: the next pass is next
                    self._batches.seek(position.epoch + 1, self._start(position.epoch + 1, 0))
                raise StopIteration
            self._drop_stream()  # the epoch's pass has ended: the next opens the next epoch
            self._rest = None
            position = Position(position.epoch + 1, 0, len(self._batches), position.seed)
        if self._stream is None:  # no batch before it made
            self._batches.seek(position.epoch, self._start(position.epoch, position.batch))
            self._stream = iter(self._batches)  # type: ignore[assignment]  # a generator
        value = next(self._stream)
        self._position = dataclasses.replace(position, batch=position.batch + 1)
        return value

    def get_state(self) -> dict[str, Any]:
        position, stream = self._position, self._batches.stream
        if stream is None:  # (batches not made by make_dataset)
            return position.state()
        epoch, batch, rest = position.epoch, position.batch, self._rest
        if batch == position.batches:  # the epoch is over: the next one's start
            epoch, batch, rest = epoch + 1, 0, None
        return {**position.state(), "stream": stream.state(epoch, batch, rest).as_dict()}

    def set_state(self, state: dict[str, Any]) -> None:
        stream, seed = self._batches.stream, self._position.seed
        if stream is None:
            position, restore = Position.restored(state, len(self._batches), seed), None
        else:
            position, restore = self._restored(stream, state)
        self._position, self._restore = position, restore
        self._rest = _rest_in(restore)
        self._drop_stream()

    def _restored(
        self, stream: Stream, state: Any
    ) -> tuple[Position, tuple[int, Readers | Rest] | None]:
        """The position ``state`` restores and how its pass starts where not at a batch: the
        stream's state decides (each refusal named), another world's as its rest."""
        if isinstance(state, Mapping) and "stream" not in state:
            raise ConfigError(
                "state: a daliaug Grain state holds the stream's state ('stream'), this one "
                "has none: saved by an earlier daliaug, whose states this one does not take "
                "(a stream's order is promised within one version)"
            )
        saved = Position.parsed(state, ("stream",))
        epoch, start = stream.start(state["stream"])
        batches = len(self._batches)
        if isinstance(start, Rest):
            start = dataclasses.replace(start, samples=self._batches.samples)
            return Position(epoch, 0, start.batches, saved.seed), (epoch, start)
        restore = (epoch, start) if isinstance(start, Readers) else None
        if saved.batch == saved.batches:  # the saved epoch (or rest) is over: the next starts
            return Position(saved.epoch, batches, batches, saved.seed), restore
        return Position(epoch, first_batch(start), batches, saved.seed), restore

    def _start(self, epoch: int, batch: int) -> Start:
        """Where a pass over ``epoch`` from ``batch`` starts: DALI's readers restored there,
        or the rest another world began, where the restored state says so (once), else the
        batch."""
        restore, self._restore = self._restore, None
        if restore is not None and (restore[0], first_batch(restore[1])) == (epoch, batch):
            return restore[1]
        return batch

    def close(self) -> None:
        self._drop_stream()
        super().close()

    def _drop_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __str__(self) -> str:
        return f"daliaug.BatchIterator({self._position})"
