"""``make_dataset``, the one front door of the outputs: a config prepared once
(:func:`~daliaug.prepare.prepare`), its weights and epoch clock checked once, then handed to
the framework's output, peers of one another: ``tf.data`` (:mod:`daliaug.outputs.tfdata`, one
dataset or one per replica under a ``tf.distribute`` strategy), JAX (:mod:`daliaug.outputs.jax`),
Grain (:mod:`daliaug.outputs.grain`), PyTorch (:mod:`daliaug.outputs.torch`) and NumPy
(:mod:`daliaug.outputs.batches`).

With DALI (``backend`` auto, gpu or cpu) the DALI graph does the pixels; with ``backend: tf``
(or auto without DALI) TensorFlow ops do (``tf.data`` only); with ``backend: opencv`` OpenCV and
NumPy in threads do (every output). Whichever, the epochs are :mod:`daliaug.epoch`'s.
Importing this module imports no framework; the chosen output does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from daliaug.config import Config, load_with_targets
from daliaug.engine_names import Choice, Device, EngineName
from daliaug.engines.select import choose
from daliaug.epoch import EpochClock
from daliaug.errors import ConfigError
from daliaug.outputs import framework_of, grain_extra, keras_started, tensorflow_extra
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.resumable import resumable
from daliaug.outputs.tfdata.dataset import tf_sees_gpu
from daliaug.prepare import prepare
from daliaug.reader_checkpoints import ReaderCheckpoints
from daliaug.resume import State
from daliaug.run import Run
from daliaug.sources.sample_set import SampleSet

if TYPE_CHECKING:
    import tensorflow as tf

    from daliaug.outputs.batches import Batches
    from daliaug.outputs.grain import GrainBatches

_ENGINE = "_daliaug_engine"
"""The attribute of a dataset made by :func:`make_dataset` that :func:`describe` reads."""


@dataclass(frozen=True)
class DatasetEngine:
    """Which engine computes a dataset's batches, and on which device."""

    name: EngineName
    """``dali`` (NVIDIA DALI's operators), ``tf`` (TensorFlow ops) or ``opencv`` (OpenCV and
    NumPy in threads)."""
    device: Device
    """Where the engine runs (the TensorFlow backend always augments on the CPU)."""
    replicas: int = 1
    """Pipelines this process runs side by side: one per replica of a ``tf.distribute``
    strategy, one per local device of a JAX ``keras.distribution``."""

    def __str__(self) -> str:
        names = {"tf": "TensorFlow ops", "opencv": "OpenCV on the CPU"}
        where = names.get(self.name, f"DALI on the {self.device.upper()}")
        return where if self.replicas == 1 else f"{where}, {self.replicas} replicas"


def describe(dataset: Any) -> DatasetEngine:
    """The :class:`DatasetEngine` that computes a dataset made by :func:`make_dataset` here (any
    framework's output) or a :class:`~daliaug.outputs.dali_loader.DaliLoader` (``backend: auto``
    picks one per machine, source kind and plan); ``str()`` of it reads "DALI on the GPU".
    Anything else: a :class:`~daliaug.errors.ConfigError` naming what it was given."""
    engine = getattr(dataset, _ENGINE, None)
    if engine is not None:
        return engine
    from daliaug.outputs.dali_loader import DaliLoader

    if isinstance(dataset, DaliLoader):
        return DatasetEngine("dali", dataset.device)
    given = f"{type(dataset).__module__}.{type(dataset).__qualname__}"
    if isinstance(dataset, tuple):
        hint = "; for subset: both, describe the training and the validation dataset each"
    elif hasattr(dataset, "element_spec"):
        hint = (
            "; a tf.data stage added after make_dataset's dataset (.map, .batch, ...) makes a "
            "new dataset that does not know its engine: describe the one make_dataset returned"
        )
    else:
        hint = ""
    raise ConfigError(
        f"describe takes a dataset returned by daliaug.make_dataset (tf.data, JAX, Grain, PyTorch "
        f"or NumPy batches) or a DaliLoader, got a {given}{hint}"
    )


def make_dataset(
    config: Any,
    *,
    samples: SampleSet | None = None,
    x: Any = None,
    y: Any = None,
    initial_epoch: int = 0,
    class_weight: Mapping[int, float] | None = None,
    sample_weight: Any = None,
    strategy: Any = None,
    framework: str | None = None,
    state: State | Mapping[str, Any] | str | None = None,
) -> tf.data.Dataset | tf.distribute.DistributedDataset | Batches | GrainBatches | tuple[Any, Any]:
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

    A directory source with ``subset: both`` gives ``(training, validation)``, as Keras'
    ``image_dataset_from_directory`` does: the validation dataset from the config's
    :meth:`~daliaug.config.Config.subsets` (no shuffling, no random augmentation).

    With a ``tf.distribute`` ``strategy`` the result is a distributed dataset for ``model.fit``
    under that strategy: one pipeline per replica on the replica's device, ``batch_size`` the
    global batch (see :mod:`daliaug.outputs.tfdata.replicas`).

    ``framework`` (default: Keras' backend) picks the output: ``tensorflow`` gives a
    ``tf.data.Dataset`` (needs the ``tensorflow`` extra), ``jax`` and ``torch`` the batches
    Keras' ``fit`` takes on those backends, ``grain`` the JAX batches as a ``grain.IterDataset``
    with checkpointable iterators (the ``grain`` extra, :mod:`daliaug.outputs.grain`),
    ``numpy`` NumPy batches.

    ``state`` (a :class:`~daliaug.resume.State`, its dictionary or JSON, taken of a dataset of
    the same config and samples) starts the stream where the state was taken, mid-epoch
    included: the first iteration is the rest of that epoch, with exactly the batches the
    stream would have given from there, none before it made. NumPy, JAX and PyTorch batches
    give their state with ``get_state()`` (``state_dict()``); a ``tf.data`` dataset with
    ``state_at(epoch, batches)``, for the batches of that epoch consumed so far. A config
    without a ``seed`` takes the state's.
    """
    if initial_epoch < 0:
        raise ConfigError(f"initial_epoch: must be 0 or more, got {initial_epoch}")
    if state is not None and initial_epoch:
        raise ConfigError("initial_epoch: give a state or an initial epoch, not both")
    framework = framework_of(framework)
    if framework == "tensorflow":
        tensorflow_extra("tensorflow")
    elif strategy is not None:
        raise ConfigError(
            f"strategy: a tf.distribute strategy needs framework='tensorflow', not {framework!r}"
            " (for JAX, use keras.distribution.DataParallel)"
        )
    config = load_with_targets(config, y)
    if config.source.both:
        if samples is not None or x is not None or sample_weight is not None:
            raise ConfigError("source.subset: both reads the folder; give no samples, x or weights")
        training, validation = config.subsets()
        kwargs = dict(class_weight=class_weight, strategy=strategy, framework=framework)
        return (
            make_dataset(training, initial_epoch=initial_epoch, state=state, **kwargs),
            make_dataset(validation, **kwargs),
        )
    state = None if state is None else State.of(state)
    seed = None if state is None else state.seed  # a config without one resumes the state's
    choice = choose(config, framework, tf_sees_gpu)
    run = prepare(config, choice, samples=samples, x=x, y=y, seed=seed)
    samples = run.samples
    samples.check_readable()
    weights = None if class_weight is None else _class_weights(config, samples, class_weight)
    per_sample = None if sample_weight is None else _sample_weights(samples, sample_weight)
    options = DatasetOptions(
        class_weights=weights,
        sample_weights=per_sample,
        clock=EpochClock(initial_epoch),
        resumes=state is not None,
        readers=ReaderCheckpoints(),
    )
    if strategy is None and options.weighs and config.label_mode == "none":
        raise ConfigError("label_mode: 'none' yields the images alone, without weights")
    if framework == "tensorflow":
        dataset = _tf_data(run, options, strategy)
    else:
        dataset = _batches(framework, run, options, initial_epoch)
    dataset = resumable(dataset, run, state, strategy, options.readers)
    return _grain(dataset, run.seed) if framework == "grain" else dataset


def _grain(batches: Batches, seed: int) -> GrainBatches:
    """The JAX output's ``batches`` (their stream and state set) as a Grain dataset."""
    from daliaug.outputs.grain import GrainBatches

    dataset = GrainBatches(batches, seed)
    setattr(dataset, _ENGINE, getattr(batches, _ENGINE))
    return dataset


def _tf_data(run: Run, options: DatasetOptions, strategy: Any) -> Any:
    """The ``tf.data`` output: one dataset, or one per replica of ``strategy``."""
    if strategy is not None:
        from daliaug.outputs.tfdata.replicas import distributed_dataset

        dataset = distributed_dataset(run, strategy, options)
        return _described(dataset, run.choice, strategy.num_replicas_in_sync)
    from daliaug.outputs.bridges import engine_dataset

    return _described(engine_dataset(run, options), run.choice, 1)


def _batches(
    framework: str, run: Run, options: DatasetOptions, initial_epoch: int
) -> Batches | GrainBatches:
    """The batches of ``framework`` (``jax``, ``torch``, ``grain`` or ``numpy``) of the run,
    computed by the chosen engine (DALI or OpenCV) on its device."""
    if options.weighs:
        run.samples.check_reader_weights(framework)
    if framework == "grain":
        grain_extra()
    if framework in ("jax", "torch", "grain"):  # Keras data adapters (Grain wraps the JAX ones)
        keras_started("jax" if framework == "grain" else framework)
    if framework in ("jax", "grain"):
        from daliaug.outputs.jax import jax_dataset

        batches = jax_dataset(run, options, initial_epoch)
    elif framework == "torch":
        from daliaug.outputs.torch import torch_dataset

        batches = torch_dataset(run, options, initial_epoch)
    else:
        from daliaug.outputs.batches import host_loaders, local_batches

        shards = [(run, options)]
        batches = local_batches(shards, host_loaders(shards, tuple), initial_epoch)
    return _described(batches, run.choice, batches.pipelines)


def _described(dataset: Any, choice: Choice, replicas: int) -> Any:
    """``dataset``, marked with the engine that computes it (for :func:`describe`)."""
    setattr(dataset, _ENGINE, DatasetEngine(choice.engine, choice.device, replicas))
    return dataset


def _sample_weights(samples: SampleSet, sample_weight: Any) -> np.ndarray:
    """One weight per sample, checked."""
    samples.check_sample_weights()
    weights = np.asarray(sample_weight, dtype=np.float32).reshape(-1)
    if len(weights) != len(samples):
        raise ConfigError(
            f"sample_weight: {len(weights)} weights for {len(samples)} samples; give one each"
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ConfigError("sample_weight: weights must be finite and >= 0")
    return weights


def _class_weights(
    config: Config, samples: SampleSet, class_weight: Mapping[int, float]
) -> np.ndarray:
    """Keras' ``class_weight`` as one weight per class, checked."""
    per = "pixel" if config.source.segmentation else "box" if samples.has_boxes else None
    if per is not None:
        raise ConfigError(
            f"class_weight: class weights need one label per sample; "
            f"{'segmentation masks' if per == 'pixel' else 'detection targets'} have a class "
            f"per {per} (weigh the classes in the loss instead)"
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
