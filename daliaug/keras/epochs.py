"""Keras' epoch numbers for daliaug's datasets."""

from __future__ import annotations

from typing import Any

import keras


class EpochSync(keras.callbacks.Callback):
    """Makes each epoch of ``model.fit`` read the data epoch of the same number.

    A daliaug dataset numbers its epochs by the iterations made of it; ``model.fit`` also makes
    iterators it never uses (Keras 3 makes the next epoch's at the end of each epoch, then
    another at its start), so the data epochs run ahead of Keras'. With this callback the
    dataset's epochs follow Keras' epoch numbers exactly, also after ``initial_epoch=k`` or a
    restore by ``BackupAndRestore``: ``model.fit(ds, callbacks=[EpochSync(ds)])``.
    """

    def __init__(self, *datasets: Any) -> None:
        super().__init__()
        missing = [d for d in datasets if getattr(d, "epoch_clock", None) is None]
        if missing or not datasets:
            raise ValueError("EpochSync takes datasets made by daliaug.make_dataset")
        self.clocks = [d.epoch_clock for d in datasets]

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        for clock in self.clocks:
            clock.set(epoch)
