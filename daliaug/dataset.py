"""``make_dataset``: a config's ``tf.data.Dataset`` for ``model.fit``, from the backend it picks.

With DALI (``backend`` auto, gpu or cpu) the DALI graph does the pixels; with ``backend: tf``
(or auto without DALI) TensorFlow ops do. Either way the epochs are :mod:`daliaug.epoch`'s.
Importing this module imports neither TensorFlow nor DALI; the chosen backend does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from daliaug.backends import DatasetOptions, select_backend
from daliaug.backends.verify import checked_samples
from daliaug.config import Config, load_config
from daliaug.epoch import EpochClock
from daliaug.errors import ConfigError
from daliaug.sources.base import Samples
from daliaug.sources.prepare import prepare_samples
from daliaug.sources.tfrecord import RecordSamples

if TYPE_CHECKING:
    import tensorflow as tf

_ENGINE = "_daliaug_engine"
"""The attribute of a dataset made by :func:`make_dataset` that :func:`describe` reads."""


@dataclass(frozen=True)
class Engine:
    """Which engine computes a dataset's batches, and on which device."""

    name: Literal["dali", "tf"]
    """``dali`` (NVIDIA DALI's operators) or ``tf`` (TensorFlow ops)."""
    device: Literal["cpu", "gpu"]
    """Where the engine runs (the TensorFlow backend always augments on the CPU)."""
    replicas: int = 1
    """Pipelines under a ``tf.distribute`` strategy, one per replica."""

    def __str__(self) -> str:
        where = "TensorFlow ops" if self.name == "tf" else f"DALI on the {self.device.upper()}"
        return where if self.replicas == 1 else f"{where}, {self.replicas} replicas"


def describe(dataset: Any) -> Engine:
    """The :class:`Engine` a dataset made by :func:`make_dataset` got here (``backend: auto``
    picks one per machine and source kind); ``str()`` of it reads "DALI on the GPU"."""
    engine = getattr(dataset, _ENGINE, None)
    if engine is None:
        raise ValueError(
            "describe takes a dataset returned by daliaug.make_dataset (a tf.data stage added "
            "after it, such as .map, makes a new dataset that does not know its engine)"
        )
    return engine


def make_dataset(
    config: Any,
    *,
    samples: Samples | RecordSamples | None = None,
    x: Any = None,
    y: Any = None,
    initial_epoch: int = 0,
    class_weight: Mapping[int, float] | None = None,
    sample_weight: Any = None,
    strategy: Any = None,
) -> tf.data.Dataset | tf.distribute.DistributedDataset:
    """A dataset of ``(images, labels or masks)`` batches, augmented as the config says.

    ``config`` is anything :func:`~daliaug.config.load_config` takes. For an ``arrays``
    source pass the uint8 images ``x`` (N, H, W, C) and integer labels ``y``; ``samples``
    replaces the config's source altogether.

    One iteration is one epoch: every sample exactly once, in a new order each epoch when
    ``shuffle``; the last batch is smaller unless ``drop_remainder``. The first iteration is
    epoch ``initial_epoch`` (the same order and parameters as in a run that started at 0), so
    ``model.fit(..., initial_epoch=k)`` resumes the data stream too. ``class_weight`` (Keras'
    mapping from class index to weight) makes the batches ``(images, labels, weights)``, the
    weights computed in the pipeline: use it instead of ``model.fit(class_weight=...)``, which
    adds a CPU stage after the dataset (not allowed after a GPU-placed DALI dataset);
    ``sample_weight`` (one number per sample of the source, or of ``x``) does the same per sample
    (times the class weight when both are given). Images
    come out of DALI on the GPU with ``backend`` gpu (or auto on a GPU machine), else from DALI
    on the CPU, or from TensorFlow ops with ``backend: tf`` (or auto without DALI), with the
    same element spec.

    With a ``tf.distribute`` ``strategy`` the result is a distributed dataset for ``model.fit``
    under that strategy: one pipeline per replica on the replica's device, ``batch_size`` the
    global batch (see :mod:`daliaug.replicas`).
    """
    config = load_config(config)
    if initial_epoch < 0:
        raise ConfigError(f"initial_epoch: must be 0 or more, got {initial_epoch}")
    backend, device = select_backend(config, for_dataset=True)
    samples = prepare_samples(config, samples, x, y)
    decoder = f"{backend.name}-{device}"
    samples = checked_samples(config, samples, decoder, partial(backend.undecodable, device=device))
    if isinstance(samples, RecordSamples):
        from daliaug.backends.streams import check_record_keys

        check_record_keys(samples)
    weights = None if class_weight is None else _class_weights(config, samples, class_weight)
    per_sample = None if sample_weight is None else _sample_weights(samples, sample_weight)
    options = DatasetOptions(
        class_weights=weights, sample_weights=per_sample, clock=EpochClock(initial_epoch)
    )
    if strategy is not None:
        from daliaug.replicas import distributed_dataset

        dataset = distributed_dataset(config, samples, backend, device, strategy, options)
        replicas = strategy.num_replicas_in_sync
    else:
        if options.weighs and config.label_mode == "none":
            raise ConfigError("label_mode: 'none' yields the images alone, without weights")
        dataset, replicas = backend.dataset(config, samples, device, options), 1
    setattr(dataset, _ENGINE, Engine(backend.name, device, replicas))
    return dataset


def _sample_weights(samples: Samples | RecordSamples, sample_weight: Any) -> np.ndarray:
    """One weight per sample, checked."""
    if isinstance(samples, RecordSamples):
        raise ConfigError("sample_weight: TFRecords are streamed; weigh classes with class_weight")
    weights = np.asarray(sample_weight, dtype=np.float32).reshape(-1)
    if len(weights) != len(samples):
        raise ConfigError(
            f"sample_weight: {len(weights)} weights for {len(samples)} samples; give one each"
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ConfigError("sample_weight: weights must be finite and >= 0")
    return weights


def _class_weights(
    config: Config, samples: Samples | RecordSamples, class_weight: Mapping[int, float]
) -> np.ndarray:
    """Keras' ``class_weight`` as one weight per class, checked."""
    if config.source.segmentation:
        raise ConfigError(
            "class_weight: class weights need one label per sample; segmentation masks have a "
            "class per pixel (weigh the classes in the loss instead)"
        )
    table = np.ones(samples.num_classes, np.float32)
    for label, weight in class_weight.items():
        if not isinstance(label, (int, np.integer)) or not 0 <= label < samples.num_classes:
            raise ConfigError(
                f"class_weight: key {label!r} is not a class index (0..{samples.num_classes - 1})"
            )
        if not np.isfinite(weight) or weight < 0:
            raise ConfigError(f"class_weight: weight {weight!r} of class {label} is not >= 0")
        table[label] = weight
    return table
