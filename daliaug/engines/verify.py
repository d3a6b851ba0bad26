"""The full check: every image (and mask) of a source decoded once before training, by the
backend that will train on it, the results cached.

DALI cannot skip a file that fails to decode once its pipeline runs, and inside ``model.fit``
its error cannot name the file; so the files are decoded before training (``source.check:
full``, the default). A file's result is cached by its path, size and modification time
(SQLite under ``$DALIAUG_CACHE``, safe for several processes at once), so a second check of
unchanged data only reads the cache. With ``source.on_error: raise`` a bad file stops with a
:class:`~daliaug.errors.DataError` naming it and the reason; with ``skip`` the bad files (a
segmentation pair together) are left out of every epoch and listed in a file next to the cache.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daliaug.cache import default_cache_dir, write_atomically
from daliaug.config import Config
from daliaug.errors import DataError, DataWarning, readable
from daliaug.sources.base import Samples, describe_rejected, parallel_check, pillow_reason
from daliaug.sources.tfrecord import RecordSamples

Undecodable = Callable[[Sequence[str]], Iterator[tuple[str, str]]]
"""A backend's decode check: the files of a list that fail to decode, with the reason."""


def screened(paths: Sequence[str], undecodable: Undecodable) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` that cannot be decoded: first by Pillow, in parallel threads,
    then by the backend's ``undecodable`` for those Pillow decodes. A backend's decoder never
    sees a file that Pillow finds broken: DALI 2.4's CPU decoder can crash the process on a
    batch holding a corrupt PNG (a segmentation fault, found by tests/test_fuzz.py), which no
    check inside the process could then report."""
    reasons = parallel_check(pillow_reason, paths, "decoding with Pillow")
    broken = {p: f"Pillow cannot decode it: {r}" for p, r in zip(paths, reasons, strict=True) if r}
    yield from broken.items()
    yield from undecodable([p for p in paths if p not in broken])


def stat_key(path: str) -> tuple[int, int]:
    """What identifies a file's contents here: its size and modification time (ns)."""
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def _stored(path: str) -> str | bytes:
    """How SQLite keeps a path: as text, or as its bytes when it is not UTF-8."""
    try:
        path.encode()
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


class CheckCache:
    """Decode results by path, valid while the file's size and modification time hold."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_dir() / "check.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60)
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (decoder TEXT, path TEXT, size INTEGER, "
            "mtime_ns INTEGER, reason TEXT, PRIMARY KEY (decoder, path))"
        )
        return db

    def lookup(self, decoder: str, keys: dict[str, tuple[int, int]]) -> dict[str, str | None]:
        """The cached result (``None``: decodes) of each file whose key still matches."""
        found: dict[str, str | None] = {}
        with closing(self._connect()) as db:
            stored = {_stored(p): p for p in keys}
            paths = list(stored)
            for i in range(0, len(paths), 900):  # SQLite's limit on bound parameters
                chunk = paths[i : i + 900]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT path, size, mtime_ns, reason FROM files "
                    f"WHERE decoder = ? AND path IN ({marks})",
                    [decoder, *chunk],
                )
                for path, size, mtime_ns, reason in rows:
                    if keys[stored[path]] == (size, mtime_ns):
                        found[stored[path]] = reason
        return found

    def store(
        self, decoder: str, results: dict[str, str | None], keys: dict[str, tuple[int, int]]
    ) -> None:
        rows = [
            (decoder, _stored(p), *keys[p], reason and readable(reason))
            for p, reason in results.items()
        ]
        with closing(self._connect()) as db, db:
            db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", rows)


@dataclass(frozen=True)
class CheckResult:
    """The files checked, the bad ones with their reasons, and how long it took."""

    files: int
    bad: dict[str, str]
    cached: int
    seconds: float
    keys: dict[str, tuple[int, int]]


def check_files(
    paths: Sequence[str],
    decoder: str,
    undecodable: Undecodable,
    cache: CheckCache | None = None,
    progress: Callable[[int], None] | None = None,
    chunk: int = 2048,
) -> CheckResult:
    """Decode every file of ``paths`` not in the cache (under ``decoder``'s name) with
    ``undecodable``; ``progress`` hears how many files each step covered."""
    start = time.perf_counter()
    cache = cache or CheckCache()
    unique = list(dict.fromkeys(paths))
    keys = {p: stat_key(p) for p in unique}
    known = cache.lookup(decoder, keys)
    if progress is not None and known:
        progress(len(known))
    todo = [p for p in unique if p not in known]
    for i in range(0, len(todo), chunk):
        part = todo[i : i + chunk]
        results: dict[str, str | None] = dict.fromkeys(part)
        results.update(screened(part, undecodable))
        cache.store(decoder, results, keys)
        known.update(results)
        if progress is not None:
            progress(len(part))
    bad = {p: reason for p, reason in known.items() if reason is not None}
    return CheckResult(len(unique), bad, len(unique) - len(todo), time.perf_counter() - start, keys)


def skip_list(bad: dict[str, str], source_files: Iterable[str]) -> Path:
    """Write the bad files of a source, with reasons, next to the cache; its path."""
    names = "\n".join(sorted(source_files)).encode("utf-8", "surrogateescape")
    path = default_cache_dir() / "check" / f"skipped-{hashlib.sha1(names).hexdigest()[:16]}.txt"
    lines = [readable(f"{p}\t{reason}\n") for p, reason in sorted(bad.items())]
    return write_atomically(path, "".join(lines))


def checked(samples: Samples, decoder: str, undecodable: Undecodable, on_error: str) -> Samples:
    """``samples`` after the full check: unchanged when every file decodes; else a
    :class:`DataError` naming the bad files (``on_error: raise``), or the samples without them
    (``skip``: a sample goes when any of its files is bad), with one warning saying how many
    were left out, counting those rejected when they were listed, and where all are listed.
    The checked files' keys go along (``Samples.checked``), so that a file that changes
    afterwards is caught when it is read."""
    files = [f for paths in samples.files.values() for f in paths]
    result = check_files(files, decoder, undecodable)
    bad = {**samples.rejected, **result.bad}
    if not bad:
        return samples.with_checked(result.keys)
    listed = skip_list(bad, [*files, *samples.rejected])
    if on_error == "raise":
        raise DataError(describe_rejected(bad, result.files + len(samples.rejected), listed))
    drop = np.zeros(len(samples), bool)
    for paths in samples.files.values():
        drop |= np.fromiter((p in result.bad for p in paths), bool, len(paths))
    kept = samples.subset(np.flatnonzero(~drop))
    warnings.warn(
        f"left out {len(bad)} unusable files and their samples (source.on_error: skip); "
        f"{len(kept)} samples remain; the files are listed, with the reasons, in {listed}",
        DataWarning,
        stacklevel=3,
    )
    if len(kept) == 0:
        raise DataError(f"source: every sample was left out; see {listed}")
    return kept.with_checked(result.keys)


def checked_samples(
    config: Config, samples: Samples | RecordSamples, decoder: str, undecodable: Undecodable
) -> Samples | RecordSamples:
    """``samples`` as the config's ``source.check`` and ``on_error`` want them (see
    :func:`checked`): file samples decoded once with ``undecodable``; arrays and TFRecords
    (no files of their own) and ``check: headers`` as they are."""
    if config.source.check != "full" or not isinstance(samples, Samples) or not samples.files:
        return samples
    return checked(samples, decoder, undecodable, config.source.on_error)
