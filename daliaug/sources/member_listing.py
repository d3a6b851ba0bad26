"""Members of container files (tar shards, TFRecord files) as byte ranges: a file's listing
(:class:`ShardListing`: each sample's image member and what the listing read of it), as the
cache and listing files keep it (:func:`stored`, :func:`restored`), and the ``encoded`` column
that reads a batch's members by range (:class:`MemberColumn`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daliaug.sources.base import padded
from daliaug.sources.storage import is_s3, read_ranges


class MemberColumn:
    """The ``encoded`` column: each sample's image member, as ``(shard, offset, size)`` rows
    into ``shards``, whose ``identities`` (:func:`~daliaug.sources.storage.identity`, taken
    when they were listed) each read checks. Indexing gives the rows' column;
    :func:`numpy.asarray` reads the images (zero-padded ``uint8`` rows, as the feed gives
    them; decoders stop at the image's end), a :class:`DataError` naming a shard that is no
    longer the one listed."""

    def __init__(self, shards: Sequence[str], where: np.ndarray, identities: Sequence[str]) -> None:
        self.shards = tuple(shards)
        self.where = np.asarray(where, np.int64).reshape(-1, 3)
        self.identities = dict(zip(self.shards, identities, strict=True))

    def __len__(self) -> int:
        return len(self.where)

    @property
    def shape(self) -> tuple[int, None]:
        return len(self), None

    def __getitem__(self, index: Any) -> MemberColumn:
        return MemberColumn(self.shards, self.where[index], list(self.identities.values()))

    def key(self) -> bytes:
        """What identifies the members: each file with its identity (a local file's size and
        modification time, as a file column's: the same on every host that copied it), and
        the rows."""
        held = {f: i if is_s3(f) else " ".join(i.split()[:2]) for f, i in self.identities.items()}
        return "\n".join(f"{f}\0{i}" for f, i in held.items()).encode() + self.where.tobytes()

    def member(self, k: int) -> bytes:
        """Row ``k``'s bytes, exactly."""
        shard, offset, size = self.where[k].tolist()
        return read_ranges([(self.shards[shard], offset, size)], self.identities)[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        rows = [(self.shards[s], o, n) for s, o, n in self.where.tolist()]
        return padded(read_ranges(rows, self.identities))


@dataclass
class ShardListing:
    """One shard read through: its samples' keys, image members, sizes and labels (or
    boxes: :meth:`WebDatasetSource._boxes`), what was left out (``rejected``, by
    ``shard#key``), its ``wds2idx`` index text and the shard's ``identity`` when it was read
    (:func:`~daliaug.sources.storage.identity`)."""

    keys: list[str] = field(default_factory=list)
    where: list[tuple[int, int]] = field(default_factory=list)
    sizes: list[tuple[int, int]] = field(default_factory=list)
    labels: list[int | str] = field(default_factory=list)
    boxes: list[dict[str, Any]] = field(default_factory=list)
    masks: list[tuple[int, int]] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    index: list[str] = field(default_factory=list)
    identity: str = ""


STORED = ("identity", "keys", "where", "sizes", "labels", "boxes", "masks")
"""What is kept of a :class:`ShardListing` (beside ``rejected``, by key): all but its
``index`` (the shard's ``wds2idx`` lines, written for the user where a host reads the shard
whole)."""
PAIRS = ("where", "sizes", "masks")
"""A listing's columns of pairs of numbers (offset and size; height and width)."""
HERE = "<shard>"
"""Where a kept reason names its shard (the shard's place when it is read back)."""


def stored(shard: str, listing: ShardListing) -> dict[str, Any]:
    """``listing`` of ``shard`` as it is kept (in this host's cache, in a listing file): its
    keys as one text, its pairs (``where``, ``sizes``, ``masks``) as flat lists of numbers (a
    million samples' decode in about a second)."""
    out = {name: getattr(listing, name) for name in STORED}
    out["keys"] = "\n".join(listing.keys)
    for name in PAIRS:
        out[name] = np.asarray(out[name], np.int64).reshape(-1).tolist()
    out["rejected"] = {
        k.split("#", 1)[1]: why.replace(shard, HERE) for k, why in listing.rejected.items()
    }
    return out


def restored(shard: str, kept: dict[str, Any]) -> ShardListing:
    """The listing of ``shard`` kept as ``kept`` (a ``ValueError`` where it is not one)."""
    rejected = {f"{shard}#{k}": why.replace(HERE, shard) for k, why in kept["rejected"].items()}
    fields = {name: kept[name] for name in STORED}
    fields["keys"] = fields["keys"].split("\n") if fields["keys"] else []
    for name in PAIRS:
        fields[name] = np.asarray(fields[name], np.int64).reshape(-1, 2)
    listing = ShardListing(**fields, rejected=rejected)
    if len({len(listing.keys), len(listing.where), len(listing.sizes)}) > 1:
        raise ValueError(f"the listing of {shard} has columns of different lengths")
    return listing


def rows(listings: list[ShardListing], column: str) -> np.ndarray:
    """The ``(shard, a, b)`` rows of each listing's pairs ``column`` (shard: its position in
    ``listings``), as one ``int64`` array."""
    parts = [np.asarray(getattr(one, column), np.int64).reshape(-1, 2) for one in listings]
    shard = np.repeat(np.arange(len(parts)), [len(part) for part in parts])
    pairs = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
    return np.column_stack([shard, pairs]).astype(np.int64)
