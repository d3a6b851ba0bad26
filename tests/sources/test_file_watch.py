"""The changed-file check, off the feed's thread (daliaug.sources.watch): a file replaced or
gone after the full check still stops the feed before the first batch that holds it, naming
it, whenever in the run it changes; the check's thread ends with the epoch or when the feed
is left."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.engines.feed import EpochFeed
from daliaug.errors import DataError
from daliaug.sources.base import Samples
from daliaug.sources.checks import file_key
from daliaug.sources.watch import AHEAD, FileWatch
from tests.helpers import spec_of

COUNT, BATCH = 40, 4


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"{i:03d}.jpg" for i in range(COUNT)]
    for p in paths:
        p.write_bytes(b"x" * 10)
    return paths


def feed_of(paths: list[Path]) -> EpochFeed:
    names = [str(p) for p in paths]
    keys = {n: file_key(n) for n in names}
    samples = Samples.of_files({"path": names}, ["a"], np.full((len(names), 2), 8))
    samples = samples.with_checked(keys)
    config = load_config(
        {"source": {"type": "arrays"}, "image_size": 8, "batch_size": BATCH, "seed": 1}
    )
    return EpochFeed(spec_of(config), samples, resizes=True)


def replace(path: Path) -> None:
    """Replace ``path`` by another file (a new size)."""
    path.with_suffix(".new").write_bytes(b"y" * 20)
    path.with_suffix(".new").replace(path)


def watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "daliaug-file-watch"]


def test_a_replaced_file_stops_the_feed_before_its_batch_naming_it(files: list[Path]) -> None:
    feed = feed_of(files)
    order = feed.epochs.batches(0)
    target = 6  # batch 6 of epoch 0 holds it
    changed = files[int(order[target][1])]
    replace(changed)
    seen = []
    with pytest.raises(DataError, match=f"image file {changed} changed after daliaug checked"):
        for batch in feed.batches(0, ("index",), check_files=True):
            seen.append(batch["index"])
    assert len(seen) == target
    assert all(np.array_equal(a, b) for a, b in zip(seen, order, strict=False))
    assert not any(t.is_alive() for t in watch_threads())


def test_a_file_changed_mid_run_is_caught_in_the_epoch_after_at_the_latest(
    files: list[Path],
) -> None:
    """A file changed while an epoch runs: caught in that epoch if its check had not run yet,
    else before its batch of the next epoch."""
    feed = feed_of(files)
    epoch0 = feed.batches(0, ("index",), check_files=True)
    next(epoch0)
    gone = files[int(feed.epochs.batches(0)[0][0])]  # in the batch already made
    gone.unlink()
    with pytest.raises(DataError, match=f"image file {gone} is gone since it was checked"):
        for _ in epoch0:
            pass
        for _ in feed.batches(1, ("index",), check_files=True):
            pass


def test_without_check_files_nothing_is_stated(files: list[Path]) -> None:
    feed = feed_of(files)
    replace(files[0])
    assert len(list(feed.batches(0, ("index",)))) == COUNT // BATCH
    assert not watch_threads()


def settled(counts: list[int], expected: int) -> int:
    """How many batches the check's thread had checked once it reached ``expected`` (or 10 s
    passed) and then stayed put for 0.2 s."""
    deadline = time.monotonic() + 10
    while len(counts) < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    return len(counts)


def test_the_check_stays_a_few_batches_ahead_and_ends_when_the_feed_is_left(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[int] = []
    feed = feed_of(files)
    samples = feed.samples
    monkeypatch.setattr(type(samples), "assert_unchanged", lambda self, i: checked.append(len(i)))
    watch = FileWatch(samples, [np.arange(i, i + 1) for i in range(AHEAD * 3)])
    watch.verify(0)
    assert settled(checked, AHEAD) == AHEAD  # AHEAD batches from the one asked for
    watch.verify(AHEAD)
    assert settled(checked, 2 * AHEAD) == 2 * AHEAD
    watch.close()
    assert settled(checked, 0) == 2 * AHEAD
    assert not any(t.is_alive() for t in watch_threads())
    epoch = feed.batches(0, ("index",), check_files=True)
    next(epoch)
    epoch.close()  # the feed left mid-epoch
    time.sleep(0.2)
    assert not any(t.is_alive() for t in watch_threads())
