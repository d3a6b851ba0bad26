"""Listing files: what a listing of remote data found (members or objects, image sizes, labels,
the decode check's results), written once beside the data by ``daliaug check CONFIG
--write-listings`` and read at every start, on any host, instead of the data.

A file holds its ``format``, the fields its source checks before using it (the identities and
settings it was made for) and its ``listing`` with the listing's SHA-256: a file of another
format, or edited or cut, is not used, and a :class:`~daliaug.errors.DataWarning` names it
(the data is then read, as without it).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

from daliaug.errors import DataError, DataWarning, user_stacklevel
from daliaug.sources.storage import read_text, write_text

SUFFIX = ".listing.json"
"""A file's listing file's name: the file's, this in place of its extension (``train.csv`` ->
``train.listing.json``)."""
WRITE_AGAIN = "daliaug check CONFIG --write-listings writes the listings anew"


def beside(location: str) -> str:
    """Where the listing file of the data at ``location`` (a file or object) is."""
    folder, _, name = location.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return f"{folder}/{stem}{SUFFIX}" if folder else f"{stem}{SUFFIX}"


def digest(listing: Any) -> str:
    """The SHA-256 of ``listing`` as JSON with sorted keys."""
    return hashlib.sha256(json.dumps(listing, sort_keys=True).encode()).hexdigest()


def write(location: str, form: str, fields: dict[str, Any], listing: Any) -> None:
    """The listing file at ``location``: ``form``, ``fields`` and ``listing`` with its
    SHA-256 (a :class:`DataError` names a place that cannot be written)."""
    text = json.dumps({"format": form, **fields, "sha256": digest(listing), "listing": listing})
    write_text(location, text)


def read(location: str, form: str, instead: str) -> dict[str, Any] | None:
    """The listing file at ``location`` (its fields, ``listing`` among them) where it is a
    whole ``form`` file; ``None`` where there is none, and where it cannot be read or is not
    whole (with :func:`unused`, saying what is done ``instead``)."""
    try:
        text = read_text(location)
        if text is None:
            return None
        kept = json.loads(text)
        if not isinstance(kept, dict) or kept.get("format") != form:
            found = kept.get("format") if isinstance(kept, dict) else None
            why = f"it is not a {form!r} file (format {found!r})"
        elif digest(kept["listing"]) != kept["sha256"]:
            why = "its listing does not match its SHA-256 (the file was edited or cut)"
        else:
            return kept
    except (DataError, OSError, ValueError, KeyError) as e:
        why = f"it cannot be read ({type(e).__name__}: {e})"
    unused(location, why, instead)
    return None


def unused(location: str, why: str, instead: str) -> None:
    """One :class:`DataWarning`: the listing file at ``location`` is not used, ``why``, and
    what is done ``instead``."""
    warnings.warn(
        f"the listing file {location} is not used: {why}; {instead} ({WRITE_AGAIN})",
        DataWarning,
        stacklevel=user_stacklevel(),
    )
