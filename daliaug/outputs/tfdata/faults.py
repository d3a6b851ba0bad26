"""What a ``tf.data`` dataset of :func:`~daliaug.outputs.dataset.make_dataset` raises
when its graph fails mid-epoch (a file deleted, truncated or replaced after the check, a class
folder removed): a :class:`~daliaug.errors.DataError` naming the file, not TensorFlow's error
with DALI's C++ trace.

TensorFlow turns every failure inside a graph into its own ``OpError``; only Python that runs
after the failure can name its cause. So the dataset's iterators are Python iterators around
``tf.data``'s: ``next`` converts the error there (:meth:`EpochFeed.explain`). Keras' ``fit``,
``evaluate`` and ``predict`` see such an iterator (not a ``tf.data.Iterator``) and take each
batch from it in Python before running their compiled step, so the ``DataError`` is what
leaves ``fit``. A ``tf.data`` stage added after the dataset (``.map``) makes a plain dataset
again, whose errors stay TensorFlow's, the daliaug error's text carried in their message
(:func:`~daliaug.errors.carried_error` gives it back), as under a ``tf.distribute`` strategy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf
from tensorflow.python.data.ops.dataset_ops import UnaryUnchangedStructureDataset

from daliaug.engines.feed import EpochFeed
from daliaug.errors import DaliaugError, DataError, carried_error, first_line

Explain = Callable[[Exception], DaliaugError]

KEPT = ("batches_per_epoch", "epoch_clock", "cardinality")
"""The attributes of the engines' datasets that their named-faults dataset keeps."""


def named_faults(dataset: tf.data.Dataset, feed: EpochFeed | None) -> tf.data.Dataset:
    """``dataset``, whose iterators raise a :class:`DataError` naming the file where the graph
    failed reading ``feed`` (a streamed source, ``feed`` None: the error's own line)."""
    named = _NamedFaults(dataset, _records if feed is None else _explainer(feed))
    for name in KEPT:
        if name in vars(dataset):
            setattr(named, name, getattr(dataset, name))
    return named


def _explainer(feed: EpochFeed) -> Explain:
    return lambda error: feed.explain(error, "the input pipeline failed")


def _records(error: Exception) -> DaliaugError:
    carried = carried_error(error)
    return carried or DataError(f"reading TFRecords failed: {first_line(error)}")


class _NamedFaults(UnaryUnchangedStructureDataset):
    """The same dataset (the same graph), iterated through :class:`_Explained`."""

    def __init__(self, dataset: tf.data.Dataset, explain: Explain) -> None:
        self._daliaug_explain = explain
        super().__init__(dataset, dataset._variant_tensor)

    def __iter__(self) -> Iterator[Any]:
        return _Explained(super().__iter__(), self._daliaug_explain)


class _Explained:
    """A ``tf.data`` iterator whose failures are raised as ``explain`` makes them."""

    def __init__(self, iterator: Iterator[Any], explain: Explain) -> None:
        self._iterator, self._explain = iterator, explain

    def __iter__(self) -> _Explained:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._iterator)
        except tf.errors.OpError as e:
            raise self._explain(e) from None
