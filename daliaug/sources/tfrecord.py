"""TFRecord shards of ``tf.train.Example`` records holding encoded images and labels."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from daliaug.cache import default_cache_dir, write_atomically
from daliaug.epoch import shard_range
from daliaug.errors import DataError
from daliaug.sources.base import SourceConfig, read_text

METADATA = "daliaug.json"
"""Written next to the shards by ``daliaug convert``: class names and the feature keys."""


@dataclass(frozen=True)
class RecordSamples:
    """TFRecord shards with a DALI index file each; streamed rather than listed by column."""

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
    def num_classes(self) -> int:
        return len(self.class_names)


def write_index(record_file: str, index_file: Path) -> int:
    """Write DALI's index (``offset size`` per record) of one TFRecord file; returns the count."""
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
    write_atomically(index_file, "".join(lines))
    return len(lines)


class TFRecordSource(SourceConfig):
    """``tf.train.Example`` records with the encoded image under ``image_key`` (bytes) and an
    integer label under ``label_key``. ``path`` is a file, a folder of ``*.tfrecord*`` files or a
    glob. DALI's reader needs an index per file: daliaug writes them itself, to ``index_dir``
    (default: a per-user cache folder) and rewrites one when its shard changes. Class names
    come from ``class_names``, else from the ``daliaug.json`` that ``daliaug convert`` writes,
    else ``num_classes``.
    """

    type: Literal["tfrecord"] = "tfrecord"
    path: Path
    image_key: str = "image/encoded"
    label_key: str = "image/class/label"
    class_names: list[str] | None = None
    num_classes: Annotated[int, Field(gt=0)] | None = None
    index_dir: Path | None = None

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
        folder = (self.index_dir or default_cache_dir() / "tfrecord-index").expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        key = hashlib.sha1(os.path.abspath(record_file).encode()).hexdigest()[:16]
        index = folder / f"{Path(record_file).name}.{key}.idx"
        if index.is_file() and index.stat().st_mtime >= os.path.getmtime(record_file):
            with index.open() as lines:
                return str(index), sum(1 for _ in lines)
        return str(index), write_index(record_file, index)

    def samples(self) -> RecordSamples:  # type: ignore[override]
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
