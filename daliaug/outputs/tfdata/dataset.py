"""The ``tf.data`` dataset of one engine's graph: DALI's through ``DALIDatasetWithInputs``
(:mod:`~daliaug.outputs.tfdata.dali_dataset`), TensorFlow's as ``tf.data`` maps
(:mod:`~daliaug.outputs.tfdata.tf_dataset`), OpenCV's NumPy batches
(:mod:`~daliaug.outputs.tfdata.cv_dataset`), and whether TensorFlow sees the GPU that a
``tf.data`` dataset of DALI on the GPU needs. Importing this module imports neither TensorFlow
nor DALI."""

from __future__ import annotations

from typing import TYPE_CHECKING

from daliaug.config import Config
from daliaug.engines.select import Device
from daliaug.outputs import tensorflow_extra
from daliaug.outputs.options import DatasetOptions
from daliaug.sources.sample_set import SampleSet

if TYPE_CHECKING:
    import tensorflow as tf


def engine_dataset(
    name: str,
    config: Config,
    samples: SampleSet,
    device: Device,
    options: DatasetOptions,
) -> tf.data.Dataset:
    """The ``tf.data`` dataset of engine ``name``'s graph over ``samples`` (checked), one epoch
    per iteration, as ``options.clock`` numbers them; the clock is its ``epoch_clock``."""
    if name == "dali":
        tensorflow_extra("nvidia.dali_tf_plugin")
        from daliaug.outputs.tfdata.dali_dataset import dali_dataset

        return dali_dataset(config, samples, device, options)
    if name == "opencv":
        from daliaug.outputs.tfdata.cv_dataset import cv_dataset

        return cv_dataset(config, samples, options)
    from daliaug.outputs.tfdata.tf_dataset import tf_dataset

    return tf_dataset(config, samples, options)


def tf_sees_gpu() -> bool:
    """Whether TensorFlow sees a GPU, which a ``tf.data`` dataset of DALI on the GPU needs
    (:func:`~daliaug.engines.select.choose` asks only then: this imports TensorFlow)."""
    tensorflow_extra("nvidia.dali_tf_plugin")
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))
