"""The bridges out of each engine, in one table keyed by the engines' one list of names: its
NumPy loader (the batches the JAX, PyTorch and NumPy outputs join, one loader per shard), its
first epoch as nested NumPy batches (parity, preview, Keras' ``it[i]``) and its ``tf.data``
dataset. The engines sit below the outputs and never import them: this table is where an
output finds an engine's bridge, so that no output compares an engine's name. Importing this
module imports neither TensorFlow nor DALI nor OpenCV (each bridge imports its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from daliaug.config import Config
from daliaug.engine_names import ENGINE_NAMES, Choice, Device, EngineName
from daliaug.errors import BackendError
from daliaug.outputs import tensorflow_extra
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions
from daliaug.run import Run
from daliaug.sources.sample_set import SampleSet

if TYPE_CHECKING:
    import tensorflow as tf

Batch = tuple[np.ndarray, ...]


class Loader(Protocol):
    """An engine's host loader: flat NumPy batches, one epoch per ``iter()``."""

    def __iter__(self) -> Iterator[Batch]: ...

    def close(self) -> None:
        """Stop its threads (it is done with)."""


class Bridge:
    """How one engine's batches leave it. A host loader yields flat NumPy batches (the feed
    protocol's order), epoch after epoch from ``epoch``, the first from its batch ``first``
    (DALI's own reader restored there from its ``checkpoint``); ``params`` (one row of
    ``plan.param_keys`` per sample) replaces the random draws."""

    def loader(
        self,
        run: Run,
        options: DatasetOptions = DEFAULT_OPTIONS,
        epoch: int = 0,
        first: int = 0,
        params: np.ndarray | None = None,
        checkpoint: bytes | None = None,
    ) -> Loader:
        """The engine's loader over a prepared ``run`` (its samples checked)."""
        return self.opener()(
            run,
            options=options,
            initial_epoch=epoch,
            first_batch=first,
            params=params,
            checkpoint=checkpoint,
        )

    def opener(self) -> Callable[..., Loader]:
        """The engine's loader's constructor over a prepared run (its ``over``)."""
        raise NotImplementedError

    def first_epoch(self, run: Run, params: np.ndarray | None) -> Iterator[Batch]:
        """The first epoch as NumPy ``(images, targets)`` batches, detection targets as
        Keras' dict."""
        layout = run.layout()
        loader = self.loader(run, params=params)
        try:
            for batch in loader:
                yield layout.nest(batch)
        finally:
            loader.close()

    def dataset(self, run: Run, options: DatasetOptions) -> tf.data.Dataset:
        """The engine's ``tf.data`` dataset, one epoch per iteration, as ``options.clock``
        numbers them; the clock is its ``epoch_clock``."""
        raise NotImplementedError


class DaliBridge(Bridge):
    """DALI: :class:`~daliaug.outputs.dali_loader.DaliLoader`, and ``DALIDatasetWithInputs``
    (:mod:`~daliaug.outputs.tfdata.dali_dataset`)."""

    def opener(self) -> Callable[..., Loader]:
        from daliaug.outputs.dali_loader import DaliLoader

        return DaliLoader.over

    def dataset(self, run: Run, options: DatasetOptions) -> tf.data.Dataset:
        tensorflow_extra("nvidia.dali_tf_plugin")
        from daliaug.outputs.tfdata.dali_dataset import dali_dataset

        return dali_dataset(run, options)


class CvBridge(Bridge):
    """OpenCV: :class:`~daliaug.outputs.cv_loader.CvLoader`, and its batches as ``tf.data``
    (:mod:`~daliaug.outputs.tfdata.cv_dataset`)."""

    def opener(self) -> Callable[..., Loader]:
        from daliaug.outputs.cv_loader import CvLoader

        return CvLoader.over

    def dataset(self, run: Run, options: DatasetOptions) -> tf.data.Dataset:
        from daliaug.outputs.tfdata.cv_dataset import cv_dataset

        return cv_dataset(run, options)


class TfBridge(Bridge):
    """TensorFlow: ``tf.data`` maps (:mod:`~daliaug.outputs.tfdata.tf_dataset`), their first
    epoch read as NumPy; it has no host loader (its ops run inside ``tf.data``)."""

    def opener(self) -> Callable[..., Loader]:
        raise BackendError(
            "the TensorFlow engine feeds tf.data only; the JAX, PyTorch and NumPy outputs run "
            "DALI or OpenCV (backend: cpu, gpu, opencv or auto)"
        )

    def first_epoch(self, run: Run, params: np.ndarray | None) -> Iterator[Batch]:
        import tensorflow as tf

        from daliaug.outputs.tfdata.tf_dataset import tf_dataset

        for batch in tf_dataset(run, params=params):
            yield tuple(tf.nest.map_structure(lambda t: t.numpy(), batch))

    def dataset(self, run: Run, options: DatasetOptions) -> tf.data.Dataset:
        from daliaug.outputs.tfdata.tf_dataset import tf_dataset

        return tf_dataset(run, options)


BRIDGES: dict[EngineName, Bridge] = {"dali": DaliBridge(), "tf": TfBridge(), "opencv": CvBridge()}
"""One bridge per engine of :data:`~daliaug.engine_names.ENGINE_NAMES`."""


def bridge(engine: str) -> Bridge:
    """The bridges out of the engine called ``engine``."""
    if engine not in BRIDGES:
        raise ValueError(f"no engine {engine!r}; engines: {', '.join(ENGINE_NAMES)}")
    return BRIDGES[engine]  # type: ignore[index]


def engine_batches(
    engine: EngineName,
    config: Config,
    samples: SampleSet,
    device: Device,
    *,
    params: np.ndarray | None = None,
) -> Iterator[Any]:
    """The first epoch of engine ``engine`` on ``device`` over ``samples`` (checked) as NumPy
    ``(images, targets)`` batches (parity, preview; detection targets as Keras' dict);
    ``params`` (one row of ``plan.param_keys`` per sample) replaces the random draws."""
    run = Run.of(config, samples, Choice(engine, device))
    return bridge(engine).first_epoch(run, params)


def engine_dataset(run: Run, options: DatasetOptions) -> tf.data.Dataset:
    """The ``tf.data`` dataset of the run's engine graph over its samples (checked), one
    epoch per iteration, as ``options.clock`` numbers them; the clock is its ``epoch_clock``."""
    return bridge(run.engine).dataset(run, options)
