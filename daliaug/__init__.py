"""daliaug: GPU image decoding and augmentation for Keras training with NVIDIA DALI.

``import daliaug`` imports neither TensorFlow nor DALI; :func:`make_dataset` imports them when
called, :func:`build_pipeline` DALI only, :func:`from_keras` and :func:`split_model` Keras.
Where a CUDA driver is present it turns TensorFlow's GPU memory growth on before TensorFlow's
runtime starts (:mod:`daliaug.cuda`), so that DALI finds GPU memory left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daliaug import cuda  # noqa: F401  (sets the GPU memory policy, see its docstring)
from daliaug.config import Config, load_config
from daliaug.errors import (
    BackendError,
    BackendWarning,
    CacheError,
    CacheWarning,
    ConfigError,
    DaliaugError,
    DataError,
    DataWarning,
)
from daliaug.version import __version__

if TYPE_CHECKING:
    from nvidia.dali.pipeline import Pipeline

    from daliaug.outputs.dataset import DatasetEngine


def make_dataset(config: Any, **kwargs: Any) -> Any:
    """The ``(images, targets)`` batches of one epoch per iteration, for ``model.fit``: a
    ``tf.data.Dataset`` on Keras' TensorFlow backend (or ``framework="tensorflow"``), batches
    that Keras' JAX and PyTorch backends take as they are, or NumPy batches
    (``framework="numpy"``).

    ``config`` is anything :func:`load_config` accepts. See
    :func:`daliaug.outputs.dataset.make_dataset` for the keyword arguments.

    Example::

        ds = daliaug.make_dataset("demo")  # pipelines/demo.yaml
        model.fit(ds, epochs=3)
    """
    from daliaug.outputs.dataset import make_dataset as _make_dataset

    return _make_dataset(config, **kwargs)


def describe(dataset: Any) -> DatasetEngine:
    """Which engine (DALI or TensorFlow ops) and device (CPU or GPU) computes a dataset made by
    :func:`make_dataset` (any framework's) or a ``DaliLoader``; see
    :func:`daliaug.outputs.dataset.describe`."""
    from daliaug.outputs.dataset import describe as _describe

    return _describe(dataset)


def build_pipeline(config: Any, device: str | None = None, **kwargs: Any) -> Pipeline:
    """The ``nvidia.dali.Pipeline`` of a config, reading its source itself (not built), for
    driving DALI directly or through DALI's own iterators. ``device``: ``"gpu"`` or ``"cpu"``
    (default: where ``backend`` runs DALI here). See
    :func:`daliaug.outputs.dali_loader.build_pipeline` for the keyword arguments."""
    from daliaug.outputs.dali_loader import build_pipeline as _build_pipeline

    return _build_pipeline(config, device, **kwargs)


_LAZY = {
    "DaliLoader": "daliaug.outputs.dali_loader",
    "DataCheckpoint": "daliaug.outputs.tfdata.checkpoint",
    "from_keras": "daliaug.keras.compile",
    "from_torchvision": "daliaug.torchvision.compile",
    "split_model": "daliaug.keras.split",
}
"""Public names imported on first use, the callable itself (no wrapper of daliaug's in between,
so that a warning it raises points at the user's line)."""


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported on first use: ``daliaug.DaliLoader``, a config's
    epochs as NumPy batches with DALI alone (no TensorFlow; see
    :class:`daliaug.outputs.dali_loader.DaliLoader`); ``daliaug.DataCheckpoint(step)``, a
    ``tf.data`` stream's place in a ``tf.train.Checkpoint`` (imports TensorFlow; see
    :class:`daliaug.outputs.tfdata.checkpoint.DataCheckpoint`);
    ``daliaug.from_keras(layers, source=...)``, the config that does what Keras' preprocessing
    layers do (imports Keras; see
    :func:`daliaug.keras.compile.from_keras`); ``daliaug.from_torchvision(transforms,
    source=...)``, the same for a torchvision v2 ``Compose`` (imports neither torch nor
    torchvision; see :func:`daliaug.torchvision.compile.from_torchvision`);
    ``daliaug.split_model(model)``, a model's
    leading augmentation layers as config fields and the model without them (see
    :func:`daliaug.keras.split.split_model`)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'daliaug' has no attribute {name!r}")


__all__ = [
    "BackendError",
    "BackendWarning",
    "CacheError",
    "CacheWarning",
    "Config",
    "ConfigError",
    "DaliLoader",
    "DaliaugError",
    "DataCheckpoint",
    "DataError",
    "DataWarning",
    "__version__",
    "build_pipeline",
    "describe",
    "from_keras",
    "from_torchvision",
    "load_config",
    "make_dataset",
    "split_model",
]
