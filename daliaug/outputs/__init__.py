"""Outputs: what ``make_dataset`` hands each framework. ``tensorflow``: a ``tf.data.Dataset``;
``jax`` and ``torch``: the batches Keras' ``fit`` takes on those backends, as their arrays
(:mod:`~daliaug.outputs.jax`, :mod:`~daliaug.outputs.torch`), with no TensorFlow; ``numpy``:
NumPy batches for any loop (:class:`~daliaug.outputs.batches.Batches`). All run the epochs of
:mod:`daliaug.epoch`. Importing this package imports no framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from daliaug.config import Config
from daliaug.engines.select import Device
from daliaug.errors import ConfigError
from daliaug.outputs.options import DatasetOptions
from daliaug.sources.sample_set import SampleSet

if TYPE_CHECKING:
    from daliaug.outputs.batches import Batches

FRAMEWORKS = ("tensorflow", "jax", "torch", "numpy")


def framework_of(framework: str | None) -> str:
    """``framework`` checked, or by default the backend Keras runs on
    (``keras.backend.backend()``, from ``KERAS_BACKEND`` or ``keras.json``)."""
    if framework is None:
        try:
            import keras
        except ImportError:
            raise ConfigError(
                "framework: Keras is not installed, so make_dataset cannot follow its backend; "
                f"pass framework= one of {', '.join(FRAMEWORKS)}"
            ) from None
        framework = keras.backend.backend()
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
    if framework == "jax":
        from daliaug.outputs.jax import jax_dataset

        return jax_dataset(config, samples, device, options, initial_epoch)
    if framework == "torch":
        from daliaug.outputs.torch import torch_dataset

        return torch_dataset(config, samples, device, options, initial_epoch)
    from daliaug.outputs.batches import dali_loaders, local_batches

    shards = [(config, samples, options)]
    return local_batches(shards, dali_loaders(shards, tuple, device), initial_epoch)
