"""An epoch per pass over DALI's batches without TensorFlow: :class:`Batches` (an iterable with
a length, as NumPy batches for any loop) and :func:`fit_batches` (the same as a Keras data
adapter, what ``model.fit`` takes on the JAX and PyTorch backends).

Every pass of a :class:`Batches` is one epoch, numbered from ``initial_epoch``, like iterating a
``tf.data`` dataset. The pipelines behind it run their epochs in order, so a pass left
unfinished (Keras takes one batch to build the model before the first epoch) does not count:
the next pass runs the same epoch again, from pipelines opened anew at that epoch.

Why a Keras ``DataAdapter`` (``keras.src.trainers.data_adapters``; ``fit`` takes one as it is,
Keras 3.7 on) rather than a ``keras.utils.PyDataset``: under ``fit(shuffle=True)``, its default,
Keras asks a PyDataset for its batches in a random order of their indices, which a pipeline
that computes an epoch in order cannot serve without losing its prefetch, and which would
change the order the config fixes (Keras leaves a ``tf.data`` dataset's order alone); and under
a multi-process ``keras.distribution`` Keras refuses any input but ``tf.data`` unless
``auto_shard_dataset=False``, while these batches are sharded per process already.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from daliaug.batch_layout import BatchLayout
from daliaug.errors import ConfigError
from daliaug.resume import Readers, Rest, first_batch

if TYPE_CHECKING:
    from daliaug.outputs.options import DatasetOptions
    from daliaug.resume import State, Stream
    from daliaug.run import Run
    from daliaug.sources.sample_set import SampleSet

Batch = tuple[Any, ...]
Start = int | Rest | Readers
"""Where a pass starts: a batch of the epoch, the rest of an epoch another world began, or a
batch where DALI's own readers are restored (:mod:`daliaug.resume`)."""


class Batches:
    """``(images, targets[, weights])`` batches, one epoch per pass, from
    ``open_at(epoch, first)``: an iterable whose every ``iter()`` runs the next epoch of
    pipelines opened at ``epoch``, from its batch ``first`` (0 but in a resumed epoch; reused
    while passes run to their end, but after the rest of an epoch another world began, and
    after a pass from mid-epoch where the iterable's ``whole_after`` is false: DALI's own
    iterators, told the positions left). ``length``: batches per epoch; ``batch_size`` and
    ``partial``: the full batch and the last one's size if smaller (else 0); ``pipelines``: how
    many run side by side (one per local shard).

    Its state between batches (:meth:`get_state`, :meth:`set_state`, and PyTorch's names
    :meth:`state_dict`, :meth:`load_state_dict`) is a :class:`~daliaug.resume.State` where
    ``stream`` (set by ``make_dataset``) says what the batches are."""

    stream: Stream | None = None
    """What a state of these batches must match (:class:`~daliaug.resume.Stream`)."""
    world: int = 1
    """The shards the epoch is split over, this process's and others' (a state's world)."""
    samples: SampleSet | None = None
    """All the samples, of every shard (the rest of an epoch begun by another world reads
    from all of them)."""
    shard_batch: int = 0
    """Each shard's batch."""
    local: tuple[int, ...] = (0,)
    """The shards this process runs, by number."""

    def __init__(
        self,
        open_at: Callable[[int, Start], Iterable[Batch]],
        length: int,
        batch_size: int,
        partial: int = 0,
        initial_epoch: int = 0,
        pipelines: int = 1,
    ) -> None:
        self._open_at = open_at
        self.pipelines = pipelines
        self._length = length
        self._batch_size = batch_size
        self._partial = partial
        self._epoch = initial_epoch
        self._start: Start = 0  # the batch the epoch starts at, or the rest of it
        self._taken = 0  # batches of the epoch handed on
        self._stream: Iterable[Batch] | None = None
        self._ended = False

    def __len__(self) -> int:
        """Batches per epoch."""
        return self._length

    @property
    def epoch(self) -> int:
        """The epoch the next pass runs."""
        return self._epoch

    @property
    def start(self) -> Start:
        """The batch the next pass starts at (0 but in a resumed epoch), or the rest of an
        epoch another world began, or DALI's readers restored at a batch."""
        return self._start

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass run ``epoch`` (:class:`~daliaug.keras.EpochSync`, a restore)."""
        self.seek(epoch, 0)

    def seek(self, epoch: int, start: Start) -> None:
        """Make the next pass run ``epoch`` from its batch ``start``, or the :class:`Rest`
        of it another world began, or from the batch where :class:`Readers` restore DALI's
        own readers (not where the pipelines ended the epoch before and stand there)."""
        standing = self._stream is not None and self._ended and self._start == 0
        if isinstance(start, Readers) and not start.first and standing and epoch == self._epoch:
            start = 0
        if (epoch, start) != (self._epoch, self._start) or start:
            self._stream = None
        self._epoch, self._start = epoch, start
        self._taken = first_batch(start)

    def get_state(self) -> State:
        """The state after the batches handed on so far (Grain's name)."""
        rest = self._start if isinstance(self._start, Rest) else None
        return self._stream_of().state(self._epoch, self._taken, rest)

    def set_state(self, state: State | Mapping[str, Any] | str) -> None:
        """Make the next pass continue where ``state`` was taken (Grain's name): a
        :class:`~daliaug.resume.State`, its dictionary or its JSON; refused by name where it
        was taken of other batches. A state taken by another number of shards resumes the
        rest of its epoch over this one's (:class:`~daliaug.resume.Rest`)."""
        epoch, start = self._stream_of().start(state)
        if isinstance(start, Rest):
            start = dataclasses.replace(start, samples=self.samples)
        if isinstance(start, Readers):
            for shard in self.local:  # each held, before any pipeline is opened
                start.of(shard)
        self.seek(epoch, start)

    def state_dict(self) -> dict[str, Any]:
        """:meth:`get_state` as a dictionary (PyTorch's name)."""
        return self.get_state().as_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """:meth:`set_state` (PyTorch's name)."""
        self.set_state(state_dict)

    def _stream_of(self) -> Stream:
        if self.stream is None:
            raise ConfigError("these batches have no state: make them with daliaug.make_dataset")
        return self.stream

    def __iter__(self) -> Iterator[Batch]:
        epoch, start = self._epoch, self._start
        rest = isinstance(start, Rest)
        first, length = first_batch(start), start.batches if rest else self._length
        if self._stream is None or not self._ended:
            self._stream = self._open_at(epoch, start)
        self._ended, self._taken = False, first
        batches = iter(self._stream)
        for count, batch in enumerate(batches, first + 1):
            self._taken = count
            if count == length:
                # Keras stops at the last batch without asking for more: end the pipelines'
                # epoch now, so that the next pass finds them at the next one.
                if next(batches, None) is not None:
                    raise RuntimeError(f"epoch {epoch} ran past its {length} batches")
                self._ended, self._epoch, self._start, self._taken = True, epoch + 1, 0, 0
                if rest or (first and not getattr(self._stream, "whole_after", True)):
                    # its pipelines hold the rest of that epoch only, or count its positions
                    # (DALI's iterators): the next pass opens them anew
                    self._stream = None
            yield batch


class Joined:
    """Several shards' epochs side by side: every ``iter()`` runs the next epoch of each, and
    each batch is theirs joined along the batch axis, in order (they run equal batch counts),
    passed through ``convert`` and nested as ``layout`` says."""

    whole_after = True
    """Opened mid-epoch, its loaders run the epochs after it whole."""

    def __init__(
        self, shards: list[Iterable[Batch]], convert: Callable[[Batch], Batch], layout: BatchLayout
    ) -> None:
        self.shards, self.convert, self.layout = shards, convert, layout

    def __iter__(self) -> Iterator[Batch]:
        if len(self.shards) == 1:
            for batch in self.shards[0]:
                yield self.layout.nest(self.convert(batch))
            return
        for parts in zip(*self.shards, strict=True):
            joined = tuple(np.concatenate(a) for a in zip(*parts, strict=True))
            yield self.layout.nest(self.convert(joined))


Shard = tuple["Run", "DatasetOptions"]
"""One shard's run and options (see :class:`~daliaug.outputs.shards.Shards`)."""


def shard_layout(shard: Shard) -> BatchLayout:
    """The layout of a shard's batches (DALI's iterators' ``output_map`` is its names)."""
    run, options = shard
    return run.layout(options.weighs)


def local_batches(
    shards: list[Shard],
    open_at: Callable[[int, Start], Iterable[Batch]],
    initial_epoch: int,
    kind: type[Batches] = Batches,
) -> Batches:
    """The batches of this process's ``shards`` (run side by side, equal batch counts) as
    ``kind``, their epochs opened by ``open_at``."""
    run, options = shards[0]
    bounds = options.epochs(run).bounds
    full = run.batch_size * len(shards)
    last = (bounds[-1][1] - bounds[-1][0]) * len(shards)
    partial = last if last < full else 0
    batches = kind(open_at, len(bounds), full, partial, initial_epoch, len(shards))
    batches.world, batches.shard_batch = run.shards, run.batch_size
    batches.local = tuple(shard.shard for shard, _ in shards)
    return batches


def host_loaders(
    shards: list[Shard], convert: Callable[[Batch], Batch]
) -> Callable[[int, Start], Joined]:
    """``open_at`` for ``shards`` run on the host: one loader each (its engine's host loader,
    :mod:`~daliaug.outputs.bridges`, on its device), their NumPy batches joined and
    ``convert``-ed."""
    from daliaug.outputs.bridges import bridge

    loader = bridge(shards[0][0].engine).loader
    layout = shard_layout(shards[0])

    def open_at(epoch: int, start: Start) -> Joined:
        if isinstance(start, Rest):
            loaders = [loader(*rest_shard(start, *shard), epoch) for shard in shards]
        elif isinstance(start, Readers):
            loaders = [
                loader(run, options, epoch, start.first, checkpoint=start.of(run.shard))
                for run, options in shards
            ]
        else:
            loaders = [loader(run, options, epoch, start) for run, options in shards]
        return Joined(loaders, convert, layout)

    return open_at


def rest_shard(rest: Rest, run: Run, options: DatasetOptions) -> Shard:
    """The run (over all the samples) and options of a shard that runs ``rest`` (the rest of
    an epoch another world began) in place of its own epoch."""
    if options.sample_weights is not None:
        raise ConfigError(
            "state: the rest of an epoch begun by another world is dealt out over all the "
            "samples, which per-sample weights do not follow; restore it on the same world"
        )
    resumed = rest.shard(run.shard)
    return run.with_samples(rest.samples), dataclasses.replace(options, resumed=resumed)
