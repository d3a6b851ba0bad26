"""Keras' ``standardize``: ``preprocessing_function``, ``rescale``, samplewise and featurewise
centring and scaling, ZCA whitening, in Keras' order.

``rescale`` and the featurewise statistics are one affine map per channel, so they become the
pipeline's own output normalization (in the DALI graph, on the GPU). The rest needs each whole
image (or a Python function) and runs after the pipeline in TensorFlow ops on the CPU
(:mod:`daliaug.keras.after_pipeline`); ``standardize(x)`` runs the same ops eagerly. Only Keras on
TensorFlow runs them (:mod:`daliaug.keras.backends`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from daliaug.keras.samples import Levels

if TYPE_CHECKING:
    import tensorflow as tf

EPSILON = 1e-6
"""What Keras adds to standard deviations before dividing by them."""

NOT_FIT = (
    "This ImageDataGenerator specifies `{}`, but it hasn't been fit on any training data. Fit it "
    "first by calling `.fit(numpy_data)`."
)
"""Keras' warning for a featurewise option or ZCA whitening used before ``fit``."""


@dataclass(frozen=True)
class Standardization:
    """The generator's standardization settings and fitted statistics."""

    preprocessing_function: Callable[[np.ndarray], Any] | None
    rescale: float | None
    samplewise_center: bool
    samplewise_std_normalization: bool
    featurewise_center: bool
    featurewise_std_normalization: bool
    zca_whitening: bool
    mean: np.ndarray | None
    std: np.ndarray | None
    zca_whitening_matrix: np.ndarray | None

    def warn_unfit(self, stacklevel: int) -> None:
        """Keras' warning for each requested statistic that ``fit`` has not computed
        (``stacklevel``: the caller's, as ``warnings.warn`` counts it)."""
        for option, value in (
            ("featurewise_center", self.mean),
            ("featurewise_std_normalization", self.std),
            ("zca_whitening", self.zca_whitening_matrix),
        ):
            if getattr(self, option) and value is None:
                warnings.warn(NOT_FIT.format(option), UserWarning, stacklevel=stacklevel + 1)

    @property
    def off_graph(self) -> bool:
        """Whether a stage after the pipeline is needed (else the pipeline normalizes)."""
        zca = self.zca_whitening and self.zca_whitening_matrix is not None
        samplewise = self.samplewise_center or self.samplewise_std_normalization
        return self.preprocessing_function is not None or samplewise or zca

    def output(self, channels: int, levels: Levels) -> dict[str, Any]:
        """The pipeline's output normalization (config ``output`` fields): the map from the
        pipeline's levels back to the input's values (``low + step * level``), then ``rescale``
        and the featurewise statistics, ``(x * rescale - mean) / (std + 1e-6)``, as one
        ``(level - mean') / std'``; nothing when a later stage does it all."""
        if self.off_graph:
            return {}
        r = self.rescale or 1.0
        mean = self.mean if self.featurewise_center else None
        std = self.std if self.featurewise_std_normalization else None
        scale = r * levels.step
        if mean is None and std is None and levels.low == 0 and scale > 0:
            return {"rescale": scale} if scale != 1 else {}
        m = np.zeros(channels) if mean is None else np.asarray(mean, np.float64).reshape(-1)
        s = np.ones(channels) if std is None else np.asarray(std, np.float64).reshape(-1) + EPSILON
        return {"mean": ((m - levels.low * r) / scale).tolist(), "std": (s / scale).tolist()}

    def apply(self, x: tf.Tensor, axes: list[int] | None, per_image: bool) -> tf.Tensor:
        """The whole chain on float32 ``x``; samplewise statistics over ``axes`` (``None``: all
        of ``x``, as Keras' ``standardize``); ``per_image``: call ``preprocessing_function`` on
        each image of a batch (else once on ``x``)."""
        import tensorflow as tf

        if self.preprocessing_function is not None:
            x = self._preprocess(x, per_image)
        if self.rescale:
            x = x * self.rescale
        if self.samplewise_center:
            x = x - tf.reduce_mean(x, axis=axes, keepdims=True)
        if self.samplewise_std_normalization:
            x = x / (tf.math.reduce_std(x, axis=axes, keepdims=True) + EPSILON)
        if self.featurewise_center and self.mean is not None:
            x = x - tf.constant(self.mean, tf.float32)
        if self.featurewise_std_normalization and self.std is not None:
            x = x / (tf.constant(self.std, tf.float32) + EPSILON)
        if self.zca_whitening and self.zca_whitening_matrix is not None:
            size = int(np.prod(x.shape[-3:]))
            flat = tf.reshape(x, [-1, size]) @ tf.constant(self.zca_whitening_matrix, tf.float32)
            x = tf.reshape(flat, tf.shape(x))
        return x

    def _preprocess(self, x: tf.Tensor, per_image: bool) -> tf.Tensor:
        import tensorflow as tf

        function = self.preprocessing_function
        assert function is not None

        def run(batch: np.ndarray) -> np.ndarray:
            if not per_image:
                return np.asarray(function(batch), np.float32)
            return np.stack([np.asarray(function(image), np.float32) for image in batch])

        out = tf.numpy_function(run, [x], tf.float32, stateful=True)
        return tf.ensure_shape(out, x.shape)
