"""A folder listing kept between starts: a later start (or another process of the job on the
same host) reads what the last listing found instead of walking the folders again, once one
``stat`` of each folder it walked says none changed.

Adding, removing or renaming a file changes its folder's modification time, so a folder whose
time is the one recorded still holds the names listed (a file rewritten in place keeps its
name; the check, which keys each file by its size and time, finds it). A folder changed within
:data:`SETTLE_NS` of the listing is not trusted to show its next change (a change in the same
tick of the file system's clock keeps the time), so such a listing is not kept; nor is one
that could not read a folder. While one process lists, the others of the host wait for it
and then read what it kept (:func:`~daliaug.cache.kept_between_starts`): one listing per
host.

The kept file is one line of JSON (the folders walked and their times, the counts per listed
folder, the files left out, the digest of what follows) then each listed folder's file names,
relative to it, joined by NUL (which no path holds).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from daliaug.cache import kept_between_starts
from daliaug.sources.listing import IMAGE_EXTENSIONS, Listing, walk_images

SETTLE_NS = 2_000_000_000
"""A folder modified this close to its listing (or after it began) keeps no listing."""
FORMAT = 2
"""The kept file's format (a file of another is listed again)."""

Walked = dict[str, int] | None
"""Each folder a listing walked, by path, with its modification time (ns) before it was read
(``None``: a folder could not be read, and the listing is not kept)."""


def list_images(
    folders: Iterable[Path], tree: Path, extensions: tuple[str, ...] = IMAGE_EXTENSIONS
) -> Listing:
    """The files with ``extensions`` under each of ``folders`` (which lie in or are linked from
    ``tree``), each real folder listed once (:func:`~daliaug.sources.listing.walk_images`), as
    kept from the last start where no folder it walked changed since."""
    names = [str(folder) for folder in folders]
    key = ["images", os.path.realpath(tree), *names, *extensions]
    return kept_listing(key, names, lambda: walk_images(names, tree, extensions))


def kept_listing(
    key: list[str], folders: list[str], list_now: Callable[[], tuple[Listing, Walked]]
) -> Listing:
    """The listing of ``folders`` (``key``: everything it depends on) kept from an earlier
    start where no folder it walked has changed since, else ``list_now()``'s, kept for the
    next start."""
    digest = hashlib.sha256(json.dumps(key).encode("utf-8", "surrogateescape")).hexdigest()

    def listed() -> tuple[Listing, bytes | None]:
        started = time.time_ns()
        listing, walked = list_now()
        blob, counts = _blob(listing, folders)
        listing.digest = _digest(blob, counts)
        if walked is None or not _settled(walked, started):
            return listing, None
        return listing, _encoded(listing, walked, blob, counts)

    return kept_between_starts(
        f"listings/{digest[:32]}.listing",
        "a folder listing",
        lambda path: _read(path, folders),
        listed,
    )


def _prefix(folder: str) -> str:
    """What each path listed under ``folder`` starts with."""
    return folder if folder.endswith(os.sep) else folder + os.sep


def _settled(walked: dict[str, int], started: int) -> bool:
    """Whether a listing whose folders were all read can be kept: none changed near it."""
    return all(mtime < started - SETTLE_NS for mtime in walked.values())


def _blob(listing: Listing, folders: list[str]) -> tuple[bytes, list[int]]:
    """The names ``listing`` found under ``folders``, each without its folder, as one text,
    and how many each folder holds."""
    names = [
        path[len(_prefix(folder)) :]
        for folder in folders
        for path in listing.images.get(folder, [])
    ]
    counts = [len(listing.images.get(folder, [])) for folder in folders]
    return "\0".join(names).encode("utf-8", "surrogateescape"), counts


def _digest(blob: bytes, counts: list[int]) -> str:
    """The SHA-256 of a listing's names (``blob``) and ``counts``: :attr:`Listing.digest`."""
    return hashlib.sha256(json.dumps(counts).encode() + b"\n" + blob).hexdigest()


def _encoded(listing: Listing, walked: dict[str, int], blob: bytes, counts: list[int]) -> bytes:
    header = {
        "format": FORMAT,
        "digest": listing.digest,
        "walked": walked,
        "counts": counts,
        "ignored": listing.ignored,
        "skipped": listing.skipped,
    }
    return json.dumps(header).encode() + b"\n" + blob


def _read(path: Path, folders: list[str]) -> Listing | None:
    """The listing kept at ``path``, if there is one and every folder it walked is as it was."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    line, _, blob = data.partition(b"\n")
    try:
        header: dict[str, Any] = json.loads(line)
        if header.get("format") != FORMAT or len(header["counts"]) != len(folders):
            return None
        for folder, mtime in header["walked"].items():
            if os.stat(folder).st_mtime_ns != mtime:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if header.get("digest") != _digest(blob, header["counts"]):
        return None
    names = blob.decode("utf-8", "surrogateescape").split("\0") if blob else []
    if len(names) != sum(header["counts"]):
        return None
    listing = Listing(ignored=header["ignored"], skipped=header["skipped"], digest=header["digest"])
    start = 0
    for folder, count in zip(folders, header["counts"], strict=True):
        prefix = _prefix(folder)
        listing.images[folder] = [prefix + name for name in names[start : start + count]]
        start += count
    return listing
