"""The full decode check beside training (``source.check: background``): training starts once
the files are listed (headers read), and every file is decoded by the engine's decoder before
a batch holding it is handed on.

:class:`BackgroundCheck` decodes the source's files on a thread of its own (the cached results
first, then the rest, the files the feed will need next before the others), and decodes on the
spot, in the thread that makes a batch, any file of that batch not checked yet (the cache
asked first). So no file reaches an engine unchecked, whichever thread gets there first. The
thread begins once the feed has made an epoch's first :data:`QUIET` batches (checking their
files itself), so that it does not slow the start.

:class:`CheckedEpoch` is an epoch's batches as the feed hands them on. ``on_error: raise``: the
first bad file found stops the epoch at the next batch made, with a
:class:`~daliaug.errors.DataError` naming it (before any batch holding it). ``on_error: skip``:
the samples of bad files are left out of the epoch's order and the samples after them move up,
each taking the parameter row of its new position; the epoch keeps the batch count its listing
gave (the same on every process of a distributed job, which lists the same files): where the
order runs out, the last batch is shorter (an unweighted dataset without ``drop_remainder``, by
at most all but one of its samples), else the positions left are filled by repeats from the
start of the order marked as padding (weight 0), as short shards are. Which samples a batch
holds depends on the files alone, not on which thread checked them or when.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Protocol, Self, TypeVar, overload, runtime_checkable

import numpy as np

from daliaug.errors import DataError, DataWarning, user_stacklevel
from daliaug.sources.checks import (
    PROGRESS_FROM,
    CheckCache,
    FileKey,
    Undecodable,
    assert_unchanged,
    changed,
    check_each,
    describe_rejected,
    file_key,
    header_and_key,
    screened,
    skip_list,
    unlike_declared,
)


class Listed(Protocol):
    """What the check asks of samples (:class:`~daliaug.sources.base.Samples`, which holds
    the check: this module does not import it)."""

    files: dict[str, list[str]]
    rejected: dict[str, str]
    listed: dict[str, FileKey] | None
    sized: bool

    @property
    def image_files(self) -> list[str]: ...

    def with_checked(self, keys: dict[str, FileKey]) -> Self: ...

    def with_background(self, check: BackgroundCheck) -> Self: ...


L = TypeVar("L", bound=Listed)


CHUNK = 256
"""Files the background thread decodes at a time (and stores in the cache)."""
AHEAD = 8
"""Batches of the order, past the one being made, whose files the background thread takes
first."""
QUIET = 4
"""Batches of an epoch the feed makes (checking their files itself) before the background
thread begins: the feed runs about a prefetch ahead of training, so the first batch reaches
it with no thread decoding beside it (on two cores a first start at 10,000 files takes about
0.1 s less: ``bench/start.py``)."""
REPORT_EVERY = 10.0
"""Seconds between progress lines of a check of :data:`PROGRESS_FROM` files or more."""


class SizeRule(Protocol):
    """What an image's header size must meet besides decoding, where the listing read no
    header but placed the image's boxes without it: the size its annotations declare
    (:class:`DeclaredSizes`), or one its boxes, fractions of it, fit
    (:class:`~daliaug.sources.annotations.NormalisedBoxes`)."""

    def problem(self, path: str, size: tuple[int, int]) -> str | None:
        """Why ``path``, whose header says ``size`` (height, width), is bad (``None``: it is
        not)."""
        ...


@runtime_checkable
class ReadLate(Protocol):
    """A target column whose rows the check reads as it holds each image to its header's
    size (YOLO's label files, where the listing read none): the rule it holds them to."""

    def rule(self, paths: Sequence[str]) -> SizeRule:
        """The :class:`SizeRule` of the images ``paths`` (a row each, as the column's)."""
        ...


class PathRows:
    """The rows of ``paths`` that name each file (a file named twice has two), the index made
    at the first lookup, in the thread that asks: no Python object per file at a start."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = paths
        self._rows: dict[str, int] | None = None
        self._twice: dict[str, list[int]] = {}

    def __call__(self, path: str) -> list[int]:
        if self._rows is None:
            rows = dict(zip(self._paths, range(len(self._paths)), strict=True))
            if len(rows) < len(self._paths):  # (a file some rows share: each row it has)
                for row, named in enumerate(self._paths):
                    self._twice.setdefault(named, []).append(row)
            self._rows = rows
        if path in self._twice:
            return self._twice[path]
        row = self._rows.get(path)
        return [] if row is None else [row]


class DeclaredSizes:
    """The ``(height, width)`` the annotations declare of each of ``paths`` (``sizes``, a row
    each; a file named twice may be declared twice): a file whose header gives another is bad,
    its boxes having been placed by the declared one."""

    def __init__(self, paths: Sequence[str], sizes: np.ndarray) -> None:
        self._rows, self._sizes = PathRows(paths), sizes

    def problem(self, path: str, size: tuple[int, int]) -> str | None:
        declared = {tuple(self._sizes[row].tolist()) for row in self._rows(path)}
        other = sorted(declared - {tuple(size)})
        return unlike_declared(path, other[0], size) if other else None


class BackgroundCheck:
    """The decode check of ``files`` (their ``keys`` as listed) by ``undecodable``, its results
    cached under ``decoder``: on a daemon thread, and on the spot for the files a batch needs
    (:meth:`reasons`). A file that changed since it was listed counts as bad, named so."""

    def __init__(
        self,
        files: Sequence[str],
        keys: dict[str, FileKey],
        decoder: str,
        undecodable: Undecodable,
        on_error: str,
        cache: CheckCache | None = None,
        headers: bool = False,
        rule: SizeRule | None = None,
    ) -> None:
        self.files = list(dict.fromkeys(files))
        self.keys, self.decoder, self.on_error = keys, decoder, on_error
        self._sizes: dict[str, tuple[int, int]] | None = {} if headers else None
        """With ``headers`` (the listing read none): each file's ``(height, width)``, read
        with its key when the file is checked."""
        self._rule = rule
        """What each file's header size must meet where the listing placed its boxes without
        it (:class:`SizeRule`): a file whose header does not is bad."""
        self._undecodable = undecodable
        self._cache = cache or CheckCache()
        self._reasons: dict[str, str | None] = {}
        self._first_bad: str | None = None
        self._urgent: deque[str] = deque()
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self.done = threading.Event()
        self.failed: str | None = None
        """Why the thread stopped before it checked every file, if it did."""
        self._begun = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daliaug-check", daemon=True)
        self._thread.start()

    def _decode(self, paths: Sequence[str], cached: bool = False) -> dict[str, str | None]:
        """The reason each of ``paths`` fails (``None``: it decodes and is unchanged), kept;
        ``cached``: those the cache knows taken from it first. Where the listing read no
        file, each file's key is taken first, and its header read before it is decoded (a
        file that cannot be read or whose header fails is bad, and not cached: it is read
        again at the next start, as a listing would); a result from the cache needs the key
        alone, and brings the size read when it was checked (so a later start's files, and a
        resumed epoch's earlier ones, cost a ``stat`` each)."""
        failed = self._take_keys(paths)
        paths = [p for p in paths if p not in failed]
        known: dict[str, str | None] = {}
        if cached:
            found = self._cache.lookup_few(self.decoder, {p: self.keys[p] for p in paths})
            known = {p: c.reason for p, c in found.items()}
            if self._sizes is not None:  # (a good file's whole key matched its size's)
                for p, c in found.items():
                    if c.size is not None and c.reason is None:
                        known[p] = self._size_read(p, c.size)
                if self._rule is not None:  # (a result kept without its size: read now)
                    bare = [p for p, reason in known.items() if reason is None]
                    known.update(self._read_sizes([p for p in bare if p not in self._sizes]))
            paths = [p for p in paths if p not in known]
        failed.update(self._read_sizes(paths))
        self._keep({**failed, **known})
        paths = [p for p in paths if p not in failed]
        results: dict[str, str | None] = dict.fromkeys(paths)
        results.update(screened(paths, self._undecodable))
        for path in paths:
            if results[path] is None:
                try:
                    assert_unchanged(path, self.keys[path])
                except DataError as e:
                    results[path] = str(e)
        self._cache.store(self.decoder, results, self.keys, self._sizes)
        self._keep(results)
        return {**failed, **known, **results}

    def _take_keys(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Where the listing took no keys: the key of each of ``paths`` without one (a
        ``stat``); the reason of each that cannot be had."""
        failed: dict[str, str | None] = {}
        if self._sizes is None:
            return failed
        for path in paths:
            if path not in self.keys:
                try:
                    self.keys[path] = file_key(path)
                except OSError as e:
                    failed[path] = f"cannot read image file {path}: {e.strerror or e}"
        return failed

    def _read_sizes(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Where the listing read no headers: the header of each of ``paths`` not read yet
        (in parallel), the file held to its key; the reason of each that failed."""
        if self._sizes is None:
            return {}
        fresh = [p for p in paths if p not in self._sizes]
        read, failed = check_each(partial(header_and_key, keyed=True), fresh, "reading headers")
        reasons: dict[str, str | None] = dict(failed)
        for path, got in zip(fresh, read, strict=True):
            if got is not None and got[1] != self.keys[path]:
                reasons[path] = str(changed(path))
            elif got is not None and (reason := self._size_read(path, got[0])):
                reasons[path] = reason
        return reasons

    def _size_read(self, path: str, size: tuple[int, int]) -> str | None:
        """``size`` (read from ``path``'s header) kept; why the file is bad if it fails the
        size rule (``None``: it does not)."""
        problem = None if self._rule is None else self._rule.problem(path, size)
        if problem is not None:
            return problem
        assert self._sizes is not None
        self._sizes[path] = size
        return None

    def sizes(self, paths: Sequence[str]) -> np.ndarray:
        """Each of ``paths``' ``(height, width)`` (int32), its file checked now if it was not
        yet and its header read now if its result came from the cache without it; ``(0, 0)``
        for a bad file (a batch never holds its sample). A file changed since it was checked
        is a :class:`DataError` naming it."""
        assert self._sizes is not None, "the listing read the headers: Samples.sizes has them"
        todo = [p for p in paths if p not in self._sizes]
        if todo:
            self.reasons(todo)
            for reason in self._unsized(todo).values():
                raise DataError(str(reason))
        return np.array([self._sizes.get(p, (0, 0)) for p in paths], np.int32).reshape(-1, 2)

    def _keep(self, results: dict[str, str | None]) -> None:
        with self._lock:
            for path, reason in results.items():
                self._reasons.setdefault(path, reason)
                if reason is not None and self._first_bad is None:
                    self._first_bad = path

    def begin(self) -> None:
        """Let the thread start (the feed has made an epoch's first :data:`QUIET` batches, or
        its last: the check does not slow the start, whose files the feed checked itself)."""
        self._begun.set()

    def _run(self) -> None:
        self._begun.wait()
        try:
            self._check_all()
        except Exception as e:  # the feed still decodes each batch's files before handing it on
            if "interpreter shutdown" in str(e):  # the process is exiting: nothing to say
                return
            self.failed = f"{type(e).__name__}: {e}"
            _say(
                f"the background check stopped ({self.failed}); each batch's files are still "
                "decoded before the batch is handed on"
            )
        finally:
            self.done.set()

    def _check_all(self) -> None:
        """Every file checked (the cache's results first: in one query where the listing took
        the keys, else chunk by chunk with each chunk's keys), progress said on stderr."""
        start = time.monotonic()
        if self._sizes is None:  # (listed keys: the cache's results read in one query)
            self._keep(self._cache.lookup(self.decoder, self.keys))
        pending = iter(self.files)
        total, shown = len(self.files), start
        report = total >= PROGRESS_FROM
        if report:
            _say(f"checking {total:,} files beside training (source.check: background)")
        while True:
            chunk = self._next_chunk(pending)
            if not chunk:
                break
            self._decode(chunk, cached=self._sizes is not None)
            # (read here so the feed need not: a file that fails now is left to the feed,
            # which reads it again and names it)
            self._unsized(chunk)
            if report and time.monotonic() - shown > REPORT_EVERY:
                shown = time.monotonic()
                _say(f"checked {len(self._reasons):,} of {total:,} files")
        bad = self.bad
        if bad:
            listed = skip_list(bad, self.files)
            _say(f"{len(bad)} of {total:,} files cannot be used; all are listed in {listed}")
        elif report:
            _say(f"checked {total:,} files in {time.monotonic() - start:.0f} s: all can be used")

    def _unsized(self, paths: Sequence[str]) -> dict[str, str | None]:
        """The sizes of those of ``paths`` found good without one (the cache kept their
        results before it kept sizes), read and kept in the cache; the reason of each whose
        header fails now."""
        if self._sizes is None:
            return {}
        unsized = [p for p in paths if self._reasons.get(p, "") is None and p not in self._sizes]
        failed = self._read_sizes(unsized)
        sized = dict.fromkeys(p for p in unsized if p in self._sizes)
        if sized:
            self._cache.store(self.decoder, sized, self.keys, self._sizes)
        return failed

    def _next_chunk(self, pending: Iterator[str]) -> list[str]:
        """Up to :data:`CHUNK` files not checked yet: the urgent ones first."""
        chunk: list[str] = []
        with self._lock:
            while self._urgent and len(chunk) < CHUNK:
                path = self._urgent.popleft()
                if path not in self._reasons:
                    chunk.append(path)
        for path in pending:
            if path not in self._reasons:  # (a dict's lookups hold under the GIL)
                chunk.append(path)
            if len(chunk) >= CHUNK:
                break
        return list(dict.fromkeys(chunk))

    def prefer(self, paths: Sequence[str]) -> None:
        """Check ``paths`` (which a batch will need soon) before the others."""
        with self._lock:
            self._urgent.extend(p for p in paths if p not in self._reasons)

    def reasons(self, paths: Sequence[str]) -> list[str | None]:
        """Why each of ``paths`` cannot be used (``None``: it can), those not checked yet
        decoded now, in this thread."""
        with self._lock:
            todo = [p for p in dict.fromkeys(paths) if p not in self._reasons]
        if todo:
            self._decode(todo, cached=True)
        with self._lock:
            return [self._reasons[p] for p in paths]

    @property
    def bad(self) -> dict[str, str]:
        """The files found bad so far, with the reason."""
        with self._lock:
            return {p: r for p, r in self._reasons.items() if r is not None}

    def raise_if_bad(self) -> None:
        """With ``on_error: raise``: the :class:`DataError` naming the first bad file found."""
        if self.on_error != "raise" or self._first_bad is None:
            return
        bad = self.bad
        raise DataError(describe_rejected(bad, len(self.files), skip_list(bad, self.files)))

    def skipped(self, path: str, reason: str) -> None:
        """Warn once that ``path`` is left out (``on_error: skip``)."""
        with self._lock:
            if path in self._warned:
                return
            self._warned.add(path)
        warnings.warn(
            f"left out {path} and its sample from this epoch on (source.on_error: skip): {reason}",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


def _say(line: str) -> None:
    print(f"daliaug: {line}", file=sys.stderr, flush=True)


def background_checked(
    samples: L,
    decoder: str,
    undecodable: Undecodable,
    on_error: str,
    rule: SizeRule | None,
) -> L:
    """``samples`` with a :class:`BackgroundCheck` of their files started, and the keys the
    read check holds each file to: the listing's, else taken now, one ``stat`` per file; where
    the listing read no headers (``sized`` false), each taken with its header when the file
    is checked (the check fills the dict the samples hold), the header held to ``rule``."""
    files = samples.image_files
    listed = samples.listed or {}
    keys: dict[str, FileKey] = {}
    try:
        if samples.sized:
            keys = {p: listed.get(p) or file_key(p) for p in dict.fromkeys(files)}
    except OSError as e:
        raise DataError(f"cannot read image file {e.filename}: {e.strerror or e}") from e
    if samples.rejected and on_error == "skip":
        listed_at = skip_list(samples.rejected, [*files, *samples.rejected])
        warnings.warn(
            f"left out {len(samples.rejected)} unusable files and their samples when listing "
            f"(source.on_error: skip); the files are listed, with the reasons, in {listed_at}",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    check = BackgroundCheck(
        files, keys, decoder, undecodable, on_error, headers=not samples.sized, rule=rule
    )
    return samples.with_checked(keys).with_background(check)


class LazyBatches(Sequence[np.ndarray]):
    """An epoch's batches (sample positions), each made only when asked (:meth:`batch`); a
    slice is the list of its batches."""

    def batch(self, k: int) -> np.ndarray:
        """Batch ``k``'s positions."""
        raise NotImplementedError

    @overload
    def __getitem__(self, k: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, k: slice) -> list[np.ndarray]: ...
    def __getitem__(self, k: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(k, slice):
            return [self.batch(j) for j in range(*k.indices(len(self)))]
        return self.batch(k)


class CheckedEpoch(LazyBatches):
    """The batches of one epoch, each sample's files checked before its batch is given (see
    the module's docstring). ``order``: the epoch's sample order (a permutation of the
    samples); ``bounds``: its batches' positions (positions past the good samples of the order
    are padding); ``shorten``: whether the last batch may be cut rather than padded."""

    def __init__(
        self,
        samples: Listed,
        check: BackgroundCheck,
        order: np.ndarray,
        bounds: Sequence[tuple[int, int]],
        shorten: bool,
    ) -> None:
        self._samples, self._check, self._order = samples, check, order
        self._bounds = list(bounds)
        self._shorten = shorten
        self._positions = np.zeros(self._bounds[-1][1] if self._bounds else 0, np.int64)
        self._filled = 0  # positions taken from the order
        self._cursor = 0  # samples of the order looked at
        self._real: int | None = None  # positions holding samples, once the order ran out
        self._lock = threading.Lock()
        self._made = 0  # batches made, before the thread begins (:data:`QUIET`)
        self._fixed = check.on_error == "raise"
        """``on_error: raise`` leaves no sample out, so each position holds its sample of the
        order (padding repeats the order from its start) and a batch checks its own files
        alone: an epoch resumed at batch k checks no file of the batches before it."""
        if self._fixed:
            self._fill_fixed()

    def __len__(self) -> int:
        return len(self._bounds)

    def batch(self, k: int) -> np.ndarray:
        start, stop = self.bound(k)
        return self._positions[start:stop]

    def bound(self, k: int) -> tuple[int, int]:
        """Batch ``k``'s positions, its files checked (the last batch maybe shortened)."""
        self._check.raise_if_bad()
        start, stop = self._bounds[k]
        with self._lock:
            if self._fixed:
                self._check_span(start, stop)
            else:
                self._fill(stop)
            self._made += 1
            if self._made > QUIET or k == len(self._bounds) - 1:
                self._check.begin()
            if self._real is not None and k == len(self._bounds) - 1 and self._shorten:
                stop = max(start + 1, min(stop, self._real))
                if stop > self._real:
                    warnings.warn(
                        "the bad files left out took this epoch's last batch whole: it holds "
                        "one sample seen earlier in the epoch, to keep the batch count (with "
                        "class_weight or sample_weight it would be padding of weight 0)",
                        DataWarning,
                        stacklevel=user_stacklevel(),
                    )
        return start, stop

    def valid(self, start: int, stop: int) -> np.ndarray:
        """Which of the positions ``[start, stop)`` hold a sample (not padding)."""
        with self._lock:
            if not self._fixed:
                self._fill(stop)
            real = stop if self._real is None else self._real
        return np.arange(start, stop) < real

    def _fill(self, stop: int) -> None:
        """Positions up to ``stop`` taken from the order, bad samples left out; padding where
        the order ran out (repeats from the start of the epoch)."""
        order = self._order
        batch = self._bounds[0][1] - self._bounds[0][0] if self._bounds else 1
        while self._filled < stop and self._cursor < len(order):
            part = order[self._cursor : self._cursor + stop - self._filled]
            self._cursor += len(part)
            self._check.prefer(self._paths(order[self._cursor : self._cursor + AHEAD * batch]))
            good = part[self._good(part)]
            self._positions[self._filled : self._filled + len(good)] = good
            self._filled += len(good)
        if self._filled < stop and self._real is None:
            self._real = self._filled
            if self._real == 0:
                bad = self._check.bad
                raise DataError(
                    "source: every sample was left out; "
                    + describe_rejected(bad, len(self._check.files), skip_list(bad, bad))
                )
            rest = len(self._positions) - self._real
            self._positions[self._real :] = self._positions[np.arange(rest) % self._real]

    def _fill_fixed(self) -> None:
        """Every position its sample of the order, padding where the order runs out."""
        order, positions = self._order, self._positions
        held = min(len(order), len(positions))
        positions[:held] = order[:held]
        if len(positions) > len(order):
            self._real = len(order)
            positions[len(order) :] = order[np.arange(len(positions) - len(order)) % len(order)]

    def _check_span(self, start: int, stop: int) -> None:
        """The files of positions ``[start, stop)`` checked (the first bad one raised), the
        next batches' files asked for first."""
        ahead = AHEAD * (self._bounds[0][1] - self._bounds[0][0])
        self._check.prefer(self._paths(self._positions[stop : stop + ahead]))
        self._good(self._positions[start:stop])

    def _paths(self, indices: np.ndarray) -> list[str]:
        return [paths[i] for paths in self._samples.files.values() for i in indices.tolist()]

    def _good(self, indices: np.ndarray) -> np.ndarray:
        """Which samples at ``indices`` have every file usable: ``on_error: raise`` stops at
        the first that has not (a :class:`DataError` naming it), ``skip`` warns of it."""
        good = np.ones(len(indices), bool)
        for paths in self._samples.files.values():
            names = [paths[i] for i in indices.tolist()]
            for j, (path, reason) in enumerate(zip(names, self._check.reasons(names), strict=True)):
                if reason is not None:
                    self._check.raise_if_bad()
                    good[j] = False
                    self._check.skipped(path, reason)
        return good


class CheckedRest(CheckedEpoch):
    """``batches`` whose every position holds a fixed sample (the rest of an epoch another
    world began: :class:`~daliaug.epoch.RestOfEpoch`), padding where ``valid`` says, each
    batch's files checked before it is given. ``on_error: raise`` only: leaving a sample out
    would move the samples after it, which the other world's positions fix."""

    def __init__(
        self,
        samples: Listed,
        check: BackgroundCheck,
        batches: Sequence[np.ndarray],
        bounds: Sequence[tuple[int, int]],
        valid: Callable[[int, int], np.ndarray],
    ) -> None:
        assert check.on_error == "raise", "a rest of an epoch leaves no sample out"
        positions = np.concatenate([np.zeros(0, np.int64), *batches])
        super().__init__(samples, check, positions, bounds, shorten=False)
        self._valid = valid

    def valid(self, start: int, stop: int) -> np.ndarray:
        return self._valid(start, stop)
