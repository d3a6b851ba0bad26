"""Batches made ahead on a thread of their own (daliaug.outputs.ahead): the host's feed of
DALI's pipeline and DALI's framework iterators on GPUs. Every item once and in order, an
error raised where the items are taken after the items before it, and a thread that stops
when its taker leaves."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from daliaug.outputs.ahead import END, Ahead
from daliaug.outputs.gpu import IteratorEpochs


def threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def gone(name: str) -> bool:
    deadline = time.monotonic() + 5
    while threads(name) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not threads(name)


def test_items_come_once_and_in_order_then_the_end() -> None:
    made = Ahead(iter(range(50)), 3, "test-ahead")
    assert [made.take() for _ in range(50)] == list(range(50))
    assert made.take() is END
    assert gone("test-ahead")


def test_an_error_comes_after_the_items_before_it() -> None:
    def items() -> Iterator[int]:
        yield from range(5)
        raise ValueError("broken at 5")

    made = Ahead(items(), 2, "test-ahead")
    assert [made.take() for _ in range(5)] == list(range(5))
    with pytest.raises(ValueError, match="broken at 5"):
        made.take()


def test_leaving_early_stops_the_thread_and_closes_the_items() -> None:
    closed = []

    def items() -> Iterator[int]:
        try:
            yield from range(10**9)
        finally:
            closed.append(True)

    for item in Ahead(items(), 2, "test-ahead"):
        if item == 3:
            break
    assert gone("test-ahead") and closed == [True]


class Layout:
    names = ("images", "labels")

    @staticmethod
    def nest(batch: tuple) -> tuple:
        return batch


def test_dali_iterators_batches_are_made_beside_the_step() -> None:
    """IteratorEpochs runs the framework iterator on its prefetch thread: the step only takes
    the nested batches, in order; an epoch left early stops that thread."""
    made_on = []

    def iterator() -> Iterator[list[dict]]:
        for k in range(20):
            made_on.append(threading.current_thread().name)
            yield [{"images": k, "labels": -k}]

    epochs = IteratorEpochs(iterator(), Layout())
    assert list(epochs) == [(k, -k) for k in range(20)]
    assert set(made_on) == {"daliaug-prefetch"}
    for batch in IteratorEpochs(iterator(), Layout()):
        if batch[0] == 2:
            break
    assert gone("daliaug-prefetch")
