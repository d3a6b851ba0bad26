"""The OpenCV engine's batches as NumPy arrays, without TensorFlow or DALI: :class:`CvLoader`,
the OpenCV engine's :class:`~daliaug.outputs.numpy.DaliLoader`, behind the NumPy, JAX and
PyTorch outputs (:func:`~daliaug.outputs.batches.engine_loaders`) and the parity harness.

Column sources are fed from the host by the feed protocol's
:class:`~daliaug.engines.feed.EpochFeed`, so the epochs are exactly ``make_dataset``'s (order,
batches, parameters); each batch is computed by :class:`~daliaug.engines.opencv.pipeline.Graph`
while the one before it is handed on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from daliaug.batch_layout import BatchLayout
from daliaug.config import Config
from daliaug.engines.feed import EpochFeed
from daliaug.engines.opencv.pipeline import RESIZES, Graph
from daliaug.engines.select import Choice, Device
from daliaug.errors import BackendError
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions, LoaderStart
from daliaug.prepare import prepare
from daliaug.sources.base import Samples
from daliaug.sources.sample_set import SampleSet


class CvLoader:
    """A config run by the OpenCV engine over its samples, yielding NumPy ``(images,
    targets[, weights][, params])`` batches, epoch after epoch from ``initial_epoch`` (one
    epoch per ``iter()``), the first from its batch ``first_batch`` (a resumed epoch).
    ``samples`` replaces the config's source; ``params``, one row of :attr:`Plan.param_keys`
    per sample, replaces the random draws; ``return_params`` also yields each batch's
    parameter rows. TFRecords are refused (they need TensorFlow's or
    DALI's reader)."""

    def __init__(
        self,
        config: Any,
        *,
        samples: SampleSet | None = None,
        params: np.ndarray | None = None,
        return_params: bool = False,
        initial_epoch: int = 0,
        options: DatasetOptions = DEFAULT_OPTIONS,
        first_batch: int = 0,
    ) -> None:
        prepared = prepare(config, samples=samples, choice=Choice("opencv", "cpu"))
        start = LoaderStart(params, return_params, initial_epoch, options, first_batch)
        self._open(prepared.config, prepared.samples, start)

    @classmethod
    def over(
        cls,
        config: Config,
        samples: SampleSet,
        device: Device = "cpu",
        *,
        params: np.ndarray | None = None,
        initial_epoch: int = 0,
        options: DatasetOptions = DEFAULT_OPTIONS,
        first_batch: int = 0,
    ) -> CvLoader:
        """The loader of a prepared run: ``config`` and ``samples`` as
        :func:`~daliaug.prepare.prepare` gave them (checked); nothing is prepared again
        (``device``: the host's, the only one this engine runs on)."""
        loader = cls.__new__(cls)
        loader._open(
            config, samples, LoaderStart(params, False, initial_epoch, options, first_batch)
        )
        return loader

    def _open(self, config: Config, samples: SampleSet, start: LoaderStart) -> None:
        if not isinstance(samples, Samples):
            raise BackendError(
                "backend: opencv reads files, arrays and WebDataset shards; TFRecords need "
                "TensorFlow's or DALI's reader (backend: tf, cpu or gpu)"
            )
        options = start.options
        self.config, self.samples, self.options = config, samples, options
        if start.params is not None:
            self.samples.check_params("explicit")
        if start.return_params:
            self.samples.check_params("returned")
        self.return_params = start.return_params
        self.epoch, self.first = start.initial_epoch, start.first_batch
        self.feed = EpochFeed(
            config,
            self.samples,
            resizes=RESIZES,
            params=start.params,
            epochs=options.epochs(config, len(self.samples)),
            weights=options.per_sample(self.samples),
            recent=3,
        )
        batch = BatchLayout.of(self.samples, config.label_mode, config.max_boxes, options.weighs)
        self.graph = Graph(config, self.samples, self.feed.layout, batch)

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


def cv_batches(
    config: Config, samples: Samples, params: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, ...]]:
    """The first epoch of the OpenCV engine as NumPy batches (detection targets flat, as the
    graph gives them)."""
    loader = CvLoader(config, samples=samples, params=params)
    try:
        yield from loader
    finally:
        loader.close()
