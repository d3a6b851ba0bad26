"""daliaug: GPU image decoding and augmentation for Keras training with NVIDIA DALI.

``import daliaug`` imports neither TensorFlow nor DALI; :func:`make_dataset` imports them when
called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daliaug.config import Config, load_config
from daliaug.errors import BackendError, BackendWarning, ConfigError, DaliaugError, DataError

if TYPE_CHECKING:
    import tensorflow as tf

__version__ = "0.1.0"


def make_dataset(config: Any, **kwargs: Any) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of ``(images, labels)`` batches for ``model.fit``.

    ``config`` is anything :func:`load_config` accepts. See
    :func:`daliaug.dataset.make_dataset` for the keyword arguments.
    """
    from daliaug.dataset import make_dataset as _make_dataset

    return _make_dataset(config, **kwargs)


__all__ = [
    "BackendError",
    "BackendWarning",
    "Config",
    "ConfigError",
    "DaliaugError",
    "DataError",
    "__version__",
    "load_config",
    "make_dataset",
]
