"""The OpenCV engine's batches as NumPy arrays, without TensorFlow or DALI: :class:`CvLoader`,
the OpenCV engine's :class:`~daliaug.outputs.dali_loader.DaliLoader`, behind the NumPy, JAX and
PyTorch outputs (:func:`~daliaug.outputs.batches.host_loaders`) and the parity harness.

Column sources are fed from the host by the feed protocol's
:class:`~daliaug.engines.feed.EpochFeed`, so the epochs are exactly ``make_dataset``'s (order,
batches, parameters); each batch is computed by :class:`~daliaug.engines.opencv.pipeline.Graph`
while the one before it is handed on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from daliaug.config import Config
from daliaug.engine_names import Choice, Device
from daliaug.engines.feed import EpochFeed
from daliaug.engines.opencv.pipeline import RESIZES, Graph
from daliaug.errors import BackendError, ConfigError
from daliaug.outputs.host_loader import HostLoader, LoaderStart
from daliaug.run import Run
from daliaug.sources.base import Samples


class CvLoader(HostLoader):
    """A config run by the OpenCV engine over its samples, yielding NumPy ``(images,
    targets[, weights][, params])`` batches, epoch after epoch from ``initial_epoch`` (one
    epoch per ``iter()``), the first from its batch ``first_batch`` (a resumed epoch).
    ``samples`` replaces the config's source; ``params``, one row of :attr:`Plan.param_keys`
    per sample, replaces the random draws; ``return_params`` also yields each batch's
    parameter rows. TFRecords are refused (they need TensorFlow's or
    DALI's reader)."""

    @staticmethod
    def choice(config: Config, device: Device | None) -> Choice:
        """The OpenCV engine, on the host (``device``: ``cpu`` or left out)."""
        if device not in (None, "cpu"):
            raise ConfigError(f"device: the OpenCV engine runs on the CPU, not {device!r}")
        return Choice("opencv", "cpu")

    def _open(self, run: Run, start: LoaderStart) -> None:
        spec, samples = run.spec, run.samples
        if not isinstance(samples, Samples):
            raise BackendError(
                "backend: opencv reads files, arrays and WebDataset shards; TFRecords need "
                "TensorFlow's or DALI's reader (backend: tf, cpu or gpu)"
            )
        options = start.options
        self.samples = samples
        if start.params is not None:
            samples.check_params("explicit")
        if start.return_params:
            samples.check_params("returned")
        self.return_params = start.return_params
        self.epoch, self.first = start.initial_epoch, start.first_batch
        self.feed = EpochFeed(
            spec,
            samples,
            resizes=RESIZES,
            params=start.params,
            epochs=options.epochs(run),
            weights=options.per_sample(samples),
            recent=3,
        )
        self.graph = Graph(spec, samples, self.feed.layout, run.layout(options.weighs))

    def __len__(self) -> int:
        """Batches per epoch."""
        return len(self.feed.epochs)

    def __iter__(self) -> Iterator[tuple[np.ndarray, ...]]:
        epoch, self.epoch = self.epoch, self.epoch + 1
        first, self.first = self.first, 0
        names = ("index", "params", *self.feed.inputs)
        pending = None
        try:
            for batch in self.feed.batches(epoch, names, check_files=True, first=first):
                started = self.graph.submit(batch), batch["params"]
                if pending is not None:
                    yield self._done(*pending)
                pending = started
            if pending is not None:
                yield self._done(*pending)
        except (OSError, ValueError) as e:
            raise self.feed.explain(e, "the OpenCV engine failed on a batch") from None

    def _done(self, finished: Any, params: np.ndarray) -> tuple[np.ndarray, ...]:
        batch = finished()
        return (*batch, params) if self.return_params else batch

    def close(self) -> None:
        """Stop the engine's threads."""
        self.graph.close()
