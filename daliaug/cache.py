"""Where daliaug keeps files it makes for you (demo data, TFRecord indexes, the decode check's
results), and how it writes them so that processes sharing the cache never see half a file."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sqlite3
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from daliaug.errors import CacheError, CacheWarning

T = TypeVar("T")

FIX = "set DALIAUG_CACHE to a folder you can write to, on a disk with free space"


def default_cache_dir() -> Path:
    """``$DALIAUG_CACHE`` if set, else ``~/.cache/daliaug``; a :class:`CacheError` if ``~``
    cannot be expanded (an unknown ``~user``, no home folder)."""
    value = os.environ.get("DALIAUG_CACHE") or "~/.cache/daliaug"
    try:
        return Path(value).expanduser()
    except RuntimeError as e:
        raise CacheError(f"DALIAUG_CACHE: cannot find the folder {value}: {e}; {FIX}") from e


@contextmanager
def writing_cache(path: Path, what: str) -> Iterator[None]:
    """The file system's and SQLite's errors inside (a read-only or full disk, a file where a
    folder should be) as a :class:`CacheError` naming ``DALIAUG_CACHE``, ``path`` and the fix."""
    try:
        yield
    except (OSError, sqlite3.Error) as e:
        setting = os.environ.get("DALIAUG_CACHE")
        where = f"DALIAUG_CACHE={setting}" if setting else "DALIAUG_CACHE unset: ~/.cache/daliaug"
        reason = getattr(e, "strerror", None) or str(e)
        raise CacheError(
            f"DALIAUG_CACHE: cannot write {what} to {path} ({where}): {reason}; {FIX}"
        ) from e


_WARNED: set[str] = set()


def go_on_without(error: CacheError) -> None:
    """Warn, once per process, that daliaug goes on without its cache, and why."""
    if not _WARNED:
        _WARNED.add(str(error))
        warnings.warn(
            f"{error}. daliaug goes on without its cache: the decode check runs again in each "
            f"process; skip lists and TFRecord indexes go to {fallback_dir()}",
            CacheWarning,
            stacklevel=4,
        )


@functools.cache
def fallback_dir() -> Path:
    """A folder of this process's own in the system's temporary folder, for what the cache
    cannot take."""
    return Path(tempfile.mkdtemp(prefix="daliaug-"))


def read_cached(relative: str) -> Any:
    """The JSON :func:`write_cached` kept at ``relative`` in the cache; ``None`` where there is
    none, or it cannot be read or parsed (what it held is then made again)."""
    try:
        return json.loads((default_cache_dir() / relative).read_text())
    except (CacheError, OSError, ValueError):
        return None


def write_cached(relative: str, data: str | bytes, what: str) -> Path:
    """Write ``data`` to ``relative`` in the cache, atomically; where the cache cannot take it,
    into :func:`fallback_dir` (with one :class:`CacheWarning`). The path written."""
    try:
        path = default_cache_dir() / relative
        with writing_cache(path, what):
            return write_atomically(path, data)
    except CacheError as e:
        go_on_without(e)
    path = fallback_dir() / relative
    with writing_cache(path, what):
        return write_atomically(path, data)


def write_atomically(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file of its own in the same folder,
    renamed into place: readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def kept_between_starts(
    relative: str,
    what: str,
    read: Callable[[Path], T | None],
    make: Callable[[], tuple[T, bytes | None]],
) -> T:
    """What ``read`` takes from the file ``relative`` in the cache (``None``: nothing usable),
    else the value ``make()`` gives with the bytes to keep for the next start (``None``: keep
    nothing). Processes of a host (and of hosts sharing a file system with working locks) make
    it one at a time, the others then reading what the first kept (a kept file is read without
    the lock); where the cache cannot be used, each makes its own."""
    try:
        path = default_cache_dir() / relative
    except CacheError as e:
        go_on_without(e)
        return make()[0]
    kept = read(path)  # (kept files are written whole: no lock needed to read one)
    if kept is not None:
        return kept
    with contextlib.ExitStack() as held:
        try:
            with writing_cache(path, f"the lock of {what}"):
                held.enter_context(_host_lock(path))
        except CacheError as e:
            go_on_without(e)
            return make()[0]
        kept = read(path)  # (another process may have made it meanwhile)
        if kept is not None:
            return kept
        value, record = make()  # (its own errors are the caller's, not the cache's)
        if record is not None:
            try:
                with writing_cache(path, what):
                    write_atomically(path, record)
            except CacheError as e:
                go_on_without(e)
        return value


@contextmanager
def _host_lock(path: Path) -> Iterator[None]:
    """Hold the lock beside ``path`` (an ``flock``: processes of this host, and of hosts sharing
    a file system with working locks, one at a time)."""
    try:
        import fcntl
    except ImportError:  # not on a POSIX system: each process on its own
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_folder_atomically(path: Path, build: Callable[[Path], None]) -> Path:
    """Make the folder ``path`` with ``build`` (given a temporary folder beside it), renamed
    into place when complete; if another process completed it first, keep theirs."""
    if path.is_dir():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        build(tmp)
        os.rename(tmp, path)
    except OSError:
        if not path.is_dir():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path
