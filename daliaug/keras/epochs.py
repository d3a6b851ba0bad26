"""Keras' epoch numbers for daliaug's datasets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras


class EpochSync(keras.callbacks.Callback):
    """Makes each epoch of ``model.fit`` read the data epoch of the same number, whatever
    epoch the dataset would read next.

    A daliaug dataset numbers its epochs by the iterations read from it, from ``make_dataset``'s
    ``initial_epoch``; a plain ``fit``, or ``fit(initial_epoch=k)`` on
    ``make_dataset(initial_epoch=k)``, needs no callback. This one is for the cases the dataset
    cannot know: a restore by ``BackupAndRestore`` (Keras picks the epoch inside ``fit``), and
    a DALI dataset placed on the GPU, whose iterators start reading as soon as Keras makes them
    (Keras 3 makes one after each epoch's last step that it never reads, so without the
    callback the data epochs run ahead of Keras' from the third epoch on):
    ``model.fit(ds, callbacks=[EpochSync(ds)])``.
    """

    def __init__(self, *datasets: Any) -> None:
        super().__init__()
        setters = [_epoch_setter(d) for d in datasets]
        if None in setters or not datasets:
            raise ValueError("EpochSync takes datasets made by daliaug.make_dataset")
        self.setters = setters

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        for set_epoch in self.setters:
            set_epoch(epoch)


def _epoch_setter(dataset: Any) -> Callable[[int], None] | None:
    """What sets the epoch ``dataset`` reads next: a ``tf.data`` dataset's epoch clock, or the
    JAX/PyTorch output's ``set_epoch`` (``None`` for anything else)."""
    clock = getattr(dataset, "epoch_clock", None)
    return clock.set if clock is not None else getattr(dataset, "set_epoch", None)
