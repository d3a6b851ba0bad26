"""TFRecord shards of ``tf.train.Example`` records holding encoded images and labels."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, ClassVar, Literal, NoReturn

from daliaug.cache import default_cache_dir, write_atomically, write_cached
from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import ClassCount, ClassNames, FilePath, Location
from daliaug.sources import storage
from daliaug.sources.base import SourceConfig
from daliaug.sources.example_proto import Malformed, feature_kinds
from daliaug.sources.sample_set import SampleSet, shard_range

METADATA = "daliaug.json"
"""Written next to the shards by ``daliaug convert``: class names and the feature keys."""


@dataclass(frozen=True)
class RecordSamples(SampleSet):
    """TFRecord shards with a DALI index file each; streamed rather than listed by column, so
    the host never sees a sample: no parameter rows or weights per sample, no random split.
    Engines read them with their own readers (DALI's ``fn.readers.tfrecord``, TensorFlow's
    ``TFRecordDataset``)."""

    files: list[str]
    index_files: list[str]
    counts: list[int]
    class_names: list[str]
    image_key: str
    label_key: str
    shard_id: int = 0
    num_shards: int = 1

    def __len__(self) -> int:
        """Records in this shard (DALI's readers split ``total`` into contiguous ranges)."""
        start, stop = shard_range(sum(self.counts), self.shard_id, self.num_shards)
        return stop - start

    @property
    def column_names(self) -> tuple[str, ...]:
        return ("record", "label")

    def shard(self, shard_id: int, num_shards: int) -> RecordSamples:
        """Shard ``shard_id`` of ``num_shards`` of all the files' records (the readers read
        that contiguous range)."""
        return replace(self, shard_id=shard_id, num_shards=num_shards)

    @property
    def on_s3(self) -> bool:
        """The files are ``s3://`` objects."""
        return storage.is_s3(self.files[0])

    def spans(self, file: int, first: int, stop: int) -> tuple[int, int]:
        """The bytes ``[start, end)`` of records ``first`` to ``stop - 1`` of file ``file``,
        from its index."""
        lines = Path(self.index_files[file]).read_text().splitlines()
        offset, _ = map(int, lines[first].split())
        last, size = map(int, lines[stop - 1].split())
        return offset, last + size

    def host_records(self) -> Iterator[bytes]:
        """This shard's records in order (the range DALI's reader reads), read on the host:
        one streamed read of each file's part of the range (see :func:`read_records`)."""
        start, stop = shard_range(sum(self.counts), self.shard_id, self.num_shards)
        first = 0
        for i, (file, count) in enumerate(zip(self.files, self.counts, strict=True)):
            low, high = max(start - first, 0), min(stop - first, count)
            first += count
            if low < high:
                yield from read_records(file, *self.spans(i, low, high))

    def check_readable(self) -> None:
        """The first record holds both feature keys, with the expected kinds of values (its
        ``tf.train.Example`` read from protobuf's wire format: no TensorFlow needed)."""
        if not self.counts[0]:
            raise DataError(f"TFRecord file {self.files[0]} holds no records")
        first = next(read_records(self.files[0], *self.spans(0, 0, 1)))
        try:
            feature = feature_kinds(first)
        except Malformed as e:
            raise DataError(
                f"TFRecord file {self.files[0]}: its first record is not a tf.train.Example ({e})"
            ) from None
        for key, kind in ((self.image_key, "bytes_list"), (self.label_key, "int64_list")):
            if feature.get(key) != kind:
                raise DataError(
                    f"TFRecord file {self.files[0]}: no {kind.split('_')[0]} feature {key!r} "
                    f"(the records hold {sorted(feature)}); set source.image_key / "
                    "source.label_key"
                )

    def check_params(self, which: str) -> None:
        raise ValueError(f"{which} params need a column source, not TFRecords")

    def check_sample_weights(self) -> None:
        raise ConfigError("sample_weight: TFRecords are streamed; weigh classes with class_weight")

    def check_reader_weights(self, framework: str) -> None:
        raise ConfigError(
            f"class_weight/sample_weight: TFRecords are read by DALI's own reader for "
            f"framework={framework!r}, which gives no weights; use framework='tensorflow'"
        )

    def check_distribution(self, under: str) -> None:
        raise ConfigError(f"source.type: tfrecord under {under} needs framework='tensorflow'")

    def check_split(self, field: str, folder: Path) -> None:
        raise _unsplit(field, folder)

    def split(self, fraction: float, seed: int = 0) -> NoReturn:
        """Never: records are split by folder."""
        raise _unsplit("source.path", Path(self.files[0]).parent)


def _record_name(name: str) -> bool:
    """Whether a file name is a TFRecord file's (not its index's)."""
    return ".tfrecord" in name and not name.endswith(".idx")


def _unsplit(field: str, folder: Path) -> DataError:
    return DataError(f"{field}: give TFRecords as {folder}/train and {folder}/val folders")


def write_index(record_file: str, index_file: Path) -> int:
    """Write DALI's index (``offset size`` per record) of one TFRecord file; returns the count."""
    text, count = index_text(record_file, int(storage.identity(record_file).split()[0]))
    write_atomically(index_file, text)
    return count


HEADER = 12
"""Bytes before a record's data: its length (8) and the length's checksum (4)."""
FOOTER = 4
"""Bytes after a record's data: its checksum."""


def _truncated(record_file: str, offset: int) -> DataError:
    return DataError(f"TFRecord file {record_file} is truncated at byte {offset}")


def _read_exactly(stream: BinaryIO, count: int) -> bytes:
    """``count`` bytes of ``stream``, fewer only at its end (a network stream may give them in
    parts)."""
    parts, left = [], count
    while left > 0:
        part = stream.read(min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _record_end(stream: BinaryIO, record_file: str, offset: int) -> int:
    """Where the record at ``offset`` ends, from the header read from ``stream``."""
    header = _read_exactly(stream, HEADER)
    if len(header) < HEADER:
        raise _truncated(record_file, offset)
    (length,) = struct.unpack("<Q", header[:8])
    return offset + HEADER + length + FOOTER


def index_text(record_file: str, size: int) -> tuple[str, int]:
    """DALI's index of one TFRecord file of ``size`` bytes, local or ``s3://`` (``offset
    size`` per record), and the record count: one pass over the headers (a local file seeks
    past each record's data, an S3 object is streamed once)."""
    lines, offset = [], 0
    with storage.open_stream(record_file) as f:
        skip = f.seekable()
        while offset < size:
            end = _record_end(f, record_file, offset)
            if end > size:
                raise _truncated(record_file, offset)
            if skip:
                f.seek(end)
            elif len(_read_exactly(f, end - offset - HEADER)) < end - offset - HEADER:
                raise _truncated(record_file, offset)
            lines.append(f"{offset} {end - offset}\n")
            offset = end
    return "".join(lines), len(lines)


def read_records(record_file: str, start: int, stop: int) -> Iterator[bytes]:
    """The data of the records in bytes ``[start, stop)`` of a TFRecord file, local or
    ``s3://`` (one streamed read); a record cut short is a :class:`DataError` naming the file
    and where."""
    with storage.open_stream(record_file, start, stop) as f:
        offset = start
        while offset < stop:
            end = _record_end(f, record_file, offset)
            body = _read_exactly(f, end - offset - HEADER)
            if len(body) < end - offset - HEADER:
                raise _truncated(record_file, offset)
            yield body[:-FOOTER]
            offset = end


INDEXERS = 8
"""Files indexed at once (an S3 object's first index is one streamed read of it)."""

SAMPLED = 1 << 16
"""Bytes read from each end of a TFRecord file for the key of its index."""


def contents_key(record_file: str) -> str:
    """What identifies a TFRecord file's contents: its size, modification time and a hash of
    its first and last :data:`SAMPLED` bytes (a file replaced by one of another size, or with
    other records at either end, gets another key even if its time is older)."""
    stat = os.stat(record_file)
    digest = hashlib.sha1(f"{stat.st_size} {stat.st_mtime_ns}".encode())
    with open(record_file, "rb") as f:
        digest.update(f.read(SAMPLED))
        if stat.st_size > SAMPLED:
            f.seek(max(SAMPLED, stat.st_size - SAMPLED))
            digest.update(f.read(SAMPLED))
    return digest.hexdigest()[:16]


def indexed_count(index_file: Path, size: int) -> int | None:
    """The records an index file lists if its last record ends where the file of ``size``
    bytes does (an index of other contents, or a broken one, gives ``None``)."""
    try:
        lines = index_file.read_text().splitlines()
        offset, length = map(int, lines[-1].split())
    except (OSError, ValueError, IndexError):
        return None
    return len(lines) if offset + length == size else None


class TFRecordSource(SourceConfig):
    """``tf.train.Example`` records with the encoded image under ``image_key`` (bytes) and an
    integer label under ``label_key``. ``path`` is a file, a folder of ``*.tfrecord*`` files or a
    glob, or the same on S3: an ``s3://bucket/key`` object, a glob of keys, or every
    ``*.tfrecord*`` object under an ``s3://bucket/prefix`` (credentials and endpoint from the
    AWS variables). DALI's reader needs an index per file: daliaug writes them itself, to
    ``index_dir`` (default: a per-user cache folder), keyed by the shard's size, modification
    time and the bytes at its ends (:func:`contents_key`), or an object's size and ETag (read
    once, streamed, to write it), and rewrites one when any of them changes or the index does
    not span the shard (even for a file replaced by an older one). Class names come from
    ``class_names``, else from the ``daliaug.json`` that ``daliaug convert`` writes, else
    ``num_classes``.
    """

    type: Literal["tfrecord"] = "tfrecord"
    streamed: ClassVar[str | None] = (
        "TFRecords are streamed (convert them to a directory or file list)"
    )
    path: Location
    image_key: str = "image/encoded"
    label_key: str = "image/class/label"
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None
    index_dir: FilePath | None = None

    def record_files(self) -> list[str]:
        """The TFRecord files at ``path``, sorted (:func:`~daliaug.sources.storage.list_files`:
        a file or object taken literally, else a folder, else a glob), not DALI's index files
        (``.idx``, which an ``index_dir`` of the same folder holds)."""
        found = storage.list_files([str(self.path)], _record_name, "TFRecord")
        return found.files

    def _class_names(self, files: list[str]) -> list[str]:
        if self.class_names:
            return list(self.class_names)
        meta: str | Path
        if storage.is_s3(files[0]):
            meta = f"{files[0].rpartition('/')[0]}/{METADATA}"
            text = storage.read_text(meta)
        else:
            meta = Path(files[0]).parent / METADATA
            text = (
                read_text(meta, "source: cannot read TFRecord metadata") if meta.is_file() else None
            )
        if text is not None:
            try:
                return [str(name) for name in json.loads(text)["class_names"]]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise DataError(
                    f"source: {meta} is not daliaug's TFRecord metadata (no readable "
                    f"'class_names': {e}); fix or delete it, or give class_names or num_classes"
                ) from e
        if self.num_classes:
            return [str(i) for i in range(self.num_classes)]
        raise DataError(
            f"source: give class_names or num_classes for the TFRecords at {self.path} "
            f"(no {METADATA} found next to them)"
        )

    def _index(self, record_file: str) -> tuple[str, int]:
        """The index file of ``record_file`` and its record count: the one written for these
        contents if it still spans the whole file, else a new one (old ones removed). Where the
        default folder (in the cache) cannot take it, it goes to a temporary folder, with one
        warning; where ``index_dir`` cannot, a :class:`ConfigError` names it."""
        folder = (self.index_dir or default_cache_dir() / "tfrecord-index").expanduser()
        if storage.is_s3(record_file):
            size, contents = storage.identity(record_file).split(" ", 1)
            where, contents = record_file, hashlib.sha1(contents.encode()).hexdigest()[:16]
        else:
            size, where = str(os.path.getsize(record_file)), os.path.abspath(record_file)
            contents = contents_key(record_file)
        place = hashlib.sha1(os.fsencode(where)).hexdigest()[:16]
        stem = f"{Path(record_file).name}.{place}"
        name = f"{stem}.{contents}.idx"
        count = indexed_count(folder / name, int(size))
        if count is not None:
            return str(folder / name), count
        text, count = index_text(record_file, int(size))
        try:
            for old in folder.glob(f"{glob.escape(stem)}*.idx"):
                old.unlink(missing_ok=True)
            if self.index_dir is not None:
                return str(write_atomically(folder / name, text)), count
        except OSError as e:
            if self.index_dir is not None:
                raise ConfigError(
                    f"source.index_dir: cannot write the TFRecord index {folder / name}: "
                    f"{e.strerror or e}; give a folder you can write to"
                ) from e
        return str(write_cached(f"tfrecord-index/{name}", text, "a TFRecord index")), count

    def samples(self, seed: int | None = None) -> RecordSamples:  # type: ignore[override]
        files = self.record_files()
        with ThreadPoolExecutor(min(INDEXERS, len(files))) as pool:
            indexed = list(pool.map(self._index, files))
        return RecordSamples(
            files=files,
            index_files=[i for i, _ in indexed],
            counts=[c for _, c in indexed],
            class_names=self._class_names(files),
            image_key=self.image_key,
            label_key=self.label_key,
            shard_id=self.shard_id,
            num_shards=self.num_shards,
        )
