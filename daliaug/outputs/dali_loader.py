"""DALI's host loader: a run's DALI pipeline iterated directly, its batches as NumPy arrays,
without TensorFlow (behind the NumPy, JAX and PyTorch outputs on either device).

Used by ``daliaug preview``, the parity harness, the GPU suite and the benchmarks, and by users
who drive DALI themselves. Column sources are fed from the host one batch at a time by the
feed protocol's :class:`~daliaug.engines.feed.EpochFeed`, so the epochs are exactly
``make_dataset``'s (order, batches, parameters). TFRecords are read by DALI's own reader, whose
shuffle is a buffer rather than a full permutation.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from nvidia.dali.pipeline import Pipeline

from daliaug.config import Config, load_config
from daliaug.engine_names import Choice
from daliaug.engines.dali.pipeline import (
    RESIZES,
    GraphOptions,
    define_pipeline,
    feed_form,
    reader_pipeline,
)
from daliaug.engines.feed import EpochFeed
from daliaug.engines.select import Device, resolve_device
from daliaug.errors import ConfigError, DataError, first_line
from daliaug.outputs.ahead import END, Ahead
from daliaug.outputs.host_loader import HostLoader, LoaderStart
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions
from daliaug.outputs.resumable import stream_of
from daliaug.prepare import prepare
from daliaug.reader_checkpoints import ReaderCheckpoints, keeps
from daliaug.resume import Readers, Rest, State, Stream
from daliaug.run import Run
from daliaug.sources.sample_set import SampleSet

AHEAD = 4
"""Batches the host's feed makes ahead of the pipeline, on a thread of its own."""


class _Source:
    """The pipeline's external sources (:class:`~daliaug.engines.dali.pipeline.Feed`): each
    batch's inputs, epoch by epoch, made by a thread of their own up to :data:`AHEAD` batches
    ahead of the pipeline (the file reads, the plan evaluated, the box targets), so the thread
    that runs the pipeline only takes them; each external source takes its :meth:`part`.

    An epoch's end is ``StopIteration`` in every part; the next call (after the pipeline's
    reset) starts the next epoch; the first epoch from its batch ``first`` (a resumed epoch).
    Keeps each batch's parameter rows until it comes out; the
    feed keeps the recent batches' sample indices, to name a file that fails.
    """

    def __init__(self, feed: EpochFeed, epoch: int, first: int = 0) -> None:
        self.feed = feed
        self.epoch, self.first = epoch, first
        self.params: deque[np.ndarray] = deque()
        self._parts: list[tuple[tuple[str, ...], deque]] = []
        self._made: Ahead | None = None

    def part(self, names: Sequence[str]) -> Callable[[], tuple[Any, ...]]:
        waiting: deque = deque()
        self._parts.append((tuple(names), waiting))

        def take() -> tuple[Any, ...]:
            if not waiting:  # the first part DALI asks for in this batch
                self._take()
            given = waiting.popleft()
            if given is END:
                raise StopIteration
            return given

        return take

    def _take(self) -> None:
        """The next batch, handed to every part (:data:`END` at the epoch's end); the feed's
        error where it failed."""
        if self._made is None:
            wanted = ("params", *(name for names, _ in self._parts for name in names))
            names = tuple(dict.fromkeys(wanted))
            batches = self.feed.batches(self.epoch, names, True, self.first)
            self.first = 0
            self._made = Ahead(batches, AHEAD, "daliaug-feed")
        try:
            batch = self._made.take()
        except Exception:
            self._made = None
            raise
        if batch is END:
            self._made = None
            self.epoch += 1
        else:
            self.params.append(batch["params"])
        for names, waiting in self._parts:
            waiting.append(batch if batch is END else tuple(batch[n] for n in names))

    def end_epoch(self) -> None:
        self.params.clear()

    def close(self) -> None:
        """Stop making batches (the loader is gone)."""
        if self._made is not None:
            self._made.close()


def _pipeline(run: Run, start: LoaderStart) -> tuple[Pipeline, _Source | None]:
    """The run's pipeline (not built), fed from ``start``, and its external source (``None``
    where DALI's own reader feeds it)."""
    spec, samples, device, options = run.spec, run.samples, run.device, start.options
    if start.params is not None:
        samples.check_params("explicit")
    reader = reader_pipeline(run, options.gpus, start.checkpoint)
    if reader is not None:
        if start.first_batch and start.checkpoint is None:
            raise ConfigError(
                "first_batch: DALI's own reader (TFRecords) starts mid-epoch from its "
                "checkpoint only (a state's, set_state)"
            )
        return reader, None
    feed = EpochFeed(
        spec,
        samples,
        resizes=RESIZES,
        form=feed_form(spec.plan, samples.column_names, device),
        params=start.params,
        epochs=options.epochs(run),
        weights=options.per_sample(samples),
        recent=spec.prefetch + 2 + AHEAD,
    )
    source = _Source(feed, start.initial_epoch, start.first_batch)
    graph = GraphOptions(
        samples.num_classes,
        feed.inputs,
        run.layout(options.weighs),
        feed=source,
        target_shape=samples.target_shape,
        gpu_inputs=device == "gpu",
        size_hint=samples.size_hint,
        gpus=options.gpus,
    )
    return define_pipeline(spec, graph), source


def define_fed_pipeline(
    run: Run,
    initial_epoch: int = 0,
    options: DatasetOptions = DEFAULT_OPTIONS,
    first_batch: int = 0,
) -> Pipeline:
    """The run's pipeline (its samples prepared and checked), not built, fed its epochs from
    batch ``first_batch`` of ``initial_epoch`` on (``options``: weights and the padded length,
    or the rest of an epoch another world began, as for ``make_dataset``); for DALI's own
    iterators."""
    start = LoaderStart(initial_epoch=initial_epoch, options=options, first_batch=first_batch)
    return _pipeline(run, start)[0]


def build_pipeline(
    config: Any,
    device: Device | None = None,
    *,
    x: Any = None,
    y: Any = None,
    samples: SampleSet | None = None,
    initial_epoch: int = 0,
) -> Pipeline:
    """The DALI pipeline of a config, reading its source itself: ``(images, labels or masks)``
    batches, epoch after epoch as ``make_dataset`` defines them (each epoch ends with
    ``StopIteration``; the last batch is smaller unless ``drop_remainder``), for driving DALI
    directly or through DALI's own iterators (PyTorch, JAX). Not built: call ``build()`` (which
    needs CUDA for ``device="gpu"``); on a machine without a GPU a ``gpu`` pipeline can still be
    defined and checked (:mod:`daliaug.engines.dali.check`). ``device`` defaults to where the
    config's ``backend`` runs DALI here; ``x``/``y`` are in-memory arrays for an ``arrays``
    source. TFRecords are read by DALI's own reader, named ``records``.
    """
    config = load_config(config)
    run = prepare(config, DaliLoader.choice(config, device), samples=samples, x=x, y=y)
    return define_fed_pipeline(run, initial_epoch)


class DaliLoader(HostLoader):
    """A config's DALI pipeline over its samples, yielding NumPy ``(images, targets[, params])``.

    ``samples`` replaces the config's source (for example in-memory arrays); ``params``, one
    row of :attr:`Plan.param_keys` per sample, replaces the random draws; ``return_params`` also
    yields the parameters each sample got; ``initial_epoch`` is the first epoch iterated (epochs
    then count up from it, as in ``make_dataset``), from its batch ``first_batch`` (a resumed
    epoch, :mod:`daliaug.resume`; for TFRecords, from a state's checkpoint of DALI's reader,
    which DALI on the CPU keeps: :meth:`get_state`, :meth:`set_state`).
    """

    @staticmethod
    def choice(config: Config, device: Device | None) -> Choice:
        """DALI on ``device``, by default where the config's ``backend`` runs DALI here."""
        return Choice("dali", device or resolve_device(config))

    def _open(self, run: Run, start: LoaderStart) -> None:
        self.run, self.config, self.device, self.samples = run, run.config, run.device, run.samples
        if start.return_params:
            run.samples.check_params("returned")
        self.pipeline, self._source = _pipeline(run, start)
        kept = self._source is None and keeps(run.device)
        if kept and start.options.readers is None:  # a loader of its own stream
            options = dataclasses.replace(start.options, readers=ReaderCheckpoints())
            start = dataclasses.replace(start, options=options)
        self.options, self.return_params = start.options, start.return_params
        self._readers = start.options.readers if kept else None
        self._start, self._epoch, self._taken = start, start.initial_epoch, start.first_batch
        self.pipeline.build()

    def __len__(self) -> int:
        """Batches per epoch."""
        return len(self.options.epochs(self.run))

    def raw_batches(self) -> Iterator[tuple]:
        """One epoch of DALI ``TensorList`` outputs (on the GPU for the GPU device)."""
        if self._source is None:
            yield from self._reader_batches()
            return
        while True:
            try:
                outputs = self.pipeline.run()
            except StopIteration:
                self.pipeline.reset()
                self._source.end_epoch()
                return
            except RuntimeError as e:
                raise self._explain(e) from None
            yield outputs

    def _reader_batches(self) -> Iterator[tuple]:
        """One epoch of DALI's TFRecord reader, which stays on its shard and repeats the
        shard's last record up to the batches of the largest shard: the repeats are cut off."""
        n, size = len(self.samples), self.run.batch_size
        meta = self.pipeline.reader_meta("records")
        largest = meta["epoch_size_padded"] // meta["number_of_shards"]
        for start in range(self._taken * size, largest, size):
            try:
                outputs = self.pipeline.run()
            except RuntimeError as e:
                raise DataError(f"reading TFRecords failed: {first_line(e)}") from None
            if start + size <= n:
                yield outputs
            elif start < n and not self.config.drop_remainder:
                yield tuple(_Trimmed(t, n - start) for t in outputs)

    def __iter__(self) -> Iterator[tuple[np.ndarray, ...]]:
        raw = self.raw_batches()
        for outputs in raw:
            batch = tuple(_to_numpy(t) for t in outputs)
            if self._source is not None:
                params = self._source.params.popleft()
                batch = (*batch, params) if self.return_params else batch
            self._taken += 1
            if self._readers is not None:
                self._record(raw)
            yield batch
        self._epoch, self._taken = self._epoch + 1, 0

    def _record(self, raw: Iterator[tuple]) -> None:
        """Keep the reader's checkpoint after the batch just taken; after an epoch's last one,
        once the reader has run its epoch's end (its shard padded to the largest shard's
        batches), where the next epoch begins."""
        assert self._readers is not None
        end = self._taken == len(self)
        if end:
            for _ in raw:
                pass
        checkpoint = self.pipeline.checkpoint()
        self._readers.record(self._epoch, self._taken, self.run.shard, checkpoint, end)

    def get_state(self) -> State:
        """The state after the batches handed on so far: a
        :class:`~daliaug.resume.State` of this loader's samples and config (Grain's name)."""
        return self.stream.state(self._epoch, self._taken)

    def set_state(self, state: State | Mapping[str, Any] | str) -> None:
        """Make the next ``iter()`` continue where ``state`` was taken (Grain's name): its
        epoch from its batch, the pipeline opened there (no batch before it made); refused
        by name where it was taken of other samples, another config or another world."""
        epoch, first = self.stream.start(state)
        assert not isinstance(first, Rest)  # not elastic: another world's state is refused
        checkpoint = first.of(self.run.shard) if isinstance(first, Readers) else None
        batch = first.first if isinstance(first, Readers) else first
        self.close()
        start = dataclasses.replace(
            self._start, initial_epoch=epoch, first_batch=batch, checkpoint=checkpoint
        )
        self._open(self.run, start)

    def state_dict(self) -> dict[str, Any]:
        """:meth:`get_state` as a dictionary (PyTorch's name)."""
        return self.get_state().as_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """:meth:`set_state` (PyTorch's name)."""
        self.set_state(state_dict)

    @cached_property
    def stream(self) -> Stream:
        """What this loader's states say and must match (:class:`~daliaug.resume.Stream`):
        its samples as one world, its batches per epoch."""
        if self.config.seed is None:
            raise ConfigError(
                "seed: a DaliLoader's state replays the draws of the config's seed, and the "
                "config has none; give it one (make_dataset resolves one itself)"
            )
        return stream_of(self.run, 1, self.run.batch_size, len(self), readers=self._readers)

    def close(self) -> None:
        """Stop its host feed (the loader is done with)."""
        source = getattr(self, "_source", None)
        if source is not None:
            source.close()

    def __del__(self) -> None:
        self.close()

    def _explain(self, error: RuntimeError) -> DataError:
        assert self._source is not None
        return self._source.feed.explain(error, "DALI failed on a batch")


class _Trimmed:
    """The first ``count`` samples of a DALI output batch."""

    def __init__(self, tensors: object, count: int) -> None:
        self.tensors, self.count = tensors, count

    def as_cpu(self) -> _Trimmed:
        return _Trimmed(_on_cpu(self.tensors), self.count)

    def as_array(self) -> np.ndarray:
        return np.asarray(self.tensors.as_array())[: self.count]


def _on_cpu(tensors: object) -> object:
    return tensors.as_cpu() if hasattr(tensors, "as_cpu") else tensors


def _to_numpy(tensors: object) -> np.ndarray:
    return np.asarray(_on_cpu(tensors).as_array())
