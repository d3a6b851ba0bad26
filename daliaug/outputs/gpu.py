"""What DALI's own framework iterators (JAX, PyTorch) run on GPUs: one pipeline per shard,
fed by the epochs of :mod:`daliaug.epoch` from the host, outputs staying on the GPU."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nvidia.dali.pipeline import Pipeline

from daliaug.config import Config
from daliaug.detection import COLUMNS as BOX_INPUTS
from daliaug.detection import box_names, nest
from daliaug.outputs.batches import Batch, Shard
from daliaug.outputs.numpy import define_fed_pipeline
from daliaug.outputs.options import DatasetOptions
from daliaug.sources.sample_set import SampleSet


def output_names(config: Config, samples: SampleSet, options: DatasetOptions) -> list[str]:
    """The pipeline's outputs, in order: images, the targets unless ``label_mode: none`` (the
    detection inputs where ``samples`` have boxes), the weights if weighted."""
    names = ["images", *box_names(samples)]
    if config.label_mode != "none" and len(names) == 1:
        names.append("targets")
    return [*names, "weights"] if options.weighs else names


def dali_gpu_pipelines(shards: list[Shard], epoch: int) -> list[Pipeline]:
    """One GPU pipeline per shard (on its config's ``device_id``), from epoch ``epoch``."""
    return [define_fed_pipeline(c, s, "gpu", epoch, o) for c, s, o in shards]


class IteratorEpochs:
    """A DALI framework iterator (``auto_reset``) as an iterable whose every ``iter()`` is the
    next epoch: its outputs as tuples in ``names`` order (detection inputs as Keras' dict)."""

    def __init__(self, iterator: Any, names: list[str]) -> None:
        self.iterator, self.names = iterator, names

    def __iter__(self) -> Iterator[Batch]:
        boxes = tuple(name for name in self.names if name in BOX_INPUTS)
        for outputs in self.iterator:
            yield nest(tuple(_first(outputs)[name] for name in self.names), boxes)


def _first(outputs: Any) -> dict[str, Any]:
    """DALI's PyTorch iterator yields one dictionary per pipeline, its JAX iterator one."""
    return outputs[0] if isinstance(outputs, list) else outputs
