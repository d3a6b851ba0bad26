"""TFRecords listed as columns (``source.listed``): each file read through once per contents, every
record's image found in it (where its bytes lie in the file: the record's offset plus the
image's place in the ``tf.train.Example``, :func:`~daliaug.sources.example_proto.features`), its
label and image size read and, unless ``check: headers``, the image decoded once.

The listing is kept in this host's cache for each file's identity (its size and ETag, or its size,
times and inode), so a later start reads no record and a file changed since is listed anew;
``daliaug check CONFIG --write-listings`` writes it beside the files (the listing file of their
folder), so that a start on any host that sees the same files (an S3 bucket's objects, or the
same file system) reads that file instead of the records. The records are then
samples like any column source's (ARCHITECTURE.md, "Two kinds of samples"): the feed reads a
batch's images by byte range (the ``encoded`` column of
:class:`~daliaug.sources.member_listing.MemberColumn`, as for WebDataset shards), so sharding, the
epoch's order (the same over any world: another world's state resumes), parameter rows, weights and
splits are those of every column source, on every engine and output.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.base import Samples
from daliaug.sources.checks import image_header, pillow_reason
from daliaug.sources.example_proto import Malformed, features
from daliaug.sources.member_listing import Lister, MemberColumn, ShardListing, by_folder, rows
from daliaug.sources.record_framing import Truncated, records_at
from daliaug.sources.storage import Found

LISTING_FORMAT = "daliaug record listing 1"
"""The version of what the cache keeps of a file's records."""


def listed_samples(
    path: str,
    found: Found,
    keys: tuple[str, str],
    class_names: Callable[[], list[str]],
    decode: bool,
) -> Samples:
    """The records of the files ``found`` at ``path`` (in order) as column samples:
    ``encoded`` (each image's bytes by range) and ``label`` (the int64 feature under
    ``keys[1]``, an index into ``class_names()``), the image under ``keys[0]``; ``decode``: each
    image decoded once when its file is listed. A record without the features, or whose image
    or label fails, is left out in ``rejected`` with the reason; what the folder holds beside
    the files is in ``ignored``."""
    files = found.files
    listings = lister(path, keys, decode).listings(files, found.identities)
    rejected = {k: v for one in listings for k, v in one.rejected.items()}
    where, sizes = rows(listings, "where"), rows(listings, "sizes")[:, 1:]
    labels = np.asarray([label for one in listings for label in one.labels], np.int64)
    if not len(where) and not rejected:
        raise DataError(f"source.path: the TFRecords at {path} hold no records")
    names = class_names()
    outside = np.flatnonzero((labels < 0) | (labels >= len(names)))
    if len(outside):
        owners = [f"{f}#{k}" for f, one in zip(files, listings, strict=True) for k in one.keys]
        for i in outside.tolist():
            rejected[owners[i]] = (
                f"record {owners[i]}: label {labels[i]} is not one of the {len(names)} classes "
                "(source.class_names or num_classes)"
            )
        keep = np.setdiff1d(np.arange(len(labels)), outside)
        where, sizes, labels = where[keep], sizes[keep], labels[keep]
    column = MemberColumn(files, where, [one.identity for one in listings])
    return Samples(
        {"encoded": column, "label": labels.astype(np.int32)},
        names,
        sizes,
        rejected=rejected,
        ignored=found.ignored,
    )


def write_listings(path: str, found: Found, keys: tuple[str, str]) -> list[str]:
    """The listing file of each folder of the files ``found`` at ``path``, made with the full
    check (which serves every ``check``), written beside them (keeping what it held of other
    files); the files written."""
    kept = lister(path, keys, True)
    entries = by_folder(found.files, kept.listings(found.files, found.identities))
    return [kept.write(folder, held, others=True) for folder, held in entries.items()]


def lister(path: str, keys: tuple[str, str], decode: bool) -> Lister:
    """Where the listings of the TFRecord files at ``path`` are found and kept: this host's
    cache (with ``decode``), the listing file of their folder (``daliaug check CONFIG
    --write-listings`` writes it, decoding each image), else each file read through
    (:func:`list_file`)."""
    settings = {"type": "tfrecord", "image_key": keys[0], "label_key": keys[1]}
    key = json.dumps([LISTING_FORMAT, path, settings, decode], sort_keys=True)
    cache = f"tfrecord-listing/{hashlib.sha1(key.encode()).hexdigest()[:24]}.json"
    read = partial(list_file, keys=keys, decode=decode)
    return Lister(LISTING_FORMAT, settings, cache, read, "TFRecord files")


def list_file(file: str, known: str, keys: tuple[str, str], decode: bool) -> ShardListing:
    """The records of TFRecord file ``file`` (of identity ``known``), read through once: each
    one's image (its bytes' place in the file), size and label, or why it is left out (a file
    cut short: the records from there on)."""
    out = ShardListing(identity=known)
    size = int(known.split()[0])
    if not size:
        return out
    records = records_at(file, 0, size, known)
    number = 0
    while True:
        try:
            got = next(records, None)
        except Truncated as e:
            out.rejected[f"{file}#{number}"] = f"{e}; the records from {number} on are left out"
            return out
        if got is None:
            return out
        offset, data = got
        name = f"{file}#{number}"
        try:
            (start, stop), label = _image_and_label(name, data, keys)
            image = data[start:stop]
            _, height, width = image_header(name, image)
            broken = pillow_reason(io.BytesIO(image)) if decode else None
            if broken is not None:
                raise DataError(f"cannot decode the image of record {name}: {broken}")
        except DataError as e:
            out.rejected[name] = str(e)
        else:
            out.keys.append(str(number))
            out.where.append((offset + start, stop - start))
            out.sizes.append((height, width))
            out.labels.append(label)
        number += 1


def _image_and_label(name: str, data: bytes, keys: tuple[str, str]) -> tuple[Any, int]:
    """Where record ``name``'s image lies in ``data`` and its label."""
    try:
        found = features(data)
    except Malformed as e:
        raise DataError(f"record {name} is not a tf.train.Example ({e})") from None
    (image_kind, images), (label_kind, labels) = (found.get(k, ("none", [])) for k in keys)
    if image_kind != "bytes_list" or len(images) != 1:
        raise DataError(
            f"record {name}: no image under {keys[0]!r} (one bytes value; it holds "
            f"{image_kind} of {len(images)}; source.image_key)"
        )
    if label_kind != "int64_list" or len(labels) != 1:
        raise DataError(
            f"record {name}: no label under {keys[1]!r} (one int64 value; it holds "
            f"{label_kind} of {len(labels)}; source.label_key)"
        )
    return images[0], int(labels[0])  # type: ignore[arg-type]
