"""daliaug: GPU image decoding and augmentation for Keras training with NVIDIA DALI.

``import daliaug`` imports neither TensorFlow nor DALI; :func:`make_dataset` imports them when
called, :func:`build_pipeline` DALI only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daliaug.config import Config, load_config
from daliaug.errors import (
    BackendError,
    BackendWarning,
    ConfigError,
    DaliaugError,
    DataError,
    DataWarning,
)

if TYPE_CHECKING:
    import tensorflow as tf
    from nvidia.dali.pipeline import Pipeline

    from daliaug.dataset import Engine

__version__ = "0.2.0"


def make_dataset(config: Any, **kwargs: Any) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of ``(images, labels)`` batches for ``model.fit``.

    ``config`` is anything :func:`load_config` accepts. See
    :func:`daliaug.dataset.make_dataset` for the keyword arguments.
    """
    from daliaug.dataset import make_dataset as _make_dataset

    return _make_dataset(config, **kwargs)


def describe(dataset: Any) -> Engine:
    """Which engine (DALI or TensorFlow ops) and device (CPU or GPU) computes a dataset made by
    :func:`make_dataset`; see :func:`daliaug.dataset.describe`."""
    from daliaug.dataset import describe as _describe

    return _describe(dataset)


def build_pipeline(config: Any, device: str | None = None, **kwargs: Any) -> Pipeline:
    """The ``nvidia.dali.Pipeline`` of a config, reading its source itself (not built), for
    driving DALI directly or through DALI's own iterators. ``device``: ``"gpu"`` or ``"cpu"``
    (default: where ``backend`` runs DALI here). See
    :func:`daliaug.backends.dali.loader.build_pipeline` for the keyword arguments."""
    from daliaug.backends.dali.loader import build_pipeline as _build_pipeline

    return _build_pipeline(config, device, **kwargs)


__all__ = [
    "BackendError",
    "BackendWarning",
    "Config",
    "ConfigError",
    "DaliaugError",
    "DataError",
    "DataWarning",
    "__version__",
    "build_pipeline",
    "describe",
    "load_config",
    "make_dataset",
]
