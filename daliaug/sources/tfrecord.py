"""TFRecord shards of ``tf.train.Example`` records holding encoded images and labels."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Literal, NoReturn

from daliaug.cache import default_cache_dir, write_atomically, write_cached
from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import ClassCount, ClassNames, FilePath, Location
from daliaug.sources import storage
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.example_proto import Malformed, feature_kinds
from daliaug.sources.record_framing import index_text, read_records
from daliaug.sources.record_listing import listed_samples, write_listings
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
        raise ValueError(
            f"{which} params need a column source, not streamed TFRecords (source.listed)"
        )

    def check_sample_weights(self) -> None:
        raise ConfigError(
            "sample_weight: TFRecords are streamed; weigh classes with class_weight, or list "
            "them (source.listed: true)"
        )

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
    path: Location
    image_key: str = "image/encoded"
    label_key: str = "image/class/label"
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None
    index_dir: FilePath | None = None
    listed: bool = False
    """``True``: the records are listed on the host as columns, like WebDataset shards (each
    file read through once per contents, every image's place, size and label kept in the
    cache, each image decoded once unless ``check: headers``; :mod:`daliaug.sources.
    record_listing`), and each batch's images read by byte range: the records are then
    samples like any column source's (another world's state resumes, per-sample weights and
    parameters, batch stages, a random split, every engine). ``False`` (the default):
    streamed, each engine's own reader (DALI's, ``tf.data``'s) reading the files in order,
    with nothing read at a start but each file's index."""

    @property
    def streamed(self) -> str | None:  # type: ignore[override]
        """Why the records are not column samples, unless ``listed``."""
        if self.listed:
            return None
        return "TFRecords are streamed (give source.listed: true, or convert them)"

    def record_files(self) -> list[str]:
        """The TFRecord files at ``path``, sorted (:func:`~daliaug.sources.storage.list_files`:
        a file or object taken literally, else a folder, else a glob), not DALI's index files
        (``.idx``, which an ``index_dir`` of the same folder holds)."""
        return self._found().files

    def _found(self) -> storage.Found:
        return storage.list_files([str(self.path)], _record_name, "TFRecord")

    def list_samples(self) -> Samples:
        """The records as column samples (``listed``: :mod:`daliaug.sources.record_listing`)."""
        found = self._found()
        keys, decode = (self.image_key, self.label_key), self.check != "headers"
        names = partial(self._class_names, found.files)
        return listed_samples(str(self.path), found, keys, names, decode)

    def write_listings(self) -> list[str]:
        """The listing file of each folder of the records, where they are ``listed``
        (:func:`~daliaug.sources.record_listing.write_listings`)."""
        if not self.listed:
            return super().write_listings()
        keys = (self.image_key, self.label_key)
        return write_listings(str(self.path), self._found(), keys)

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

    def samples(self, seed: int | None = None) -> RecordSamples | Samples:  # type: ignore[override]
        if self.listed:
            return super().samples(seed)
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
