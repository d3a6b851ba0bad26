"""What a source yields: the samples of one epoch as aligned columns, checked before decoding.

A column is a NumPy array with one row per sample; the DALI graph takes each column as one
input of the same name (``path``: zero-padded UTF-8 file names, ``mask_path`` likewise,
``label``: int32, ``image``: uint8 HWC arrays). TFRecord shards are streamed instead (see
:mod:`daliaug.sources.tfrecord`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import model_validator

from daliaug.epoch import shard_range
from daliaug.errors import DaliaugError, DataError, carried_error, first_line
from daliaug.fields import ShardCount, ShardId
from daliaug.sources.listing import IMAGE_EXTENSIONS
from daliaug.tagged import Tagged

_MAGIC = {b"\xff\xd8\xff": "JPEG", b"\x89PNG\r\n\x1a\n": "PNG"}


def encode_paths(paths: Sequence[str]) -> np.ndarray:
    """File names as a zero-padded ``uint8`` matrix, one row per file (for ``fn.io.file.read``):
    the bytes of each name on the file system (any name Linux allows)."""
    raw = [os.fsencode(p) for p in paths]
    out = np.zeros((len(raw), max(map(len, raw), default=1)), dtype=np.uint8)
    for i, b in enumerate(raw):
        out[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return out


@dataclass(frozen=True)
class Samples:
    """One epoch of samples: ``columns[name][i]`` is input ``name`` of sample ``i``.

    ``files`` keeps the file names behind the file columns (``path``, ``mask_path``) for error
    messages; ``class_names`` names the label values (or mask classes); ``sizes`` holds each
    image's (height, width), which the host needs to compute crop windows and warp matrices.
    """

    columns: dict[str, np.ndarray]
    class_names: list[str]
    sizes: np.ndarray
    files: dict[str, list[str]] = field(default_factory=dict)
    checked: dict[str, tuple[int, int]] | None = None
    """After the full decode check: each file's size and modification time when it passed."""
    rejected: dict[str, str] = field(default_factory=dict)
    """Files left out when the samples were listed (a broken header, a mask that does not fit
    its image...), with the reason; their samples are not among these."""
    ignored: dict[str, str] = field(default_factory=dict)
    """What the source's folders hold besides samples (files of other types, links to folders
    not followed), with the reason; ``daliaug check`` names them."""

    @staticmethod
    def of_files(
        files: dict[str, list[str]],
        class_names: list[str],
        sizes: np.ndarray,
        rejected: dict[str, str] | None = None,
        ignored: dict[str, str] | None = None,
        **arrays: np.ndarray,
    ) -> Samples:
        """Samples whose file columns are the given file lists (encoded for DALI), without the
        samples that have a file in ``rejected``."""
        rejected = rejected or {}
        keep = np.flatnonzero(
            [not any(paths[i] in rejected for paths in files.values()) for i in range(len(sizes))]
        )
        kept = {k: [v[i] for i in keep] for k, v in files.items()}
        columns = {name: encode_paths(paths) for name, paths in kept.items()}
        arrays = {name: column[keep] for name, column in arrays.items()}
        return Samples(
            {**columns, **arrays},
            list(class_names),
            sizes[keep],
            kept,
            None,
            rejected,
            ignored or {},
        )

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def paths(self) -> list[str]:
        """The image files (empty for in-memory arrays)."""
        return self.files.get("path", [])

    @property
    def labels(self) -> np.ndarray | None:
        return self.columns.get("label")

    @property
    def target_shape(self) -> tuple[int, ...]:
        """The per-sample shape of the ``target`` column (``()`` without one)."""
        target = self.columns.get("target")
        return () if target is None else tuple(target.shape[1:])

    def subset(self, indices: Sequence[int] | np.ndarray) -> Samples:
        """The samples at ``indices``, with the same class names."""
        idx = np.asarray(indices, dtype=np.int64)
        return Samples(
            {name: column[idx] for name, column in self.columns.items()},
            self.class_names,
            self.sizes[idx],
            {name: [paths[i] for i in idx] for name, paths in self.files.items()},
            self.checked,
            self.rejected,
            self.ignored,
        )

    def with_checked(self, keys: dict[str, tuple[int, int]]) -> Samples:
        """The same samples, their files' checked keys recorded (see :attr:`checked`)."""
        return dataclasses.replace(self, checked=keys)

    def assert_unchanged(self, indices: np.ndarray) -> None:
        """A :class:`DataError` naming the first file of the samples at ``indices`` that
        changed or went missing since the full check."""
        if self.checked is None:
            return
        for paths in self.files.values():
            for i in indices:
                path = paths[i]
                try:
                    changed = os.stat(path)
                except OSError as e:
                    raise DataError(f"image file {path} is gone since it was checked: {e}") from e
                if (changed.st_size, changed.st_mtime_ns) != self.checked[path]:
                    raise DataError(
                        f"image file {path} changed after daliaug checked it; run again to "
                        "check it anew"
                    )

    def shard(self, shard_id: int, num_shards: int) -> Samples:
        """Contiguous shard ``shard_id`` of ``num_shards``; the shards partition the samples."""
        return self.subset(np.arange(*shard_range(len(self), shard_id, num_shards)))

    def split(self, fraction: float, seed: int = 0) -> tuple[Samples, Samples]:
        """A reproducible ``(1 - fraction, fraction)`` random split, e.g. train and validation."""
        order = np.random.default_rng(seed).permutation(len(self))
        cut = len(self) - max(1, round(fraction * len(self)))
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))


class SourceConfig(Tagged):
    """Base of the ``source`` section; concrete sources are tagged by ``type``.

    Every source can be sharded (``shard_id`` of ``num_shards``, for multi-GPU training):
    the shards are disjoint and together hold every sample exactly once.
    """

    registry: ClassVar[dict[str, type[SourceConfig]]] = {}

    shard_id: ShardId = 0
    num_shards: ShardCount = 1
    check: Literal["full", "headers"] = "full"
    """``full``: every file decoded once before training (cached); ``headers``: only the
    headers read (a file that then fails to decode stops training unnamed)."""
    on_error: Literal["raise", "skip"] = "raise"
    """What a file that fails the full check does: stop with an error naming it, or leave its
    sample out of every epoch (listed next to the cache)."""

    @model_validator(mode="after")
    def _shard_in_range(self) -> SourceConfig:
        if self.shard_id >= self.num_shards:
            raise ValueError(f"shard_id {self.shard_id} must be below num_shards {self.num_shards}")
        if self.on_error == "skip" and self.check != "full":
            raise ValueError("on_error: skip needs check: full (bad files are found by decoding)")
        return self

    @property
    def segmentation(self) -> bool:
        """Whether samples carry masks (targets are masks, not labels)."""
        return False

    def samples(self) -> Samples:
        """List and check this shard's samples. Files that fail the checks are a
        :class:`DataError` naming them (``on_error: raise``), or left out and recorded in
        ``Samples.rejected`` (``skip``)."""
        samples = self.list_samples()
        if samples.rejected and self.on_error == "raise":
            raise DataError(
                describe_rejected(samples.rejected, len(samples) + len(samples.rejected))
            )
        return samples.shard(self.shard_id, self.num_shards)

    def list_samples(self) -> Samples:
        """All samples of the source, before sharding."""
        raise NotImplementedError

    def with_path(self, path: Path) -> SourceConfig:
        """The same source reading from ``path`` (the CLI's ``--data``)."""
        return self.model_validate({**self.model_dump(), "path": path})


def read_text(path: Path, what: str, error: type[DaliaugError] = DataError) -> str:
    """The text of ``path``, or an ``error`` that starts with ``what`` and names it."""
    try:
        return path.expanduser().read_text()
    except OSError as e:
        raise error(f"{what} {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise error(f"{what} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from e


MAX_PIXELS = 2**28
"""The most pixels an image may declare (268 million, 16384 x 16384): beyond that a header is
taken for a decompression bomb or a broken file, as decoding it would need gigabytes."""


def image_header(path: str) -> tuple[str, int, int]:
    """``('JPEG' | 'PNG', height, width)`` from the file's header; :class:`DataError` naming the
    file if it is missing, empty, not a JPEG or PNG, has a broken header or declares more than
    :data:`MAX_PIXELS` pixels."""
    from PIL import Image

    kind = "image"
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if not head:
                raise DataError(f"image file {path} is empty")
            kind = next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)
            if kind is None:
                raise DataError(
                    f"{path} is not a JPEG or PNG image (its first bytes are {head[:4]!r})"
                )
            f.seek(0)
            with Image.open(f) as im:  # (no catch_warnings: this runs in threads)
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
            f"{path} declares {width}x{height} pixels, beyond what daliaug decodes "
            f"({MAX_PIXELS:,} pixels at most): a broken header or a decompression bomb"
        )
    return kind, height, width


PROGRESS_FROM = 20_000
"""Checks of at least this many items show a progress bar (on stderr)."""


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
    """``check`` of every item, run by a thread pool; the first error propagates."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = pool.map(check, items, chunksize=64)
        if len(items) < PROGRESS_FROM:
            return list(results)
        from rich.progress import track

        return list(track(results, description=what, total=len(items), transient=True))


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
    and the reason of each that is not a readable JPEG or PNG."""
    headers, failed = check_each(image_header, paths, "reading image headers")
    sizes = [(h[1], h[2]) if h else (0, 0) for h in headers]
    return np.array(sizes, dtype=np.int32).reshape(-1, 2), failed


def pillow_reason(path: str) -> str | None:
    """Why Pillow cannot fully decode the file, or ``None`` if it can."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
    except Exception as e:  # PIL raises many types for broken files
        return f"{type(e).__name__}: {e}"
    return None


def find_undecodable(paths: Iterable[str]) -> tuple[str, str] | None:
    """The first file that PIL cannot fully decode, with the reason; ``None`` if all decode."""
    for path in paths:
        reason = pillow_reason(path)
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


def is_image(path: Path) -> bool:
    """Whether ``path`` is a file with a JPEG or PNG extension."""
    return path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()
