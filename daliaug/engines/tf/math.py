"""TensorFlow primitives for the plan: the array namespace its evaluator runs on in the graph
(TFRecords, whose image sizes only the graph knows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from daliaug.algebra import Math, Scalar


class TfArrays:
    """The feed protocol's :class:`~daliaug.engines.feed.Arrays` on TensorFlow tensors."""

    math = Math.of(tf.math)

    @staticmethod
    def floats(x: Any) -> tf.Tensor:
        return tf.cast(x, tf.float32)

    @staticmethod
    def length(x: Any) -> tf.Tensor:
        return tf.shape(x)[0]

    @staticmethod
    def columns(values: Sequence[Scalar], count: Any) -> tf.Tensor:
        return tf.stack([tf.broadcast_to(tf.cast(v, tf.float32), [count]) for v in values], axis=1)

    @staticmethod
    def differs(rows: tf.Tensor, reference: Sequence[float]) -> tf.Tensor:
        differ = tf.reduce_any(tf.not_equal(rows, tf.constant(reference, tf.float32)), axis=1)
        return tf.cast(differ, tf.float32)


TF_ARRAYS = TfArrays()
