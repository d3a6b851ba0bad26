"""What ``flow*`` return: daliaug's ``tf.data.Dataset`` itself, carrying what Keras' iterators
carry (``len()``, ``next()``, ``class_indices``, ``classes``, ``filenames``, ``samples``...).

The dataset object is not wrapped (a GPU-placed DALI dataset takes no further ``tf.data``
stages): its class becomes a subclass of its own class that adds ``__len__`` (batches per epoch,
known even where ``tf.data`` knows no cardinality), ``__next__`` (NumPy batches, on across
epochs, as Keras' iterators) and ``reset``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import tensorflow as tf


def _len(self: Any) -> int:
    """Batches per epoch, as ``len()`` of Keras' iterators."""
    return int(self.batches_per_epoch)


def _next(self: Any) -> Any:
    """The next batch as NumPy arrays; at the end of an epoch the next epoch begins."""
    batches: Iterator | None = self.__dict__.get("_keras_batches")
    batch = None if batches is None else next(batches, None)
    if batch is None:
        self._keras_batches = iter(self)
        batch = next(self._keras_batches)
    return tf.nest.map_structure(lambda t: t.numpy(), batch)


def _reset(self: Any) -> None:
    """Start ``next()`` over at the beginning of an epoch (Keras' ``reset``)."""
    self.__dict__.pop("_keras_batches", None)


@functools.cache
def _keras_type(base: type) -> type:
    """``base`` with Keras' iterator protocol added (one class per dataset class)."""
    methods = {
        "__len__": _len,
        "__next__": _next,
        "next": _next,
        "reset": _reset,
        "__module__": __name__,
    }
    return type(f"Keras{base.__name__.lstrip('_')}", (base,), methods)


def keras_iterator(ds: tf.data.Dataset, **attributes: Any) -> tf.data.Dataset:
    """``ds`` with Keras' iterator protocol and ``attributes`` (``class_indices``...)."""
    ds.__class__ = _keras_type(type(ds))
    for name, value in attributes.items():
        setattr(ds, name, value)
    return ds
