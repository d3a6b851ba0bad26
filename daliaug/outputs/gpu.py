"""What DALI's own framework iterators (JAX, PyTorch) run on GPUs: one pipeline per shard,
fed by the epochs of :mod:`daliaug.epoch` from the host, outputs staying on the GPU.

A pass may begin mid-epoch (a state restored): the pipelines are fed from that batch, or the
rest of an epoch another world began (:class:`~daliaug.resume.Rest`, each shard's part of it),
and DALI's iterator is told the positions left (its epoch's size is fixed when it is made), so
:class:`~daliaug.outputs.batches.Batches` opens them anew for the next epoch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nvidia.dali.pipeline import Pipeline

from daliaug.batch_layout import BatchLayout
from daliaug.outputs.ahead import Ahead
from daliaug.outputs.batches import Batch, Shard, Start, rest_shard
from daliaug.outputs.dali_loader import define_fed_pipeline
from daliaug.resume import Readers, Rest
from daliaug.run import Run


def iterates(run: Run) -> bool:
    """Whether DALI's own framework iterator hands over the run's batches: where DALI runs on
    GPUs (elsewhere the host's loaders make NumPy batches)."""
    return run.device == "gpu"


def dali_gpu_pipelines(shards: list[Shard], epoch: int, start: Start) -> tuple[list[Pipeline], int]:
    """One GPU pipeline per shard (on its run's ``device_id``) from batch ``start`` of epoch
    ``epoch`` (or running the :class:`~daliaug.resume.Rest` of it another world began), and
    the positions each runs until that epoch's end."""
    assert not isinstance(start, Readers)  # (DALI's reader on the GPU keeps no checkpoints)
    first = 0
    if isinstance(start, Rest):
        shards = [rest_shard(start, *shard) for shard in shards]
    else:
        first = start
    pipelines = [define_fed_pipeline(run, epoch, options, first) for run, options in shards]
    run, options = shards[0]
    return pipelines, options.epochs(run).positions - first * run.batch_size


PREFETCH = 2
"""Batches a DALI framework iterator makes ahead of the training step, on a thread of its own."""


class IteratorEpochs:
    """A DALI framework iterator (``auto_reset``) as an iterable whose every ``iter()`` is the
    next epoch: its outputs as ``layout`` nests them, made on a thread of their own up to
    :data:`PREFETCH` batches ahead, so that the training step's ``next()`` only takes one
    (the iterator's Python work, the pipeline's run and its outputs' hand-over happen beside
    the step, not in it)."""

    whole_after = False
    """Opened mid-epoch, DALI's iterator counts the positions left of that epoch only."""

    def __init__(self, iterator: Any, layout: BatchLayout) -> None:
        self.iterator, self.layout = iterator, layout

    def __iter__(self) -> Iterator[Batch]:
        names = self.layout.names
        nested = (self.layout.nest(tuple(_first(out)[n] for n in names)) for out in self.iterator)
        yield from Ahead(nested, PREFETCH, "daliaug-prefetch")


def _first(outputs: Any) -> dict[str, Any]:
    """DALI's PyTorch iterator yields one dictionary per pipeline, its JAX iterator one."""
    return outputs[0] if isinstance(outputs, list) else outputs
