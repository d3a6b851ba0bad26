"""Members of container files (tar shards, TFRecord files) as byte ranges: a file's listing
(:class:`ShardListing`: each sample's image member and what the listing read of it), as the
cache and listing files keep it (:func:`stored`, :func:`restored`), where a start finds it
(:class:`Lister`: this host's cache, the listing file of the file's folder, else the file read
whole), and the ``encoded`` column that reads a batch's members by range
(:class:`MemberColumn`)."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daliaug.cache import read_cached, write_cached
from daliaug.errors import DataWarning
from daliaug.sources import listing_files
from daliaug.sources.base import padded
from daliaug.sources.storage import identity, is_s3, read_ranges

READERS = 16
"""Files listed at once."""


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
        k.removeprefix(f"{shard}#"): why.replace(shard, HERE) for k, why in listing.rejected.items()
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


LISTING_NAME = "daliaug-listing.json"
"""The listing file of a folder (or prefix) of shards or TFRecord files, beside them."""


def folder_of(file: str) -> str:
    return file.rsplit("/", 1)[0]


@dataclass(frozen=True)
class Lister:
    """How a source's files (shards, TFRecord files) are listed: each file's listing is found
    for the file's identity in this host's cache (``cache``, one file for the source), else in
    the listing file of its folder (:data:`LISTING_NAME`, written in ``format`` with these
    ``settings``: :mod:`~daliaug.sources.listing_files`), else ``read`` from the file itself
    (``files`` names them in messages)."""

    format: str
    settings: dict[str, Any]
    cache: str
    read: Callable[[str, str], ShardListing]
    files: str = "shards"

    def listings(
        self, files: list[str], identities: dict[str, str], keep: bool = True
    ) -> list[ShardListing]:
        """Each file's listing for its identity now (``identities``, where the bucket's
        listing gave them, else looked up); with ``keep``, the listings kept in the cache
        where any came from elsewhere."""
        with ThreadPoolExecutor(min(READERS, len(files))) as pool:
            now = {file: identities.get(file, "") for file in files}
            unknown = [file for file, known in now.items() if not known]
            now.update(zip(unknown, pool.map(identity, unknown), strict=True))
            kept = self.cached()
            found = {f: kept[f] for f in files if f in kept and kept[f].identity == now[f]}
            missing = [file for file in files if file not in found]
            filed = self.filed(missing) if missing else {}
            stale: dict[str, list[str]] = {}
            for file in missing:
                listing = filed.get(file)
                if listing is not None and listing.identity == now[file]:
                    found[file] = listing
                elif listing is not None:
                    stale.setdefault(f"{folder_of(file)}/{LISTING_NAME}", []).append(file)
            for place, changed in stale.items():
                shown = f"{changed[0]}{', ...' if len(changed) > 1 else ''}"
                listing_files.unused(
                    place,
                    f"{len(changed)} of the {self.files} it lists changed since ({shown})",
                    f"those {self.files} are read whole to list them",
                )
            todo = [file for file in files if file not in found]
            found.update(zip(todo, pool.map(self.read, todo, [now[f] for f in todo]), strict=True))
        if keep and any(kept.get(file) is not found[file] for file in files):
            text = json.dumps({file: stored(file, found[file]) for file in files})
            write_cached(self.cache, text, f"a listing of {self.files}")
        return [found[file] for file in files]

    def cached(self) -> dict[str, ShardListing]:
        """The listings this host's cache keeps for these files (empty where none)."""
        kept = read_cached(self.cache) or {}
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            return {file: restored(file, listing) for file, listing in kept.items()}
        return {}

    def filed(self, files: list[str]) -> dict[str, ShardListing]:
        """The listings that the listing files of ``files``' folders hold, where they were
        written with these settings and are whole (else named: :func:`listing_files.read`)."""
        out: dict[str, ShardListing] = {}
        for folder in dict.fromkeys(map(folder_of, files)):
            place = f"{folder}/{LISTING_NAME}"
            instead = f"the {self.files} it lists are read whole to list them"
            kept = listing_files.read(place, self.format, instead)
            if kept is None:
                continue
            try:
                why = self.other_settings(kept["settings"])
                if why is None:
                    for name, listing in kept["listing"].items():
                        out[f"{folder}/{name}"] = restored(f"{folder}/{name}", listing)
                    continue
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                why = f"it cannot be read ({type(e).__name__}: {e})"
            listing_files.unused(place, why, instead)
        return out

    def other_settings(self, theirs: dict[str, Any]) -> str | None:
        """How the settings ``theirs`` (a listing file's) differ from these (``None``: not)."""
        ours = self.settings
        differ = [k for k in sorted(ours.keys() | theirs.keys()) if ours.get(k) != theirs.get(k)]
        if not differ:
            return None
        shown = "; ".join(f"{k} {theirs.get(k)!r} there, {ours.get(k)!r} here" for k in differ)
        return f"it was written with other source settings ({shown})"

    def write(self, folder: str, entries: dict[str, dict[str, Any]], others: bool = False) -> str:
        """The listing file of ``folder`` (a folder or prefix), holding ``entries`` (its
        files' listings by name) and, with ``others``, those the file there holds of other
        files, where it was written with these settings (another source's files in the same
        folder: a training and a validation split); where it was written. A place that cannot
        be written is a :class:`DataError` naming it."""
        place = f"{folder}/{LISTING_NAME}"
        held: dict[str, Any] = {}
        if others:
            with warnings.catch_warnings():  # (one that cannot serve is written anew)
                warnings.simplefilter("ignore", DataWarning)
                kept = listing_files.read(place, self.format, "") or {}
            theirs, listed = kept.get("settings"), kept.get("listing")
            if isinstance(theirs, dict) and isinstance(listed, dict):
                held = listed if self.other_settings(theirs) is None else {}
        listing = {**held, **entries}
        listing_files.write(place, self.format, {"settings": self.settings}, listing)
        return place


def by_folder(files: list[str], listings: list[ShardListing]) -> dict[str, dict[str, Any]]:
    """Each folder of ``files`` with the listing of each of its files (by name, as a listing
    file holds it)."""
    out: dict[str, dict[str, Any]] = {}
    for file, listing in zip(files, listings, strict=True):
        out.setdefault(folder_of(file), {})[file.rsplit("/", 1)[1]] = stored(file, listing)
    return out
