"""Backends: each one computes the feed protocol's batches with its own primitives.

A backend is a folder with the same modules (``math``: the plan's primitives, ``image``: decode,
resample, recolour, normalize and the targets, ``pipeline``: the graph of one batch,
``dataset``: what ``model.fit`` gets) and one object implementing :class:`Backend`. What they
share sits beside them: :mod:`~daliaug.backends.feed` (the feed protocol and its host side),
:mod:`~daliaug.backends.streams` (the epochs as ``tf.data`` streams) and
:mod:`~daliaug.backends.select` (which backend and device a config gets). Importing this
package imports neither TensorFlow nor DALI.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from daliaug.backends.select import Device, resolve_backend
from daliaug.config import Config
from daliaug.epoch import EpochClock, Epochs
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples

if TYPE_CHECKING:
    import tensorflow as tf

NAMES = ("dali", "tf")


@dataclass(frozen=True)
class DatasetOptions:
    """How a dataset runs its epochs beyond what the config says."""

    clock: EpochClock | None = None
    """The dataset's epoch clock (one per ``make_dataset``, shared by all its replicas); by
    default a new one counting from 0."""
    class_weights: np.ndarray | None = None
    """One weight per class: batches become ``(images, targets, weights)``."""
    length: int | None = None
    """Positions per epoch, where replicas pad or cut to equal batch counts (see
    :class:`~daliaug.epoch.Epochs`)."""
    weighted: bool = False
    """Yield ``(images, targets, weights)`` even without class weights (padding weighs 0)."""
    place: str | None = None
    """The TensorFlow device to place the dataset on (a replica's device); default: the host
    CPU, or DALI's GPU for DALI on the GPU."""
    sample_weights: np.ndarray | None = None
    """One weight per sample (column sources), times its class weight if there are any."""

    @property
    def weighs(self) -> bool:
        """Whether batches carry weights."""
        return self.weighted or self.class_weights is not None or self.sample_weights is not None

    def weights(self, num_classes: int) -> np.ndarray | None:
        """The per-class weights of a weighted dataset (ones without class weights), else
        ``None``."""
        if self.class_weights is not None or not self.weighs:
            return self.class_weights
        return np.ones(num_classes, np.float32)

    def per_sample(self, samples: Samples) -> np.ndarray | None:
        """Each sample's weight (its own times its class's) for a weighted dataset, else
        ``None``."""
        if not self.weighs:
            return None
        weights = np.ones(len(samples), np.float32)
        if self.sample_weights is not None:
            weights = weights * np.asarray(self.sample_weights, np.float32)
        if self.class_weights is not None and samples.labels is not None:
            weights = weights * self.class_weights[samples.labels]
        return weights

    def epochs(self, config: Config, size: int) -> Epochs:
        return Epochs.of(config, size, self.length)

    def epoch_clock(self) -> EpochClock:
        return self.clock or EpochClock()


DEFAULT_OPTIONS = DatasetOptions()


class Backend(ABC):
    """What a backend implements. Both methods run the config's plan on ``samples`` (already
    prepared and checked) with the epochs of :mod:`daliaug.epoch`."""

    name: ClassVar[str]

    @abstractmethod
    def dataset(
        self,
        config: Config,
        samples: Samples | RecordSamples,
        device: Device,
        options: DatasetOptions = DEFAULT_OPTIONS,
    ) -> tf.data.Dataset:
        """A ``tf.data.Dataset`` of ``(images, targets[, weights])`` batches, one epoch per
        iteration, as ``options.clock`` numbers them; the clock is its ``epoch_clock``."""

    @abstractmethod
    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        """The files of ``paths`` this backend cannot decode on ``device`` (GPU ``device_id``
        for ``gpu``), with the reason (the full check, :mod:`daliaug.backends.verify`)."""

    @abstractmethod
    def batches(
        self,
        config: Config,
        samples: Samples,
        device: Device,
        *,
        params: np.ndarray | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The first epoch as NumPy ``(images, targets)`` batches; ``params`` (one row of
        ``plan.param_keys`` per sample) replaces the random draws."""


def backend(name: str) -> Backend:
    """The backend called ``name`` (imports it, and with it its framework)."""
    if name not in NAMES:
        raise ValueError(f"no backend {name!r}; backends: {', '.join(NAMES)}")
    return importlib.import_module(f"daliaug.backends.{name}").BACKEND


def select_backend(config: Config, for_dataset: bool = False) -> tuple[Backend, Device]:
    """The backend and device the config runs on here (see :func:`resolve_backend`); with
    ``for_dataset``, for a ``tf.data`` dataset, where DALI on the GPU needs TensorFlow to see
    the GPU too (:func:`daliaug.backends.dali.dataset.placement`, which imports
    TensorFlow)."""
    placement = resolve_backend(config)
    if for_dataset and placement == "gpu":
        from daliaug.backends.dali.dataset import placement as dataset_placement

        placement = dataset_placement(placement, config)
    return (backend("tf"), "cpu") if placement == "tf" else (backend("dali"), placement)
