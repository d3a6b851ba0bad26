"""Checks of image files, in one place: each file's header when a source is listed
(:func:`check_image_files`), Pillow's decode (:func:`pillow_reason`, :func:`explain_failure`)
and the full check (:func:`check_files`): every file decoded once before training by the engine
that will train on it (its ``undecodable``), the results cached.

DALI cannot skip a file that fails to decode once its pipeline runs, and inside ``model.fit``
its error cannot name the file; so the files are decoded before training (``source.check:
full``, the default). A file's result is cached by its path, size and modification time
(SQLite under ``$DALIAUG_CACHE``, safe for several processes at once), so a second check of
unchanged data only reads the cache. :func:`daliaug.prepare.checked` applies the result to a
source's samples (``source.on_error``). ``check: background`` runs the same check beside
training instead (:mod:`daliaug.sources.background`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypeVar

import numpy as np

from daliaug.cache import (
    default_cache_dir,
    go_on_without,
    write_atomically,
    write_cached,
    writing_cache,
)
from daliaug.errors import CacheError, DataError, carried_error, first_line, readable

T = TypeVar("T")

_MAGIC = {b"\xff\xd8\xff": "JPEG", b"\x89PNG\r\n\x1a\n": "PNG"}


MAX_PIXELS = 2**28
"""The most pixels an image may declare (268 million, 16384 x 16384): beyond that a header is
taken for a decompression bomb or a broken file, as decoding it would need gigabytes."""


def image_header(path: str, data: bytes | None = None) -> tuple[str, int, int]:
    """``('JPEG' | 'PNG', height, width)`` from the file's header (``data``: the bytes of an
    image that is no file, a member of a tar shard, which ``path`` names); :class:`DataError`
    naming the file if it is missing, empty, not a JPEG or PNG, has a broken header or declares
    more than :data:`MAX_PIXELS` pixels (read by the format's own Pillow plugin: ``Image.open``
    refuses large sizes with its own limit before saying the size)."""
    from PIL.JpegImagePlugin import JpegImageFile
    from PIL.PngImagePlugin import PngImageFile

    kind = "image"
    try:
        with open(path, "rb") if data is None else io.BytesIO(data) as f:
            head = f.read(8)
            if not head:
                raise DataError(f"image file {path} is empty")
            kind = next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)
            if kind is None:
                raise DataError(
                    f"{path} is not a JPEG or PNG image (its first bytes are {head[:4]!r})"
                )
            f.seek(0)
            plugin = JpegImageFile if kind == "JPEG" else PngImageFile
            with plugin(f) as im:  # (no catch_warnings: this runs in threads)
                width, height = im.size
    except DataError:
        raise
    except OSError as e:
        if not e.strerror:  # PIL's own errors are OSErrors without an errno
            raise DataError(f"{path} has a broken {kind} header: {e}") from e
        raise DataError(f"cannot read image file {path}: {e.strerror}") from e
    except Exception as e:  # PIL raises several types (DecompressionBombError, SyntaxError...)
        raise DataError(f"{path} has a broken {kind} header: {type(e).__name__}: {e}") from e
    if width * height > MAX_PIXELS or min(width, height) < 1:
        raise DataError(
            f"{path} declares {width}x{height} pixels ({width * height:,}), beyond what "
            f"daliaug decodes ({MAX_PIXELS:,} pixels at most): a broken header or a "
            "decompression bomb"
        )
    return kind, height, width


def unlike_declared(where: str, declared: Sequence[int], found: Sequence[int]) -> str:
    """Why an image is refused whose annotations declare ``declared`` (height, width) but
    whose file is ``found``, starting with ``where`` (the annotations' place, or the file)."""
    (h, w), (height, width) = declared, found
    return f"{where}: the annotations say the image is {w}x{h}, but its file is {width}x{height}"


PROGRESS_FROM = 20_000
"""Checks of at least this many items show a progress bar (on stderr)."""
CHUNK = 64
"""Items a thread of :func:`parallel_check` takes at a time."""


def describe_rejected(rejected: dict[str, str], total: int, listed: Path | None = None) -> str:
    """One message for the files that failed a check: the first few reasons (each names its
    file), how many there are, and where they are all listed."""
    first = "; ".join(r if p in r else f"{p}: {r}" for p, r in list(rejected.items())[:3])
    more = f" (and {len(rejected) - 3} more)" if len(rejected) > 3 else ""
    where = f"; all are listed in {listed}" if listed else ""
    return (
        f"{len(rejected)} of {total} files cannot be used: {first}{more}{where}. Fix or remove "
        "them, or set source.on_error: skip to train without them"
    )


def parallel_check(
    check: Callable[[Any], Any], items: Sequence[Any], what: str = "checking files"
) -> list:
    """``check`` of every item, run by a thread pool :data:`CHUNK` items a task (a task per
    item costs the pool more than reading a header); the first error propagates."""
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]

    def run(chunk: Sequence[Any]) -> list[Any]:
        return [check(item) for item in chunk]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = pool.map(run, chunks)
        if len(items) >= PROGRESS_FROM:
            from rich.progress import track

            results = track(results, description=what, total=len(chunks), transient=True)
        return [result for chunk in results for result in chunk]


def check_each(
    check: Callable[[str], Any], paths: Sequence[str], what: str
) -> tuple[list[Any], dict[str, str]]:
    """``check`` of every file, in parallel: the results (``None`` for a file that failed) and
    the :class:`DataError` message of each file that failed."""

    def attempt(path: str) -> tuple[Any, str | None]:
        try:
            return check(path), None
        except DataError as e:
            return None, str(e)

    outcomes = parallel_check(attempt, paths, what)
    failed = {p: reason for p, (_, reason) in zip(paths, outcomes, strict=True) if reason}
    return [result for result, _ in outcomes], failed


def check_image_files(paths: Sequence[str]) -> tuple[np.ndarray, dict[str, str]]:
    """Every file's header read: their ``(height, width)``s (int32; 0 for a file that failed)
    and the reason of each that is not a readable JPEG or PNG (see :func:`image_headers`;
    read anew, as the caller hands on no keys)."""
    headers = image_headers(paths, kept=False)
    return headers.sizes, headers.rejected


@dataclass(frozen=True)
class Headers:
    """Each file's ``(height, width)`` and :data:`FileKey` (0 and -1 for a file that failed),
    and the reason of each that failed."""

    sizes: np.ndarray
    keys: np.ndarray
    rejected: dict[str, str]

    def key_of(self, paths: Sequence[str]) -> dict[str, FileKey]:
        """The keys of the files that passed, by path."""
        good = self.keys[:, 0] >= 0
        return dict(
            zip(np.asarray(paths, object)[good], map(tuple, self.keys[good].tolist()), strict=True)
        )


def image_headers(paths: Sequence[str], kept: bool = True) -> Headers:
    """Every file's header (:func:`image_header`) and key, each header read once per state of
    its file: each folder's good headers and keys are kept in the cache (:class:`FolderRecord`),
    and a file whose key (one ``stat``) is the one kept is not read again; a file added,
    replaced or rewritten in place is read anew (rewriting a file leaves its folder's status as
    it was, so its own key is what tells). A folder's record is written again only where a file
    was added, removed or changed. Files that failed are read again at
    every start, so a file fixed in place is seen. The caller hands the keys on with the
    samples (``Samples.listed``), so that the read check holds the file to them;
    ``kept=False`` reads every header anew, keeping nothing.

    At a later start the work per file is its ``stat`` and no Python object of its own: the
    keys are compared as NumPy arrays, a folder at a time, against its record where the record
    lists the same names in the same order (the listing's sorted order), else by name."""
    n = len(paths)
    sizes = np.zeros((n, 2), np.int32)
    keys = stat_keys(paths) if kept else np.full((n, 4), -1, np.int64)
    folders: dict[str, tuple[list[int], list[str]]] = {}
    for i, path in enumerate(paths):
        folder, sep, name = path.rpartition(os.sep)
        index, names = folders.setdefault(folder or sep, ([], []))  # ("/" at the root)
        index.append(i)
        names.append(name)
    known = np.zeros(n, bool)
    records: dict[str, FolderRecord | None] = {}
    for folder, (index, names) in folders.items():
        record = FolderRecord.load(folder) if kept else None
        records[folder] = record
        if record is None:
            continue
        rows = np.asarray(index)
        if record.names == names:
            same = np.all(record.keys == keys[rows], axis=1)
            sizes[rows[same]] = record.sizes[same]
        else:
            by_name = record.by_name()
            old = [by_name.get(name) for name in names]
            now = keys[rows].tolist()
            same = np.array(
                [o is not None and o[0] == tuple(k) for o, k in zip(old, now, strict=True)], bool
            )
            for i, o, hit in zip(rows.tolist(), old, same.tolist(), strict=True):
                if hit:
                    sizes[i] = o[1]  # type: ignore[index]
        known[rows[same]] = True
    todo = np.flatnonzero(~known)
    read, failed = check_each(
        partial(header_and_key, keyed=kept), [paths[i] for i in todo], "reading image headers"
    )
    for i, got in zip(todo.tolist(), read, strict=True):
        if got is None:
            keys[i] = -1
        else:
            sizes[i], keys[i] = got
    for folder, (index, names) in folders.items():
        rows = np.asarray(index)
        record = records[folder]
        good = _good(names, keys[rows])
        if kept and (record is None or not record.holds(good, keys[rows])):
            FolderRecord.of(folder, good, sizes[rows], keys[rows])
    return Headers(sizes, keys, failed)


def stat_keys(paths: Sequence[str]) -> np.ndarray:
    """Each file's :data:`FileKey` as a row of an ``(n, 4)`` int64 array, -1 where it cannot
    be had (the header read then names the file)."""
    out = np.full((len(paths), 4), -1, np.int64)
    rows = []
    for path in paths:
        try:
            rows.append(stat_key(os.stat(path)))
        except OSError:
            rows.append((-1, -1, -1, -1))
    if rows:
        out[:] = rows
    return out


def header_and_key(path: str, keyed: bool) -> tuple[tuple[int, int], FileKey]:
    """A file's ``(height, width)`` from its header and its key (zeros unless ``keyed``)."""
    _, height, width = image_header(path)
    try:
        return (height, width), file_key(path) if keyed else (0, 0, 0, 0)
    except OSError as e:
        raise DataError(f"cannot read image file {path}: {e.strerror or e}") from e


def _record_path(folder: str) -> Path:
    real = os.fsencode(os.path.realpath(folder or "."))
    return default_cache_dir() / "listing" / f"{hashlib.sha1(real).hexdigest()[:24]}.npz"


def _good(names: Sequence[str], keys: np.ndarray) -> list[str]:
    """The ``names`` whose files passed (their ``keys`` not -1)."""
    return [name for name, key in zip(names, keys[:, 0].tolist(), strict=True) if key >= 0]


@dataclass(frozen=True)
class FolderRecord:
    """A folder's good image headers and file keys: one compact file (NumPy arrays) in the
    cache per folder, under ``listing/``."""

    names: list[str]
    sizes: np.ndarray
    keys: np.ndarray

    @staticmethod
    def load(folder: str) -> FolderRecord | None:
        """The folder's record, ``None`` if there is none (or it cannot be read)."""
        try:
            with np.load(_record_path(folder)) as data:
                names = os.fsdecode(data["names"].tobytes()).split("\0")
                return FolderRecord(names, data["sizes"], data["keys"])
        except (OSError, ValueError, KeyError, CacheError):
            return None

    @staticmethod
    def of(folder: str, good: list[str], sizes: np.ndarray, keys: np.ndarray) -> None:
        """Keep the folder's ``good`` files (:func:`_good`, without the folder), their rows of
        ``sizes`` and ``keys``; where the cache cannot take it, go on without it."""
        good_rows = keys[:, 0] >= 0
        out = io.BytesIO()
        np.savez(
            out,
            names=np.frombuffer(os.fsencode("\0".join(good)), np.uint8),
            sizes=sizes[good_rows],
            keys=keys[good_rows],
        )
        try:
            path = _record_path(folder)
            with writing_cache(path, "the listing's folder records"):
                write_atomically(path, out.getvalue())
        except CacheError as e:
            go_on_without(e)

    def holds(self, good: list[str], keys: np.ndarray) -> bool:
        """Whether this record is what :meth:`of` would keep for the ``good`` files and the
        folder's ``keys`` (no file added, removed or changed)."""
        return self.names == good and np.array_equal(self.keys, keys[keys[:, 0] >= 0])

    def by_name(self) -> dict[str, tuple[FileKey, tuple[int, int]]]:
        """Each file's key and size, by name."""
        keys, sizes = self.keys.tolist(), self.sizes.tolist()
        return {n: (tuple(k), tuple(s)) for n, k, s in zip(self.names, keys, sizes, strict=True)}  # type: ignore[misc]


def pillow_reason(path: str | BinaryIO) -> str | None:
    """Why Pillow cannot fully decode the file (or the bytes of one), or ``None`` if it can."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
    except Exception as e:  # PIL raises many types for broken files
        return f"{type(e).__name__}: {e}"
    return None


def find_undecodable(paths: Iterable[str], chunk: int = 256) -> tuple[str, str] | None:
    """The first file that PIL cannot fully decode, with the reason; ``None`` if all decode
    (decoded ``chunk`` files at a time, in parallel)."""
    listed = list(paths)
    for start in range(0, len(listed), chunk):
        part = listed[start : start + chunk]
        for path, reason in zip(part, parallel_check(pillow_reason, part), strict=True):
            if reason is not None:
                return path, reason
    return None


def explain_failure(error: Exception, files: Iterable[str], what: str) -> DataError:
    """The error for a pipeline that failed on ``files``: the daliaug error it carries, the
    first file that cannot be decoded, else ``what`` with the error's informative line."""
    carried = carried_error(error)
    if isinstance(carried, DataError):
        return carried
    bad = find_undecodable(files)
    if bad is not None:
        return DataError(f"cannot decode image {bad[0]}: {bad[1]}")
    return DataError(f"{what}: {first_line(error)}")


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


FileKey = tuple[int, int, int, int]
"""A file's size, modification time (ns), inode and status-change time (ns)."""


def file_key(path: str) -> FileKey:
    """What tells a file's contents apart here (see :data:`FileKey`): a file replaced (a new
    inode) or rewritten (a new status-change time, which no program can set back) differs even
    where its size and modification time were kept. The decode check's cache, kept between
    runs, compares the first two only."""
    return stat_key(os.stat(path))


def size_and_time(path: str) -> tuple[int, int] | None:
    """The file's size and modification time now (``None`` if it cannot be had): what a
    resumed run's fingerprint holds a file to."""
    try:
        return file_key(path)[:2]
    except OSError:
        return None


def stat_key(stat: os.stat_result) -> FileKey:
    return stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns


def _gone(path: str, error: OSError) -> DataError:
    return DataError(f"image file {path} is gone since it was checked: {error}")


def changed(path: str) -> DataError:
    return DataError(
        f"image file {path} changed after daliaug checked it; run again to check it anew"
    )


def assert_unchanged(path: str, checked: FileKey) -> None:
    """A :class:`DataError` naming ``path`` if it changed or went missing since it was found
    to be ``checked`` (its :func:`file_key` then)."""
    try:
        now = file_key(path)
    except OSError as e:
        raise _gone(path, e) from e
    if now != checked:
        raise changed(path)


def read_unchanged(path: str, checked: FileKey | None) -> np.ndarray:
    """The bytes of ``path`` as ``uint8``, and a :class:`DataError` naming it if the file read
    is not the one found to be ``checked`` (its :func:`file_key` then; ``None``: never
    checked) or is gone. The key is taken from the open file after the read, so the bytes
    handed on are those of the checked file: a file replaced or rewritten before or during
    the read is named."""
    try:
        with open(path, "rb") as f:
            data = f.read()
            now = stat_key(os.fstat(f.fileno()))
    except OSError as e:
        raise _gone(path, e) from e
    if checked is not None and now != checked:
        raise changed(path)
    return np.frombuffer(data, np.uint8)


FILE_READERS = 4
"""Threads that read a batch's files (:func:`read_files`), each a contiguous part of it: the
reads release the GIL, and a few parts keep the pool's own cost per batch small."""


@functools.cache
def _reader_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(FILE_READERS, thread_name_prefix="daliaug-read")


os.register_at_fork(after_in_child=_reader_pool.cache_clear)


def read_files(paths: Sequence[str], checked: dict[str, FileKey] | None) -> list[np.ndarray]:
    """The bytes of each file (:func:`read_unchanged`, against its key in ``checked`` where
    it has one), read :data:`FILE_READERS` parts at a time; the error of the first file in
    ``paths`` that fails."""
    keys = checked or {}
    step = -(-len(paths) // FILE_READERS) or 1
    parts = [paths[i : i + step] for i in range(0, len(paths), step)]

    def read(part: Sequence[str]) -> list[np.ndarray]:
        return [read_unchanged(path, keys.get(path)) for path in part]

    return [data for part in _reader_pool().map(read, parts) for data in part]


def _stored(path: str) -> str | bytes:
    """How SQLite keeps a path: as text, or as its bytes when it is not UTF-8."""
    try:
        path.encode()
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


FEW = 500
"""Paths per query of :meth:`CheckCache.lookup_few` (SQLite takes 32,766 parameters at most)."""


Size = tuple[int, int]
"""An image's ``(height, width)``."""


class Cached(NamedTuple):
    """A file's cached check: why it cannot be used (``None``: it decodes) and, where its
    header was read when it was checked and its whole key still matches, its size."""

    reason: str | None
    size: Size | None


class CheckCache:
    """Decode results by path, valid while the file's size and modification time hold, and
    the image's size where it was read, valid while the file's whole key holds. Where the cache
    cannot be read or written, it answers nothing and keeps nothing (with one
    :class:`~daliaug.errors.CacheWarning`): the files are decoded again."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self.usable = True

    def _use(self, work: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``work`` on the database, or ``default`` where the cache cannot be used."""
        if self.usable:
            try:
                path = self._path or default_cache_dir() / "check.sqlite"
                with writing_cache(path, "the decode check's results"):
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with closing(sqlite3.connect(path, timeout=60)) as db:
                        _create(db)
                        return work(db)
            except CacheError as e:
                self.usable = False
                go_on_without(e)
        return default

    def lookup(self, decoder: str, keys: dict[str, FileKey]) -> dict[str, str | None]:
        """The cached result (``None``: decodes) of each file whose key still matches."""
        return self._use(partial(self._lookup, decoder=decoder, keys=keys), {})

    @staticmethod
    def _lookup(
        db: sqlite3.Connection, decoder: str, keys: dict[str, FileKey]
    ) -> dict[str, str | None]:
        """One query for the decoder's results, matched here (a query per file, or per few
        hundred files, costs more than the rows of other data sets read along)."""
        found: dict[str, str | None] = {}
        rows = db.execute(
            "SELECT path, size, mtime_ns, reason FROM files WHERE decoder = ?", (decoder,)
        )
        for stored, size, mtime_ns, reason in rows:
            path = stored if isinstance(stored, str) else os.fsdecode(stored)
            key = keys.get(path)
            if key is not None and key[0] == size and key[1] == mtime_ns:
                found[path] = reason
        return found

    def lookup_few(self, decoder: str, keys: dict[str, FileKey]) -> dict[str, Cached]:
        """:meth:`lookup` for a few files (a batch's), by their paths, with their sizes where
        the whole key (inode and status-change time too) still matches: a query per
        :data:`FEW` files, on the tables' key."""
        return self._use(partial(self._lookup_few, decoder=decoder, keys=keys), {})

    @staticmethod
    def _lookup_few(
        db: sqlite3.Connection, decoder: str, keys: dict[str, FileKey]
    ) -> dict[str, Cached]:
        found: dict[str, Cached] = {}
        paths = list(keys)
        for i in range(0, len(paths), FEW):
            part = [_stored(p) for p in paths[i : i + FEW]]
            rows = db.execute(
                "SELECT f.path, f.size, f.mtime_ns, f.reason, s.size, s.mtime_ns, s.inode, "
                "s.ctime_ns, s.height, s.width FROM files f LEFT JOIN sizes s "
                "ON s.decoder = f.decoder AND s.path = f.path "
                f"WHERE f.decoder = ? AND f.path IN ({', '.join('?' * len(part))})",
                (decoder, *part),
            )
            for stored, size, mtime_ns, reason, *sized_key, height, width in rows:
                path = stored if isinstance(stored, str) else os.fsdecode(stored)
                key = keys[path]
                if key[0] == size and key[1] == mtime_ns:
                    same = tuple(sized_key) == tuple(key)
                    found[path] = Cached(reason, (height, width) if same else None)
        return found

    def store(
        self,
        decoder: str,
        results: dict[str, str | None],
        keys: dict[str, FileKey],
        sizes: Mapping[str, Size] | None = None,
    ) -> None:
        """Keep ``results`` under the files' ``keys``, and their ``sizes`` where given."""
        sizes = sizes or {}
        rows = [
            (decoder, _stored(p), *keys[p][:2], reason and readable(reason))
            for p, reason in results.items()
        ]
        sized = [(decoder, _stored(p), *keys[p], *sizes[p]) for p in results if p in sizes]

        def insert(db: sqlite3.Connection) -> None:
            with db:
                db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", rows)
                db.executemany(f"INSERT OR REPLACE INTO sizes VALUES ({_SIZE_ROW})", sized)

        self._use(insert, None)


_SIZE_ROW = ", ".join("?" * 8)
"""A row of the sizes' table: decoder, path, the file's key (four values), height, width."""


def _create(db: sqlite3.Connection) -> None:
    """The results' table and the sizes' (a table of its own: a daliaug from before sizes were
    kept, sharing the cache, writes its rows of five values into the results' table)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (decoder TEXT, path TEXT, size INTEGER, "
        "mtime_ns INTEGER, reason TEXT, PRIMARY KEY (decoder, path))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS sizes (decoder TEXT, path TEXT, size INTEGER, "
        "mtime_ns INTEGER, inode INTEGER, ctime_ns INTEGER, height INTEGER, width INTEGER, "
        "PRIMARY KEY (decoder, path))"
    )


@dataclass(frozen=True)
class CheckResult:
    """The files checked, the bad ones with their reasons, and how long it took."""

    files: int
    bad: dict[str, str]
    cached: int
    seconds: float
    keys: dict[str, FileKey]


def check_files(
    paths: Sequence[str],
    decoder: str,
    undecodable: Undecodable,
    cache: CheckCache | None = None,
    progress: Callable[[int], None] | None = None,
    chunk: int = 2048,
    listed: dict[str, FileKey] | None = None,
) -> CheckResult:
    """Decode every file of ``paths`` not in the cache (under ``decoder``'s name) with
    ``undecodable``; ``progress`` hears how many files each step covered. ``listed``: the
    files' keys as their listing found them (:func:`image_headers`), not taken again."""
    start = time.perf_counter()
    cache = cache or CheckCache()
    unique = list(dict.fromkeys(paths))
    listed = listed or {}
    keys = {p: listed.get(p) or file_key(p) for p in unique}
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
    name = f"check/skipped-{hashlib.sha1(names).hexdigest()[:16]}.txt"
    lines = [readable(f"{p}\t{reason}\n") for p, reason in sorted(bad.items())]
    return write_cached(name, "".join(lines), "the list of bad files")
