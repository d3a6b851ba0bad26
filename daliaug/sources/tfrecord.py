"""TFRecord shards of ``tf.train.Example`` records holding encoded images and labels."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal, NoReturn

from daliaug.cache import default_cache_dir, write_atomically, write_cached
from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import ClassCount, ClassNames, FilePath
from daliaug.sources.base import SourceConfig
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

    def check_readable(self) -> None:
        """The first record holds both feature keys, with the expected kinds of values (read
        with TensorFlow)."""
        import tensorflow as tf

        first = next(iter(tf.data.TFRecordDataset(self.files[:1])), None)
        if first is None:
            raise DataError(f"TFRecord file {self.files[0]} holds no records")
        feature = tf.train.Example.FromString(first.numpy()).features.feature
        for key, kind in ((self.image_key, "bytes_list"), (self.label_key, "int64_list")):
            if key not in feature or feature[key].WhichOneof("kind") != kind:
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


def _unsplit(field: str, folder: Path) -> DataError:
    return DataError(f"{field}: give TFRecords as {folder}/train and {folder}/val folders")


def write_index(record_file: str, index_file: Path) -> int:
    """Write DALI's index (``offset size`` per record) of one TFRecord file; returns the count."""
    text, count = index_text(record_file)
    write_atomically(index_file, text)
    return count


def index_text(record_file: str) -> tuple[str, int]:
    """DALI's index of one TFRecord file (``offset size`` per record), and the record count."""
    size = os.path.getsize(record_file)
    lines, offset = [], 0
    with open(record_file, "rb") as f:
        while offset < size:
            header = f.read(12)
            if len(header) < 12:
                raise DataError(f"TFRecord file {record_file} is truncated at byte {offset}")
            (length,) = struct.unpack("<Q", header[:8])
            end = offset + 12 + length + 4
            if end > size:
                raise DataError(f"TFRecord file {record_file} is truncated at byte {offset}")
            lines.append(f"{offset} {end - offset}\n")
            f.seek(end)
            offset = end
    return "".join(lines), len(lines)


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
    glob. DALI's reader needs an index per file: daliaug writes them itself, to ``index_dir``
    (default: a per-user cache folder), keyed by the shard's size, modification time and the
    bytes at its ends (:func:`contents_key`), and rewrites one when any of them changes or the
    index does not span the shard (even for a file replaced by an older one). Class names
    come from ``class_names``, else from the ``daliaug.json`` that ``daliaug convert`` writes,
    else ``num_classes``.
    """

    type: Literal["tfrecord"] = "tfrecord"
    streamed: ClassVar[str | None] = (
        "TFRecords are streamed (convert them to a directory or file list)"
    )
    path: FilePath
    image_key: str = "image/encoded"
    label_key: str = "image/class/label"
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None
    index_dir: FilePath | None = None

    def record_files(self) -> list[str]:
        root = self.path.expanduser()
        if root.is_dir():
            files = sorted(str(p) for p in root.iterdir() if ".tfrecord" in p.name and p.is_file())
        else:
            files = sorted(glob.glob(str(root)))
        if not files:
            raise DataError(f"source.path: found no TFRecord files at {self.path}")
        return files

    def _class_names(self, files: list[str]) -> list[str]:
        if self.class_names:
            return list(self.class_names)
        meta = Path(files[0]).parent / METADATA
        if meta.is_file():
            text = read_text(meta, "source: cannot read TFRecord metadata")
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
        place = hashlib.sha1(os.fsencode(os.path.abspath(record_file))).hexdigest()[:16]
        stem = f"{Path(record_file).name}.{place}"
        name = f"{stem}.{contents_key(record_file)}.idx"
        count = indexed_count(folder / name, os.path.getsize(record_file))
        if count is not None:
            return str(folder / name), count
        text, count = index_text(record_file)
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
        indexed = [self._index(f) for f in files]
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
