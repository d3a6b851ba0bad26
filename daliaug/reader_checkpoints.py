"""DALI's own readers' checkpoints after each recent batch, which the states of a stream of
TFRecords read by DALI's reader hold (:mod:`daliaug.resume`): a reader's shuffle buffer and the
graph's random draws are no function of the seed alone, so DALI's checkpoint of them (its
``Pipeline.checkpoint()``) is what resumes them exactly. Imports no framework."""

from __future__ import annotations

import base64
import binascii
import threading
from collections import OrderedDict
from collections.abc import Mapping

from daliaug.errors import ConfigError

CHECKPOINTED = ("cpu",)
"""The devices on which DALI's own reader keeps checkpoints (``enable_checkpointing``): every
operator of the graph saves its state once per epoch there, which has run on the CPU only (on
the GPU such a stream resumes at an epoch's start, as before; ``bench/gpu_reader_checkpoint.py``
tries it on a GPU host)."""


def keeps(device: str) -> bool:
    """Whether DALI's own reader keeps checkpoints on ``device`` (:data:`CHECKPOINTED`)."""
    return device in CHECKPOINTED


class ReaderCheckpoints:
    """The checkpoint of each shard's pipeline after batch ``b`` of epoch ``e``, for the
    :data:`HELD` most recent batches: a state is of the batches handed on so far, or of those a
    training loop consumed (``daliaug.keras.BackupAndRestore`` counts steps, and its
    framework may read batches ahead), while a pipeline's own state runs ahead with it."""

    HELD = 64

    def __init__(self) -> None:
        self._held: OrderedDict[tuple[int, int], dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def restored(self, epoch: int, batches: int, held: object) -> dict[int, bytes]:
        """A restored state's checkpoints (``held``, its ``readers``) by shard,
        :func:`decoded`, and held as those after ``batches`` batches of epoch ``epoch``: a
        state taken before the next batch is the restored one."""
        checkpoints = decoded(held)
        assert isinstance(held, Mapping)
        with self._lock:
            self._held[(epoch, batches)] = dict(held)
            self._held.move_to_end((epoch, batches))
        return checkpoints

    def record(self, epoch: int, batches: int, shard: int, checkpoint: bytes, end: bool) -> None:
        """Shard ``shard``'s ``checkpoint`` after ``batches`` batches of epoch ``epoch`` (at its
        ``end``: also the next epoch's start)."""
        text = base64.b64encode(checkpoint).decode("ascii")
        keys = [(epoch, batches), (epoch + 1, 0)] if end else [(epoch, batches)]
        with self._lock:
            for key in keys:
                self._held.setdefault(key, {})[str(shard)] = text
                self._held.move_to_end(key)
            while len(self._held) > self.HELD:
                self._held.popitem(last=False)

    def __call__(self, epoch: int, batches: int) -> dict[str, str]:
        """The checkpoints after ``batches`` batches of epoch ``epoch``, by shard: none at the
        start of an epoch the pipelines opened at (a new pipeline is that state); a
        :class:`ConfigError` for a batch they are no longer (or not yet) held for."""
        with self._lock:
            held = self._held.get((epoch, batches))
            if held is not None:
                return dict(held)
            recent = list(self._held)
        if batches == 0:
            return {}
        span = f"batches {recent[0]} to {recent[-1]}" if recent else "no batch yet"
        raise ConfigError(
            f"state: DALI's reader checkpoint after batch {batches} of epoch {epoch} is not "
            f"held (those of the last {self.HELD} batches are, (epoch, batch): {span}); take "
            "a state as its batch is consumed"
        )


def decoded(held: object) -> dict[int, bytes]:
    """A state's ``readers`` (base64 text by shard number) as checkpoints by shard; a
    :class:`ConfigError` where they are not."""
    try:
        if not isinstance(held, Mapping) or not all(isinstance(t, str) for t in held.values()):
            raise TypeError(held)
        return {int(shard): base64.b64decode(text, validate=True) for shard, text in held.items()}
    except (ValueError, TypeError, binascii.Error):
        raise ConfigError(
            "state: readers holds DALI's checkpoints as base64 text by shard number; these are "
            "not (an edited state?)"
        ) from None
