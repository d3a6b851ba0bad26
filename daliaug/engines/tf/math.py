"""The array namespace (:class:`~daliaug.kernels.arrays.Arrays`) on TensorFlow tensors: what the
plan evaluator runs on in the graph (TFRecords, whose image sizes only the graph knows) and what
the kernels written once (:mod:`daliaug.kernels.formulas`) and the target encoders
(:mod:`daliaug.kernels.targets`) run on in the TF engine's graphs."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, ClassVar

import tensorflow as tf

from daliaug.algebra import Math, Scalar


class TfArrays:
    """:class:`~daliaug.kernels.arrays.Arrays` on TensorFlow tensors. ``sample``: the index of
    the sample computed on its own (``each_sample`` of :mod:`daliaug.engines.tf.pixels`), if
    one is."""

    math = Math.of(tf.math)
    sample: ClassVar[ContextVar[tf.Tensor | None]] = ContextVar("daliaug_tf_sample", default=None)

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

    def of_samples(self, value: Any) -> Any:
        """A ``(N, ...)`` tensor's row for the sample computed on its own, as ``(1, ...)``
        (every value as it is outside ``each_sample``)."""
        i = self.sample.get()
        if i is None or not isinstance(value, tf.Tensor) or not value.shape.rank:
            return value
        return value[i][None]

    def per_sample(self, value: Any, rank: int) -> tf.Tensor:
        return tf.reshape(tf.cast(self.of_samples(value), tf.float32), [-1] + [1] * (rank - 1))

    def each(self, value: Any, count: Any) -> tf.Tensor:
        return tf.broadcast_to(tf.cast(self.of_samples(value), tf.float32), [count])

    shape = staticmethod(tf.shape)

    @staticmethod
    def index(x: Any) -> tf.Tensor:
        return tf.cast(x, tf.int32)

    @staticmethod
    def ints(x: Any) -> tf.Tensor:
        return tf.cast(x, tf.int32)

    @staticmethod
    def cast(x: Any, dtype: str) -> tf.Tensor:
        return tf.cast(x, tf.as_dtype(dtype))

    arange = staticmethod(tf.range)
    where = staticmethod(tf.where)
    clip = staticmethod(tf.clip_by_value)
    floor = staticmethod(tf.floor)
    minimum = staticmethod(tf.minimum)
    reshape = staticmethod(tf.reshape)
    transpose = staticmethod(tf.transpose)
    concat = staticmethod(tf.concat)
    stack = staticmethod(tf.stack)

    @staticmethod
    def pad(x: Any, pads: Sequence[Sequence[int]], mode: str, value: float = 0.0) -> tf.Tensor:
        return tf.pad(x, pads, mode.upper(), constant_values=value)

    amin = staticmethod(tf.reduce_min)
    amax = staticmethod(tf.reduce_max)
    mean = staticmethod(tf.reduce_mean)
    sum = staticmethod(tf.reduce_sum)
    cumsum = staticmethod(tf.cumsum)
    gather = staticmethod(tf.gather)

    @staticmethod
    def counts(ids: Any, length: Any) -> tf.Tensor:
        return tf.math.unsorted_segment_sum(tf.ones_like(ids, tf.float32), ids, length)

    @staticmethod
    def one_hot(index: Any, count: int) -> tf.Tensor:
        return tf.one_hot(index, count, dtype=tf.float32)

    @staticmethod
    def normal(shape: Any, mean: float, std: float, seed: Any) -> tf.Tensor:
        """The stateless normal keyed by the first sample's ``seed`` (of the whole batch, also
        within ``each_sample``)."""
        first = tf.reshape(tf.cast(seed, tf.float32), [-1])[0]
        key = tf.stack([tf.cast(first * 2.0**31, tf.int32), tf.constant(23, tf.int32)])
        return tf.random.stateless_normal(shape, key, mean, std, tf.float32)


TF_ARRAYS = TfArrays()
