"""What ``flow*`` return: daliaug's ``make_dataset`` output itself (a ``tf.data.Dataset``, or on
Keras' JAX and PyTorch backends the batches ``fit`` takes there), carrying what Keras' iterators
carry (``len()``, ``it[i]``, ``next()``, ``on_epoch_end``, ``reset``, ``class_indices``,
``classes``, ``filenames``, ``samples``...).

The dataset object is not wrapped (a GPU-placed DALI dataset takes no further ``tf.data``
stages): its class becomes a subclass of its own class that adds Keras' ``Sequence`` protocol.
Iterating the dataset (``model.fit``, ``for batch in it``) runs one epoch per iteration, as its
epoch clock numbers them. ``it[i]`` is batch ``i`` of the iterator's current epoch
(:attr:`sequence_epoch`, from 0; ``on_epoch_end()`` moves to the next, as Keras' reshuffle) --
the batch iterating that epoch yields, the images alone rather than in a 1-tuple, as Keras --
computed on its own (:class:`~daliaug.keras.random_access.EpochBatches`); ``next(it)`` walks
the same batches in order, on into the next epoch at the end of one, and ``reset()`` goes back
to batch 0. Neither moves the dataset's epoch clock.
"""

from __future__ import annotations

import functools
from typing import Any

from daliaug.keras.random_access import EpochBatches


def _len(self: Any) -> int:
    """Batches per epoch, as ``len()`` of Keras' iterators."""
    return int(self.batches_per_epoch)


def _keras_batch(batch: tuple[Any, ...]) -> Any:
    """A batch as Keras' iterators give it: the inputs alone, not in a 1-tuple."""
    return batch[0] if len(batch) == 1 else batch


def _getitem(self: Any, idx: int) -> Any:
    """Batch ``idx`` of the current epoch, as NumPy arrays."""
    if not 0 <= idx < len(self):
        raise ValueError(
            f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}"
        )
    return _keras_batch(self.epoch_batches.batch(self.sequence_epoch, int(idx)))


def _next(self: Any) -> Any:
    """The next batch of the current epoch as NumPy arrays; after the last one the next
    epoch begins (Keras' ``next``). An empty flow gives an empty batch."""
    if len(self) == 0:
        return _keras_batch(self.empty_batch)
    batch = self[self.batch_index]
    self.batch_index += 1
    if self.batch_index == len(self):
        self.batch_index = 0
        self.sequence_epoch += 1
    return batch


def _on_epoch_end(self: Any) -> None:
    """The next epoch (its own order and parameters) for ``it[i]`` and ``next()``."""
    self.sequence_epoch += 1


def _reset(self: Any) -> None:
    """Start ``next()`` over at batch 0 (Keras' ``reset``)."""
    self.batch_index = 0


@functools.cache
def _keras_type(base: type) -> type:
    """``base`` with Keras' iterator protocol added (one class per dataset class)."""
    methods = {
        "__len__": _len,
        "__getitem__": _getitem,
        "__next__": _next,
        "next": _next,
        "on_epoch_end": _on_epoch_end,
        "reset": _reset,
        "__module__": __name__,
    }
    return type(f"Keras{base.__name__.lstrip('_')}", (base,), methods)


def keras_iterator(ds: Any, batches: EpochBatches | None, **attributes: Any) -> Any:
    """``ds`` (a ``tf.data.Dataset``, or the JAX or PyTorch output's batches) with Keras'
    iterator protocol, its batches by number from ``batches`` (``None`` for an empty flow,
    whose ``empty_batch`` attribute ``next()`` gives), and ``attributes``
    (``class_indices``...)."""
    ds.__class__ = _keras_type(type(ds))
    ds.epoch_batches = batches
    ds.sequence_epoch = 0
    ds.batch_index = 0
    for name, value in attributes.items():
        setattr(ds, name, value)
    return ds
