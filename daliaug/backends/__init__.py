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
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from daliaug.backends.select import Device, resolve_backend
from daliaug.config import Config
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples

if TYPE_CHECKING:
    import tensorflow as tf

NAMES = ("dali", "tf")


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
        *,
        initial_epoch: int = 0,
    ) -> tf.data.Dataset:
        """A ``tf.data.Dataset`` of ``(images, targets)`` batches whose n-th iteration is
        epoch ``initial_epoch + n``."""

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


def select_backend(config: Config) -> tuple[Backend, Device]:
    """The backend and device the config runs on here (see :func:`resolve_backend`)."""
    placement = resolve_backend(config)
    return (backend("tf"), "cpu") if placement == "tf" else (backend("dali"), placement)
