"""An iterable's items made on a thread of their own, a few ahead of the thread that takes them
(the host's feed of a DALI pipeline, DALI's framework iterators on GPUs): the taker only pops."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

END = object()
"""What :meth:`Ahead.take` gives after the last item."""


@dataclass(frozen=True)
class _Failed:
    error: Exception


class Ahead(Generic[T]):
    """The items of ``items``, iterated on a daemon thread named ``name``, at most ``depth``
    made ahead. :meth:`take` gives the next one (:data:`END` after the last) and raises the
    error that ended the iteration there; iterating it takes them all. :meth:`close` (or
    leaving the iteration) stops the thread after the item it is making."""

    def __init__(self, items: Iterable[T], depth: int, name: str) -> None:
        self._made: queue.Queue = queue.Queue(depth)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(items,), name=name, daemon=True)
        self._thread.start()

    def _run(self, items: Iterable[T]) -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not self._put(item):
                    return
        except Exception as e:  # raised where the items are taken
            self._put(_Failed(e))
            return
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        self._put(END)

    def _put(self, item: object) -> bool:
        """``item`` in the queue once it has room; False once closed."""
        while not self._closed.is_set():
            try:
                self._made.put(item, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def take(self) -> T | object:
        item = self._made.get()
        if isinstance(item, _Failed):
            raise item.error
        return item

    def __iter__(self) -> Iterator[T]:
        try:
            while (item := self.take()) is not END:
                yield item  # type: ignore[misc]
        finally:
            self.close()

    def close(self) -> None:
        self._closed.set()
