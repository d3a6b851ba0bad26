"""TensorFlow primitives for the backend-neutral math, and stateless seeded draws."""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from daliaug.algebra import Canvas, Math, Scalar
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


def pack(values: Sequence[Scalar], batch: tf.Tensor) -> tf.Tensor:
    """Per-sample scalars (tensors or constants) as a ``(batch, len(values))`` float32 tensor."""
    return tf.stack([tf.broadcast_to(tf.cast(v, tf.float32), [batch]) for v in values], axis=1)


def draw_params(plan: Plan, seed: tf.Tensor, batch: tf.Tensor | int) -> tf.Tensor:
    """A ``(batch, len(plan.param_keys))`` float32 matrix of parameters drawn from ``seed``."""
    drawn = plan.draw(TfRandom(seed, [batch]))
    if not plan.param_keys:
        return tf.zeros([batch, 0], tf.float32)
    return pack([drawn[k] for k in plan.param_keys], batch)


def warp_batch(
    plan: Plan,
    rows: tf.Tensor,
    sizes: tf.Tensor,
    *,
    fuse_roi: bool,
    masks: bool,
    resize: bool = False,
) -> dict[str, tf.Tensor]:
    """The plan's per-sample inputs (:meth:`Plan.warp_inputs`) for a batch of parameter
    ``rows`` and images of ``sizes`` ((height, width) rows), shaped ``(batch, *shape)``."""
    batch = tf.shape(sizes)[0]
    params = {key: rows[:, i] for i, key in enumerate(plan.param_keys)}
    source = Canvas(h=tf.cast(sizes[:, 0], tf.float32), w=tf.cast(sizes[:, 1], tf.float32))
    values = plan.warp_inputs(params, source, MATH, fuse_roi=fuse_roi, masks=masks, resize=resize)
    return {
        name: tf.reshape(pack(v, batch), [-1, *plan.warp_input_shape(name)])
        for name, v in values.items()
    }
