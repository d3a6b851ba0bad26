"""Batch ``i`` of epoch ``e`` of a flow, computed on its own (Keras' ``it[i]``, ``next(it)``).

:class:`~daliaug.epoch.Epochs` gives the batch's samples and their parameter rows directly; the
flow's engine runs on just those samples with those rows (no shuffle, the rows replacing its
draws), so the batch equals the one iterating the dataset yields in that epoch, without running
the batches before it. A few batches are made at a time (a window of up to :data:`WINDOW`
samples), so reading ``it[0], it[1], ...`` in order builds one pipeline per window; a jump
elsewhere builds a new one (measured on a 2-core machine for a batch of 32 images of 32x32:
about 0.01 s with DALI on the CPU, 0.3-0.5 s with TensorFlow, whose new graph XLA compiles).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from daliaug.config import Config
from daliaug.engines.select import choose
from daliaug.epoch import Epochs
from daliaug.outputs.bridges import engine_batches
from daliaug.outputs.tfdata.dataset import tf_sees_gpu
from daliaug.sources.base import Samples

WINDOW = 2048
"""Samples one pipeline of :class:`EpochBatches` covers at most (a whole batch at least)."""


@dataclass
class _Window:
    """A pipeline over batches ``start`` onwards of ``epoch``, whose samples are ``indices``."""

    epoch: int
    start: int
    indices: list[np.ndarray]
    batches: Iterator[tuple[np.ndarray, ...]]
    next: int = 0
    """The batch it yields next, counted from ``start``."""


class EpochBatches:
    """The batches of a flow's epochs by number: the dataset's ``config`` (its seed fixed),
    ``samples`` and per-sample ``weights``, ``finish``, the flow's stage after the pipeline
    (:mod:`daliaug.keras.after_pipeline`), run eagerly, and the ``framework`` the dataset is for
    (its engine computes the batches)."""

    def __init__(
        self,
        config: Config,
        samples: Samples,
        weights: np.ndarray | None,
        finish: Callable[..., tuple[Any, ...]] | None,
        framework: str,
    ) -> None:
        self.config = config.model_copy(update={"shuffle": False})
        self.samples = samples
        self.weights = weights
        self.finish = finish
        self.framework = framework
        self.epochs = Epochs.of(config, len(samples))
        self._window: _Window | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.epochs)

    def batch(self, epoch: int, i: int) -> tuple[Any, ...]:
        """Batch ``i`` of ``epoch`` as NumPy arrays, as the dataset yields it in that epoch."""
        with self._lock:
            window = self._window
            if window is None or (window.epoch, window.start + window.next) != (epoch, i):
                window = self._window = self._open(epoch, i)
            batch = next(window.batches)
            index = window.indices[window.next]
            window.next += 1
            if window.next == len(window.indices):
                self._window = None
        if self.weights is not None:
            batch = (*batch, self.weights[index].astype(np.float32))
        if self.finish is None:
            return batch
        import tensorflow as tf  # the stage runs only on Keras' TensorFlow backend

        out = self.finish(*(tf.constant(t) for t in batch))
        return tf.nest.map_structure(lambda t: t.numpy(), out)

    def _open(self, epoch: int, i: int) -> _Window:
        """A pipeline over batches ``i`` onwards of ``epoch``, up to :data:`WINDOW` samples."""
        stop = min(len(self.epochs), i + max(1, WINDOW // self.epochs.batch_size))
        bounds = self.epochs.bounds
        indices = self.epochs.batches(epoch)[i:stop]
        rows = self.epochs.rows(self.config.plan, epoch)[bounds[i][0] : bounds[stop - 1][1]]
        choice = choose(self.config, self.framework, tf_sees_gpu)
        samples = self.samples.subset(np.concatenate(indices))
        batches = engine_batches(choice.engine, self.config, samples, choice.device, params=rows)
        return _Window(epoch, i, indices, iter(batches))
