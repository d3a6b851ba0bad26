"""What DALI's own framework iterators (JAX, PyTorch) run on GPUs: one pipeline per shard,
fed by the epochs of :mod:`daliaug.epoch` from the host, outputs staying on the GPU."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nvidia.dali.pipeline import Pipeline

from daliaug.batch_layout import BatchLayout
from daliaug.errors import ConfigError
from daliaug.outputs.ahead import Ahead
from daliaug.outputs.batches import Batch, Shard
from daliaug.outputs.dali_loader import define_fed_pipeline


def dali_gpu_pipelines(shards: list[Shard], epoch: int) -> list[Pipeline]:
    """One GPU pipeline per shard (on its run's ``device_id``), from epoch ``epoch``."""
    return [define_fed_pipeline(run, epoch, options) for run, options in shards]


def mid_epoch_on_gpus(first: int) -> None:
    """Refuses to open DALI's framework iterators mid-epoch: their epoch's size is fixed, so
    a resumed epoch's fewer batches would end them out of step."""
    if first:
        raise ConfigError(
            "state: DALI's JAX and PyTorch iterators on GPUs resume at an epoch's start only; "
            "restore a state taken at the end of an epoch, or make the dataset with "
            "backend: cpu or opencv to resume mid-epoch"
        )


PREFETCH = 2
"""Batches a DALI framework iterator makes ahead of the training step, on a thread of its own."""


class IteratorEpochs:
    """A DALI framework iterator (``auto_reset``) as an iterable whose every ``iter()`` is the
    next epoch: its outputs as ``layout`` nests them, made on a thread of their own up to
    :data:`PREFETCH` batches ahead, so that the training step's ``next()`` only takes one
    (the iterator's Python work, the pipeline's run and its outputs' hand-over happen beside
    the step, not in it)."""

    def __init__(self, iterator: Any, layout: BatchLayout) -> None:
        self.iterator, self.layout = iterator, layout

    def __iter__(self) -> Iterator[Batch]:
        names = self.layout.names
        nested = (self.layout.nest(tuple(_first(out)[n] for n in names)) for out in self.iterator)
        yield from Ahead(nested, PREFETCH, "daliaug-prefetch")


def _first(outputs: Any) -> dict[str, Any]:
    """DALI's PyTorch iterator yields one dictionary per pipeline, its JAX iterator one."""
    return outputs[0] if isinstance(outputs, list) else outputs
