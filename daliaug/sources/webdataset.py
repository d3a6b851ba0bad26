"""WebDataset shards: tar files whose consecutive members sharing a name before the first dot
are one sample (``000123.jpg``, ``000123.cls``, ``000123.json``), local or ``s3://``.

The samples are listed on the host as columns (ARCHITECTURE.md, "Two kinds of samples"): each
shard is read once, in one pass, when the source is first listed (the listing is cached by the
shard's size and modification time or ETag), which gives every member's offset
(the tar index, also written in DALI's ``wds2idx`` format for the user), each image's size from
its header and each label; ``encoded`` (:class:`MemberColumn`) then reads a batch's images by
byte range when the feed needs them, so sharding, reshuffling, parameter rows and weights are
those of every column source, on every engine and output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import tarfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

import numpy as np

from daliaug.cache import default_cache_dir, write_atomically, write_cached
from daliaug.errors import CacheError, ConfigError, DataError
from daliaug.fields import ClassCount, ClassNames, FilePath
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import image_header, pillow_reason
from daliaug.sources.storage import identity, list_files, open_stream, read_ranges, read_text
from daliaug.sources.tfrecord import METADATA

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png")
"""The members an image is read from, the first one a sample has."""
READERS = 16
"""Shards listed at once."""


def split_name(name: str) -> tuple[str, str]:
    """``(key, extension)`` of a member name as WebDataset (and DALI's ``wds2idx``) split it:
    at the first dot of its last path component."""
    dot = name.find(".", name.rfind("/") + 1)
    return (name, "") if dot < 0 else (name[:dot], name[dot + 1 :])


class Counted:
    """A stream that counts the bytes read from it."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream, self.count = stream, 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.count += len(data)
        return data


def members(stream: BinaryIO) -> Iterator[tuple[str, str, int, bytes]]:
    """``(key, extension, data offset, data)`` of each file in the tar ``stream``, read in
    one pass; a ``tarfile.ReadError`` where it is cut short, even between two members (no
    end-of-archive block follows the last)."""
    counted = Counted(stream)
    end = 0
    with tarfile.open(fileobj=counted, mode="r|") as tar:  # type: ignore[call-overload]
        for member in tar:
            name, ext = split_name(member.name)
            if not member.isreg() or not name or name.endswith("/"):
                continue
            reader = tar.extractfile(member)
            data = reader.read() if reader is not None else b""
            if len(data) != member.size:
                raise tarfile.ReadError(f"member {member.name} is cut short")
            end = member.offset_data + -(-member.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
            yield name, ext, member.offset_data, data
    while counted.read(1 << 20):
        pass
    if counted.count < end + tarfile.BLOCKSIZE:
        raise tarfile.ReadError(f"it ends after byte {counted.count}, with no end-of-archive")


class MemberColumn:
    """The ``encoded`` column: each sample's image member, as ``(shard, offset, size)`` rows
    into ``shards``. Indexing gives the rows' column; :func:`numpy.asarray` reads the images
    (zero-padded ``uint8`` rows, as the feed gives them; decoders stop at the image's end)."""

    def __init__(self, shards: Sequence[str], where: np.ndarray) -> None:
        self.shards = tuple(shards)
        self.where = np.asarray(where, np.int64).reshape(-1, 3)

    def __len__(self) -> int:
        return len(self.where)

    @property
    def shape(self) -> tuple[int, None]:
        return len(self), None

    def __getitem__(self, index: Any) -> MemberColumn:
        return MemberColumn(self.shards, self.where[index])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        data = read_ranges([(self.shards[s], o, n) for s, o, n in self.where.tolist()])
        out = np.zeros((len(data), max(map(len, data), default=1)), np.uint8)
        for i, b in enumerate(data):
            out[i, : len(b)] = np.frombuffer(b, np.uint8)
        return out


@dataclass
class ShardListing:
    """One shard read through: its samples' image members, sizes and labels, what was left
    out (``rejected``, by ``shard#key``), and its ``wds2idx`` index text."""

    where: list[tuple[int, int]] = field(default_factory=list)
    sizes: list[tuple[int, int]] = field(default_factory=list)
    labels: list[int | str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    index: list[str] = field(default_factory=list)


class WebDatasetSource(SourceConfig):
    """WebDataset tar shards: ``path`` is a ``.tar`` file, a folder or a glob of them, an
    ``s3://bucket/key.tar`` object or an ``s3://bucket/prefix`` holding them (credentials and
    endpoint from the AWS variables), or a list of these. A sample's image is its ``jpg``,
    ``jpeg`` or ``png`` member; its class its ``cls`` member (an integer), or with
    ``label_member: json`` the ``json_field`` of its ``json`` member (an integer, or a class
    name). Class names come from ``class_names``, else from the ``daliaug.json`` that
    ``daliaug convert`` writes next to the shards, else ``num_classes``, else the labels
    (``0..max``, or the sorted names). A sample without an image or a label, or whose image
    has a broken header or (``check: full``) does not decode with Pillow, is named, and left
    out with ``on_error: skip``; so are the samples after a truncated shard's end (DALI's
    decoders never see an image Pillow finds broken, see
    :func:`~daliaug.sources.checks.screened`). Each shard's index in DALI's ``wds2idx`` format
    is written to ``index_dir`` (default: a per-user cache folder)."""

    type: Literal["webdataset"] = "webdataset"
    path: str | list[str]
    label_member: Literal["cls", "json"] = "cls"
    json_field: str = "label"
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None
    index_dir: FilePath | None = None

    def shard_files(self) -> list[str]:
        """The shards, in order (each location's sorted)."""
        locations = [self.path] if isinstance(self.path, str) else self.path
        return [f for location in locations for f in list_files(location, ".tar")]

    def list_samples(self) -> Samples:
        shards = self.shard_files()
        with ThreadPoolExecutor(min(READERS, len(shards))) as pool:
            listings = list(pool.map(self._list_shard, shards))
        for shard, listing in zip(shards, listings, strict=True):
            self._write_index(shard, listing.index)
        where = [(s, o, n) for s, one in enumerate(listings) for o, n in one.where]
        labels = [label for one in listings for label in one.labels]
        rejected = {k: v for one in listings for k, v in one.rejected.items()}
        if not where and not rejected:
            raise DataError(f"source.path: the shards at {self.path} hold no samples")
        names, values = self._classes(shards[0], labels)
        sizes = np.asarray([s for one in listings for s in one.sizes], np.int64).reshape(-1, 2)
        columns = {"encoded": MemberColumn(shards, np.asarray(where).reshape(-1, 3))}
        return Samples(
            {**columns, "label": np.asarray(values, np.int32)}, names, sizes, rejected=rejected
        )

    def _list_shard(self, shard: str) -> ShardListing:
        """``shard``'s listing: the one kept in the cache for its contents (its size and
        modification time or ETag), these label fields and ``check``, else read anew and
        kept."""
        fields = (shard, identity(shard), self.label_member, self.json_field, self.check)
        contents = "\0".join(fields)
        relative = f"webdataset-listing/{hashlib.sha1(contents.encode()).hexdigest()[:24]}.json"
        with contextlib.suppress(CacheError, OSError, ValueError, TypeError):
            return ShardListing(**json.loads((default_cache_dir() / relative).read_text()))
        listing = self._read_shard(shard)
        write_cached(relative, json.dumps(dataclasses.asdict(listing)), "a WebDataset listing")
        return listing

    def _read_shard(self, shard: str) -> ShardListing:
        out = ShardListing()
        sample: dict[str, tuple[int, int, bytes]] = {}
        key = None
        with open_stream(shard) as stream:
            try:
                for name, ext, offset, data in members(stream):
                    if name != key:
                        self._add(out, shard, key, sample)
                        key, sample = name, {}
                    sample[ext] = (offset, len(data), data)
            except (tarfile.TarError, EOFError) as e:
                out.rejected[f"{shard}#{key or 'start'}"] = (
                    f"shard {shard} is not a whole tar file ({e}); the samples from "
                    f"{key or 'its start'} on are left out"
                )
                return out
        self._add(out, shard, key, sample)
        return out

    def _add(
        self, out: ShardListing, shard: str, key: str | None, sample: dict[str, tuple]
    ) -> None:
        """Sample ``key`` of ``shard`` (its members by extension) into ``out``, or into its
        ``rejected`` with the reason."""
        if key is None:
            return
        name = f"{shard}#{key}"
        out.index.append(
            " ".join(f"{ext} {o} {n} {key}.{ext}" for ext, (o, n, _) in sample.items())
        )
        image = next((ext for ext in IMAGE_EXTENSIONS if ext in sample), None)
        try:
            if image is None:
                raise DataError(
                    f"sample {name} has no image member ({', '.join(IMAGE_EXTENSIONS)}); "
                    f"it holds {', '.join(sorted(sample)) or 'nothing'}"
                )
            label = self._label(name, sample)
            offset, size, data = sample[image]
            _, height, width = image_header(f"{name}.{image}", data)
            broken = pillow_reason(io.BytesIO(data)) if self.check == "full" else None
            if broken is not None:
                raise DataError(f"cannot decode image {name}.{image}: {broken}")
        except DataError as e:
            out.rejected[name] = str(e)
            return
        out.where.append((offset, size))
        out.sizes.append((height, width))
        out.labels.append(label)

    def _label(self, name: str, sample: dict[str, tuple]) -> int | str:
        member = self.label_member
        if member not in sample:
            raise DataError(f"sample {name} has no {member} member (source.label_member)")
        text = sample[member][2].decode("utf-8", "replace").strip()
        if member == "cls":
            if not text.isdigit():
                raise DataError(f"sample {name}: its cls member {text[:20]!r} is no class index")
            return int(text)
        try:
            value = json.loads(text)[self.json_field]
        except (json.JSONDecodeError, TypeError, KeyError) as e:
            raise DataError(
                f"sample {name}: its json member has no {self.json_field!r} "
                f"(source.json_field): {e}"
            ) from e
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise DataError(f"sample {name}: its json {self.json_field!r} is {value!r}")
        return value

    def _classes(self, first: str, labels: list[int | str]) -> tuple[list[str], list[int]]:
        """The class names and each label as an index."""
        names = self.class_names or self._metadata_names(first)
        if names is None and self.num_classes:
            names = [str(i) for i in range(self.num_classes)]
        numeric = all(isinstance(label, int) for label in labels)
        if names is None:
            top = max((int(label) for label in labels), default=0) if numeric else 0
            names = [str(i) for i in range(top + 1)] if numeric else sorted(set(map(str, labels)))
        index = {name: i for i, name in enumerate(names)}
        values = []
        for label in labels:
            value = label if isinstance(label, int) else index.get(label, -1)
            if not 0 <= value < len(names):
                raise DataError(
                    f"source: label {label!r} is not one of the {len(names)} classes "
                    f"({', '.join(names[:5])}{'...' if len(names) > 5 else ''})"
                )
            values.append(value)
        return names, values

    @staticmethod
    def _metadata_names(first: str) -> list[str] | None:
        text = read_text(f"{first.rsplit('/', 1)[0]}/{METADATA}")
        if text is None:
            return None
        try:
            return [str(name) for name in json.loads(text)["class_names"]]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise DataError(
                f"source: the {METADATA} next to {first} has no readable 'class_names' ({e}); "
                "fix or delete it, or give class_names or num_classes"
            ) from e

    def _write_index(self, shard: str, lines: list[str]) -> None:
        """Keep ``shard``'s index in DALI's ``wds2idx`` format (``v1.2 count``, then one line
        per sample: ``ext offset size name`` per member)."""
        if not lines:
            return
        text = f"v1.2 {len(lines)}\n" + "\n".join(lines) + "\n"
        place = hashlib.sha1(shard.encode()).hexdigest()[:16]
        name = f"{shard.rsplit('/', 1)[-1]}.{place}.idx"
        if self.index_dir is None:
            write_cached(f"webdataset-index/{name}", text, "a WebDataset index")
            return
        try:
            write_atomically(self.index_dir.expanduser() / name, text)
        except OSError as e:
            raise ConfigError(
                f"source.index_dir: cannot write the WebDataset index {self.index_dir / name}: "
                f"{e.strerror or e}; give a folder you can write to"
            ) from e
