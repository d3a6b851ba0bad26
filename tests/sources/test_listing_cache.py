"""A later start reads no header of an unchanged file (issue 59): each folder's headers and
keys are kept, one stat per file tells what changed (a file added, a file fixed or broken in
place, its folder untouched), and the decode check's results are read in one query."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import daliaug.sources.checks as checks
from daliaug.errors import DataError
from daliaug.prepare import checked
from daliaug.sources.base import Samples
from tests.helpers import config_for, structured_image, write_image_dir


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two class folders of 3 PNGs each, and a cache of the test's own."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    images = {name: [structured_image(30, 40, seed=i) for i in range(3)] for name in "ab"}
    return write_image_dir(tmp_path / "train", images)


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """The paths ``checks.<name>`` is called with, from now on."""
    calls: list[str] = []
    real: Callable[..., Any] = getattr(checks, name)

    def spy(path: str, *args: Any) -> Any:
        calls.append(path)
        return real(path, *args)

    monkeypatch.setattr(checks, name, spy)
    return calls


def listed(root: Path) -> Samples:
    """The folder's samples, a file that fails its header left out (``on_error: skip``)."""
    source = {"type": "directory", "path": str(root), "on_error": "skip"}
    return config_for(root, source=source).source.samples(7)


def test_a_later_start_reads_no_header_and_stats_each_file_once(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = listed(tree)
    headers, keys = counted(monkeypatch, "image_header"), counted(monkeypatch, "file_key")
    stats: list[str] = []
    real_stat = checks.os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(checks.os, "stat", stat)
    later = listed(tree)
    monkeypatch.undo()
    assert headers == [] and keys == []
    assert sorted(p for p in stats if p in first.paths) == sorted(first.paths)
    assert later.paths == first.paths
    np.testing.assert_array_equal(later.sizes, first.sizes)
    assert later.listed == first.listed == {p: checks.file_key(p) for p in first.paths}


def test_a_file_added_is_listed_and_only_it_is_read(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed(tree)
    Image.fromarray(structured_image(50, 20, seed=9)).save(tree / "b" / "0003.png")
    (tree / "b" / "0000.png").unlink()
    headers = counted(monkeypatch, "image_header")
    later = listed(tree)
    assert str(tree / "b" / "0003.png") in later.paths
    assert str(tree / "b" / "0000.png") not in later.paths
    assert headers == [str(tree / "b" / "0003.png")]  # the others' keys still hold
    assert later.sizes[later.paths.index(str(tree / "b" / "0003.png"))].tolist() == [50, 20]


def test_a_bad_file_fixed_in_place_is_seen_at_the_next_start(tree: Path) -> None:
    bad = tree / "a" / "0001.png"
    good = bad.read_bytes()
    with bad.open("r+b") as f:  # in place: the folder's status is kept
        f.write(b"broken")
    assert str(bad) in listed(tree).rejected
    with bad.open("r+b") as f:
        f.write(good[:6])
    assert str(bad) in listed(tree).paths


def test_a_file_broken_in_place_is_rejected_at_the_next_start(tree: Path) -> None:
    """Its folder's status is kept; its own key tells, and its header is read again."""
    listed(tree)
    bad = tree / "a" / "0001.png"
    with bad.open("r+b") as f:  # in place: the folder's record still says it is good
        f.write(b"broken")
    again = listed(tree)
    assert str(bad) in again.rejected and str(bad) not in again.paths


def test_a_file_broken_after_the_start_is_named_when_read(tree: Path) -> None:
    samples = listed(tree)
    bad = tree / "a" / "0001.png"
    with bad.open("r+b") as f:
        f.write(b"broken")
    with pytest.raises(DataError, match=r"0001\.png changed after daliaug checked it"):
        samples.read("path", np.arange(len(samples)))


def test_the_full_check_reads_its_cached_results_in_one_query_and_stats_no_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def undecodable(paths: Any) -> Any:
        return iter(())

    checked(listed(tree), "test", undecodable, "raise")
    queries: list[str] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = real(*args, **kwargs)
        db.set_trace_callback(queries.append)
        return db

    monkeypatch.setattr(checks.sqlite3, "connect", connect)
    keys = counted(monkeypatch, "file_key")
    samples = listed(tree)
    keys.clear()  # (none: the listing's own records answer; the check is what is counted)
    result = checked(samples, "test", undecodable, "raise")
    assert keys == []
    assert [q for q in queries if q.startswith("SELECT")] == [
        "SELECT path, size, mtime_ns, reason FROM files WHERE decoder = 'test'"
    ]
    assert result.checked == samples.listed and result.listed is None
