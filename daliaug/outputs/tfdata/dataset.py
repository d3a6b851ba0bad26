"""Whether TensorFlow sees the GPU that a ``tf.data`` dataset of DALI on the GPU needs (each
engine's ``tf.data`` dataset is its bridge, :mod:`daliaug.outputs.bridges`). Importing this
module imports neither TensorFlow nor DALI."""

from __future__ import annotations

from daliaug.outputs import tensorflow_extra


def tf_sees_gpu() -> bool:
    """Whether TensorFlow sees a GPU, which a ``tf.data`` dataset of DALI on the GPU needs
    (:func:`~daliaug.engines.select.choose` asks only then: this imports TensorFlow)."""
    tensorflow_extra("nvidia.dali_tf_plugin")
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))
