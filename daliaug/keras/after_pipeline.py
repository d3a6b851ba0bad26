"""What a flow does after the pipeline, where the pipeline cannot do it: one function of a
batch in TensorFlow ops (a ``tf.data`` map, or run eagerly on one batch for ``it[i]``).

It maps the pipeline's levels back to the input's values and standardizes (options that need
whole images or Python, :mod:`daliaug.keras.standardize`), writes the images (``save_to_dir``),
gathers targets and extra inputs by sample index (the pipeline then carries each sample's index
as its target), and cuts ``multi_output``'s packed targets into one tensor per output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from daliaug.keras.samples import UNIT, Levels
from daliaug.keras.standardize import Standardization

if TYPE_CHECKING:
    import tensorflow as tf


@dataclass(frozen=True)
class Save:
    """Keras' ``save_to_dir``: each yielded image written as ``{prefix}_{index}_{hash}.{format}``
    (``index``: the sample's, ``hash``: a random number below ``hashes``), scaled to 0..255 by
    its own minimum and maximum, as Keras' ``array_to_img(scale=True)``."""

    directory: str
    prefix: str
    format: str
    data_format: str
    hashes: int

    def write(self, images: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Write a batch (a NumPy function in the ``tf.data`` stage) and pass it on."""
        from keras.utils import array_to_img

        rng = np.random.default_rng()
        for image, i in zip(images, index, strict=True):
            name = f"{self.prefix}_{int(i)}_{rng.integers(self.hashes)}.{self.format}"
            array_to_img(image, self.data_format, scale=True).save(
                os.path.join(self.directory, name)
            )
        return images


@dataclass(frozen=True)
class Outputs:
    """How a batch of the pipeline, ``(images[, targets][, weights])``, becomes the flow's
    batch: ``(x,)``, ``(x, y)`` or ``(x, y, weights)``, ``x`` the images or, with ``extras``,
    ``(images, *extras)``."""

    standardization: Standardization
    dtype: str
    targets: str
    """``none``, ``input`` (the images) or ``table`` (the pipeline's targets, or gathered)."""
    levels: Levels = UNIT
    """The input's values of the pipeline's levels (in-memory images)."""
    table: np.ndarray | None = None
    """With :attr:`indexed`: each sample's targets, gathered by index."""
    extras: tuple[np.ndarray, ...] = ()
    """Keras' other inputs of ``flow((x, extras), y)``, gathered by index."""
    outputs: tuple[tuple[int, ...], ...] | None = None
    """``multi_output``: the shape of each output, side by side in a target row."""
    save: Save | None = None

    @property
    def indexed(self) -> bool:
        """Whether the pipeline's targets are the samples' indices."""
        return bool(self.extras) or self.save is not None

    @property
    def needed(self) -> bool:
        """Whether the flow needs this stage after the pipeline."""
        return self.standardization.off_graph or self.indexed or self.outputs is not None

    def pipeline_label_mode(self, label_mode: str) -> str:
        """The pipeline's ``label_mode``: ``raw`` for indices, else the targets' own."""
        return "raw" if self.indexed else label_mode

    def stage(self) -> Callable[..., tuple[Any, ...]]:
        """The function of a pipeline batch (tensors) giving the flow's batch (TensorFlow ops:
        only Keras on TensorFlow runs it, see :mod:`daliaug.keras.backends`)."""
        import tensorflow as tf

        table = None if self.table is None else tf.constant(self.table)
        extras = [tf.constant(e) for e in self.extras]

        def finish(images: tf.Tensor, *rest: tf.Tensor) -> tuple[Any, ...]:
            carried = self.indexed or self.targets != "none"  # the pipeline yields targets
            target, weights = (rest[0], rest[1:]) if carried else (None, rest)
            images = self._images(images)
            index = None if not self.indexed else tf.cast(target, tf.int64)
            if self.save is not None:
                images = self._saved(images, index)
            x = images if not extras else (images, *(tf.gather(e, index) for e in extras))
            if self.targets == "none":
                return (x,)
            if self.targets == "input":
                return (x, images, *weights)
            y = tf.gather(table, index) if self.indexed else target
            return (x, self._split(y), *weights)

        return finish

    def _images(self, images: tf.Tensor) -> tf.Tensor:
        """The pipeline's images as the input's values, standardized, in the flow's dtype
        (the pipeline did both itself unless the standardization needs this stage)."""
        if not self.standardization.off_graph:
            return images
        import tensorflow as tf

        values = self.levels.low + self.levels.step * tf.cast(images, tf.float32)
        out = self.standardization.apply(values, [1, 2, 3], per_image=True)
        return tf.cast(out, self.dtype)

    def _saved(self, images: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
        assert self.save is not None
        import tensorflow as tf

        out = tf.numpy_function(self.save.write, [images, index], images.dtype, stateful=True)
        return tf.ensure_shape(out, images.shape)

    def _split(self, y: tf.Tensor) -> Any:
        """``multi_output``'s row cut into its outputs (else ``y`` as it is)."""
        if self.outputs is None:
            return y
        import tensorflow as tf

        parts, start = [], 0
        for shape in self.outputs:
            width = int(np.prod(shape))
            part = y[:, start : start + width]
            parts.append(tf.reshape(part, [-1, *shape]))
            start += width
        return tuple(parts)
