"""Outputs: what ``make_dataset`` hands each framework. ``tensorflow``: a ``tf.data.Dataset``;
``jax`` and ``torch``: the batches Keras' ``fit`` takes on those backends, as their arrays
(:mod:`~daliaug.outputs.jax`, :mod:`~daliaug.outputs.torch`), with no TensorFlow; ``numpy``:
NumPy batches for any loop (:class:`~daliaug.outputs.batches.Batches`). All run the epochs of
:mod:`daliaug.epoch`. Importing this package imports no framework.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Any

from daliaug.config import Config
from daliaug.engines.select import Device
from daliaug.errors import ConfigError
from daliaug.outputs.options import DatasetOptions
from daliaug.sources.sample_set import SampleSet

if TYPE_CHECKING:
    from daliaug.outputs.batches import Batches

FRAMEWORKS = ("tensorflow", "jax", "torch", "numpy")


def keras_started(framework: str | None) -> Any:
    """Keras, imported; a ``ConfigError`` where it is missing or its backend cannot start
    (``KERAS_BACKEND`` or ``keras.json`` naming TensorFlow on a host without it, say).
    ``framework``: the one asked for, named in the fix."""
    try:
        import keras
    except ImportError as e:
        if importlib.util.find_spec("keras") is None:
            raise ConfigError(
                "framework: Keras is not installed, so make_dataset cannot follow its backend; "
                f"pass framework= one of {', '.join(FRAMEWORKS)}"
            ) from None
        backend = os.environ.get("KERAS_BACKEND") or "the one in ~/.keras/keras.json"
        missing = e.name.split(".")[0] if e.name else str(e)
        fix = f"KERAS_BACKEND={framework}" if framework else "KERAS_BACKEND to jax or torch"
        raise ConfigError(
            f"framework: Keras cannot start on its backend ({backend}): {missing} is not "
            f"installed; set {fix} before Keras is imported, or install that backend"
        ) from None
    return keras


def framework_of(framework: str | None) -> str:
    """``framework`` checked, or by default the backend Keras runs on
    (``keras.backend.backend()``, from ``KERAS_BACKEND`` or ``keras.json``)."""
    if framework is None:
        framework = keras_started(None).backend.backend()
    if framework not in FRAMEWORKS:
        raise ConfigError(f"framework: {framework!r} is not one of {', '.join(FRAMEWORKS)}")
    return framework


def framework_batches(
    framework: str,
    config: Config,
    samples: SampleSet,
    device: Device,
    options: DatasetOptions,
    initial_epoch: int,
) -> Batches:
    """The batches of ``framework`` (``jax``, ``torch`` or ``numpy``) for ``samples``
    (prepared and checked), computed by DALI on ``device``."""
    if options.weighs:
        samples.check_reader_weights(framework)
    if framework in ("jax", "torch"):
        keras_started(framework)  # their batches are Keras data adapters
    if framework == "jax":
        from daliaug.outputs.jax import jax_dataset

        return jax_dataset(config, samples, device, options, initial_epoch)
    if framework == "torch":
        from daliaug.outputs.torch import torch_dataset

        return torch_dataset(config, samples, device, options, initial_epoch)
    from daliaug.outputs.batches import dali_loaders, local_batches

    shards = [(config, samples, options)]
    return local_batches(shards, dali_loaders(shards, tuple, device), initial_epoch)
