"""TensorFlow primitives for the backend-neutral math, and stateless seeded draws."""

from __future__ import annotations

import tensorflow as tf

from daliaug.algebra import Math, Scalar
from daliaug.plan import Plan

MATH = Math.of(tf.math)


class TfRandom:
    """Stateless draws of ``shape`` (one value per sample): draw ``k`` uses ``fold_in(seed, k)``,
    so the same ``seed`` reproduces the same values on any machine."""

    def __init__(self, seed: tf.Tensor, shape: tf.Tensor | list[int]) -> None:
        self.seed = seed
        self.shape = shape
        self.count = 0

    def _next_seed(self) -> tf.Tensor:
        self.count += 1
        return tf.random.experimental.stateless_fold_in(self.seed, self.count)

    def uniform(self, low: float, high: float) -> Scalar:
        if low == high:
            return float(low)
        return tf.random.stateless_uniform(
            self.shape, seed=self._next_seed(), minval=float(low), maxval=float(high)
        )

    def bernoulli(self, p: float) -> Scalar:
        if p in (0.0, 1.0):
            return float(p)
        draw = tf.random.stateless_uniform(self.shape, seed=self._next_seed())
        return tf.cast(draw < p, tf.float32)


def draw_params(plan: Plan, seed: tf.Tensor, batch: tf.Tensor) -> tf.Tensor:
    """A ``[batch, len(plan.param_keys)]`` float32 matrix of freshly drawn parameters."""
    drawn = plan.draw(TfRandom(seed, [batch]))
    columns = [
        tf.fill([batch], tf.constant(v, tf.float32))
        if isinstance(v, float)
        else tf.cast(v, tf.float32)
        for v in (drawn[k] for k in plan.param_keys)
    ]
    return tf.stack(columns, axis=1)
