"""What DALI's own framework iterators (JAX, PyTorch) run on GPUs: one pipeline per shard,
fed by the epochs of :mod:`daliaug.epoch` from the host, outputs staying on the GPU."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nvidia.dali.pipeline import Pipeline

from daliaug.outputs.batch_layout import BatchLayout
from daliaug.outputs.batches import Batch, Shard
from daliaug.outputs.numpy import define_fed_pipeline


def dali_gpu_pipelines(shards: list[Shard], epoch: int) -> list[Pipeline]:
    """One GPU pipeline per shard (on its config's ``device_id``), from epoch ``epoch``."""
    return [define_fed_pipeline(c, s, "gpu", epoch, o) for c, s, o in shards]


class IteratorEpochs:
    """A DALI framework iterator (``auto_reset``) as an iterable whose every ``iter()`` is the
    next epoch: its outputs as ``layout`` nests them."""

    def __init__(self, iterator: Any, layout: BatchLayout) -> None:
        self.iterator, self.layout = iterator, layout

    def __iter__(self) -> Iterator[Batch]:
        for outputs in self.iterator:
            yield self.layout.nest(tuple(_first(outputs)[name] for name in self.layout.names))


def _first(outputs: Any) -> dict[str, Any]:
    """DALI's PyTorch iterator yields one dictionary per pipeline, its JAX iterator one."""
    return outputs[0] if isinstance(outputs, list) else outputs
