"""Keras' ``BackupAndRestore`` with the data stream's state: a run restored mid-epoch trains on
exactly the batches an uninterrupted run would have from the step it was saved at."""

from __future__ import annotations

import os
from typing import Any

import keras

from daliaug.errors import ConfigError
from daliaug.resume import Rest, State, Stream, first_batch

STATE_FILE = "daliaug_state.json"
"""The data state's file in the backup folder, written beside Keras' own files."""


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """``keras.callbacks.BackupAndRestore`` that also saves where ``dataset`` (made by
    ``daliaug.make_dataset``, any framework's) stands, and restores it: after a restore the
    interrupted epoch goes on from the batch after the last one saved, with no batch before it
    made again, rather than from its start (Keras' own callback reruns the epoch from step 0 on
    the weights saved mid-epoch), and ends after its last batch (the callback ends Keras' loop
    over it there). Also does :class:`~daliaug.keras.EpochSync`'s work: each epoch of ``fit``
    reads the data epoch of its number.

    ``model.fit(ds, callbacks=[BackupAndRestore(ds, backup_dir, save_freq=100)])``; the other
    arguments are Keras'. A saved data state of another dataset (config, samples, version) is
    refused by name (:mod:`daliaug.resume`); one taken by another number of shards (devices
    of a distribution) resumes the rest of its epoch over this one's, where the dataset takes
    it (every output of column sources), and the states saved during
    that rest are positions in the same order. List it before callbacks that stop training at
    an epoch's end (``EarlyStopping``): at the end of a resumed epoch it lets training go on."""

    def __init__(self, dataset: Any, backup_dir: str, **kwargs: Any) -> None:
        super().__init__(backup_dir, **kwargs)
        stream = getattr(dataset, "stream", None)
        if not isinstance(stream, Stream):
            raise ConfigError("BackupAndRestore takes a dataset made by daliaug.make_dataset")
        self.dataset, self.stream = dataset, stream
        self._state_path = os.path.join(backup_dir, STATE_FILE)
        self._epoch, self._done = 0, 0  # the data epoch and its batches trained on
        self._before = 0  # the batches of this epoch trained on before a restore
        self._left = 0  # the batches of a resumed epoch left after the restore (0: none)
        self._rest: Rest | None = None  # a resumed epoch another world began
        self._ended = False  # whether this callback ended a resumed epoch's loop

    def on_train_begin(self, logs: dict | None = None) -> None:
        super().on_train_begin(logs)
        if not os.path.exists(self._state_path):
            return
        with open(self._state_path, encoding="utf-8") as f:
            state = State.from_json(f.read())
        epoch, start = self.stream.start(state)
        self.dataset.set_state(state)
        # Keras reads its own epoch back but neither the step nor, for later saves, its epoch
        # count (Keras 3.15): both from the data state
        self.model._initial_epoch = self._current_epoch = self._epoch = epoch
        self._rest = start if isinstance(start, Rest) else None
        self._before = first_batch(start)
        if self._rest is not None:  # another world's epoch: its rest, counted from 0
            self._left = self._rest.batches
        elif self._before:
            self._left = self.stream.batches - self._before

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if epoch != self._epoch or not self._left:
            self._before, self._left, self._rest = 0, 0, None
            self.dataset.set_state(self.stream.state(epoch, 0))
        self._epoch, self._done = epoch, self._before

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._done = self._before + batch + 1
        if self._left and batch + 1 == self._left:
            self.model.stop_training = self._ended = True  # Keras' loop counts a whole epoch
        super().on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._ended:
            self.model.stop_training = self._ended = False
        self._epoch, self._done, self._before, self._left = epoch + 1, 0, 0, 0
        self._rest = None
        super().on_epoch_end(epoch, logs)

    def _save_model(self) -> None:
        super()._save_model()
        state = self.stream.state(self._epoch, self._done, self._rest)
        temporary = f"{self._state_path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(state.to_json())
        os.replace(temporary, self._state_path)
