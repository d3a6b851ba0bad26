"""The changed-file check off the feed's thread: the files of an epoch's batches are checked
(:meth:`~daliaug.sources.base.Samples.assert_unchanged`: one ``os.stat`` per file) by a thread
of their own, a few batches ahead of the feed, which only waits for a batch's verdict.

The feed's thread makes every batch the graph reads (in ``DaliLoader``, the thread that runs
the pipeline), so a stat of each file there cost about half of its host time per image. Each
batch is still checked before the feed hands it over, in the same order and with the same
error naming the same file: the first batch holding a changed file stops the epoch there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from daliaug.sources.base import Samples

AHEAD = 16
"""How many batches the check runs ahead of the feed at most: a file changed after its check
is caught when its batch comes out of the graph (the NumPy, JAX and PyTorch outputs check its
files again then), else at the next epoch's check, so the check stays near the batches read
now."""


class FileWatch:
    """Checks the files of ``batches`` (each an array of sample indices), batch after batch,
    on a daemon thread that stays at most :data:`AHEAD` batches ahead of the ones asked for."""

    def __init__(self, samples: Samples, batches: Sequence[np.ndarray]) -> None:
        self._samples, self._batches = samples, batches
        self._checked = 0  # batches found unchanged
        self._asked = 0  # batches the feed has asked for
        self._error: Exception | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="daliaug-file-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for k in range(len(self._batches)):
            with self._cond:
                self._cond.wait_for(lambda k=k: self._closed or k - self._asked < AHEAD)
                if self._closed:
                    return
            try:  # (a checked epoch's batch is decode-checked as it is taken: it may fail)
                self._samples.assert_unchanged(self._batches[k])
            except Exception as e:  # handed to the feed's thread, which raises it
                error: Exception | None = e
            else:
                error = None
            with self._cond:
                self._error = error
                self._checked = k + (error is None)
                self._cond.notify_all()
            if error is not None:
                return

    def verify(self, k: int) -> None:
        """Wait until batch ``k`` (counting from 0) is checked: the error naming its first
        changed file, if it holds one."""
        with self._cond:
            self._asked = k
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._checked > k or self._error is not None)
            if self._checked <= k:
                assert self._error is not None
                raise self._error

    def close(self) -> None:
        """Stop checking (the feed left the epoch)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
