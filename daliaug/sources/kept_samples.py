"""A detection source's samples kept between starts: a later start over the same annotations
and images takes them from the cache, without parsing the annotations, reading a header or
checking a box again, once a ``stat`` of each file they came from says none changed.

A listing's samples depend on its source's settings and on files: those the source reads
before it knows its images (a COCO file; YOLO's label files; VOC's XML files), each image
whose header was read (none where the listing left them to the background check, which holds
each to the size its annotations declare, or to its boxes where they are fractions of it),
each file left out, and the names of the images a YOLO or VOC folder holds (and of YOLO's
label files, where the check reads them: :mod:`daliaug.sources.yolo_labels`; the record then
holds each sample's label file, not its boxes). The record holds
each file's key (size, modification and status-change times, inode) as it was before it was
read; a file added, removed, replaced or rewritten in place changes a key or the list of
files, and the samples are listed anew. A listing in which a file changed within
:data:`~daliaug.sources.kept_listing.SETTLE_NS` of its start (a change in the same tick of the
file system's clock keeps the key) is not kept. Processes of a host list one at a time, the
others reading what the first kept (as a folder listing's).

The record is one ``.npz``: the settings' digest and the samples' messages as JSON, the files
watched and their keys, and the samples' paths, sizes and boxes as flat arrays (or, where the
check reads the label files, each sample's label file).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.cache import kept_between_starts
from daliaug.sources.annotations import object_column
from daliaug.sources.base import Samples
from daliaug.sources.checks import stat_keys
from daliaug.sources.kept_listing import SETTLE_NS
from daliaug.sources.yolo_labels import LabelColumn, LabelFiles

FORMAT = 4
"""The record's format (a record of another is listed anew)."""


def kept_samples(
    settings: dict[str, Any],
    inputs: Sequence[str],
    list_now: Callable[[], Samples],
    named: Sequence[str] = (),
) -> Samples:
    """The samples ``list_now()`` gives for a source of ``settings`` reading ``inputs`` (and
    the images they name), as kept from an earlier start where no file they came from has
    changed since, else listed now and kept for the next start. ``named``: the digests of the
    folder listings whose names the samples depend on
    (:attr:`~daliaug.sources.listing.Listing.digest`: of the images a YOLO or VOC folder holds,
    and of YOLO's label files where the check reads them), in the record's digest (an image
    is asked for a ``stat`` only where the listing read its header, its key then held with
    the samples'). The record is named by the settings alone: a listing of other files takes
    its place."""
    key = json.dumps({**settings, "cwd": os.getcwd(), "code": _code()}, sort_keys=True)
    hashed = hashlib.sha256(key.encode("utf-8", "surrogateescape"))
    name = hashed.hexdigest()[:32]
    if named:
        assert all(named), "a listing's digest is made by list_images"
        hashed.update(" ".join(named).encode())
    digest = hashed.hexdigest()

    def listed() -> tuple[Samples, bytes | None]:
        started = time.time_ns()
        before = stat_keys(inputs)
        samples = list_now()
        return samples, _record(samples, digest, inputs, before, started)

    return kept_between_starts(
        f"samples/{name}.npz",
        "a detection listing",
        lambda path: _read(path, digest, inputs),
        listed,
    )


@functools.cache
def _code() -> str:
    """A digest of the code a box source's samples come from (a daliaug that parses, checks or
    keeps them otherwise lists anew rather than take another's record)."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    names = ("annotations.py", "checks.py", "coco.py", "voc.py", "yolo.py", "yolo_labels.py")
    for name in (*names, "kept_samples.py"):
        with contextlib.suppress(OSError):  # (a file that cannot be read adds nothing)
            digest.update((here / name).read_bytes())
    return digest.hexdigest()


def _record(
    samples: Samples, digest: str, inputs: Sequence[str], before: np.ndarray, started: int
) -> bytes | None:
    """The record of ``samples`` (``before``: the keys of ``inputs`` before they were read),
    or ``None`` where it is not to be kept (a file changed near the listing, a sample without
    its key). Its watched files are the inputs, the files left out, and the images where the
    listing read their headers (``Samples.sized``: else the background check reads them)."""
    paths, listed = samples.files["path"], samples.listed or {}
    if samples.sized and any(p not in listed for p in paths):
        return None
    watched = list(inputs)
    rows = {p: i for i, p in enumerate(watched)}
    for p in [*samples.rejected, *paths]:
        if p not in rows:
            rows[p] = len(watched)
            watched.append(p)
    left_out = [p for p in watched[len(inputs) :] if p in samples.rejected]
    images = watched[len(inputs) + len(left_out) :] if samples.sized else []
    keys = np.concatenate(
        [
            before,
            stat_keys(left_out),  # (taken after their read: the settling below covers it)
            np.array([listed[p] for p in images], np.int64).reshape(-1, 4),
        ]
    )
    if (keys[:, [1, 3]] >= started - SETTLE_NS).any():
        return None
    boxes = samples.columns["boxes"]
    late = isinstance(boxes, LabelColumn)
    header = {
        "format": FORMAT,
        "digest": digest,
        "inputs": len(inputs),
        "held": len(keys),
        "declared": samples.declared,
        "normalised": samples.normalised,
        "class_names": samples.class_names,
        "rejected": samples.rejected,
        "ignored": samples.ignored,
        "notes": samples.notes,
        "flip_indices": samples.flip_indices,
        "late": _late(boxes) if late else None,
    }
    arrays = {
        "header": _bytes(json.dumps(header).encode()),
        "watched": _bytes(os.fsencode("\0".join(watched))),
        "keys": keys,
        "rows": np.array([rows[p] for p in paths], np.int64),
        "sizes": samples.sizes,
    }
    if late:  # (each sample's label file, read by the check)
        arrays["label_files"] = _bytes(os.fsencode("\0".join(boxes.label_files())))
    else:
        arrays["counts"] = np.array([len(b) for b in boxes], np.int64)
        arrays.update(
            {name: _flat(samples.columns[name]) for name in _TARGETS if name in samples.columns}
        )
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _late(column: LabelColumn) -> dict[str, Any]:
    """What a record keeps of label files read late, besides each sample's file."""
    files = column.files
    shape = None if files.kpt_shape is None else list(files.kpt_shape)
    return {"classes": files.classes, "among": files.among, "kpt_shape": shape}


_TARGETS = ("boxes", "box_labels", "keypoints")
"""The per-sample target columns a record holds (one row per box)."""


def _bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _flat(column: np.ndarray) -> np.ndarray:
    """An object column of per-sample arrays (one row per box) as one array."""
    return np.concatenate(list(column)) if len(column) else np.zeros(0)


def _read(path: Path, digest: str, inputs: Sequence[str]) -> Samples | None:
    """The samples kept at ``path``, if the record is whole, of these settings and inputs, and
    every file it watched is as it was (a record that cannot be read is listed anew)."""
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
        header = json.loads(arrays["header"].tobytes())
        watched = os.fsdecode(arrays["watched"].tobytes()).split("\0")
        k = len(inputs)
        if header["format"] != FORMAT or header["digest"] != digest or header["inputs"] != k:
            return None
        if watched[:k] != list(inputs):
            return None
        keys = stat_keys(watched[: header["held"]])
        if not np.array_equal(keys, arrays["keys"]):
            return None
        return _samples(header, arrays, watched, keys)
    except Exception:  # (a record damaged any way is listed anew: it is a cache)
        return None


def _samples(
    header: dict[str, Any], arrays: dict[str, np.ndarray], watched: list[str], keys: np.ndarray
) -> Samples:
    """The samples a record holds (``keys``: its watched files' keys, as they still are)."""
    rows = arrays["rows"]
    paths = [watched[i] for i in rows.tolist()]
    late = header["late"]
    if late is not None:
        files = os.fsdecode(arrays["label_files"].tobytes()).split("\0")
        shape = None if late["kpt_shape"] is None else tuple(late["kpt_shape"])
        columns = LabelColumn.columns(LabelFiles(files, late["classes"], late["among"], shape))
    else:
        ends = np.cumsum(arrays["counts"]).tolist()
        spans = list(zip([0, *ends], ends, strict=False))  # (the last start has no span)
        columns = {
            name: object_column([arrays[name][a:b] for a, b in spans])
            for name in _TARGETS
            if name in arrays
        }
    listed = None
    read = not header["declared"] and not header["normalised"]
    if read:  # (every image's key is held: the listing read its header)
        listed = dict(zip(paths, zip(*keys[rows].T.tolist(), strict=True), strict=True))
    samples = Samples.of_files(
        {"path": paths},
        header["class_names"],
        None if header["normalised"] else arrays["sizes"],
        ignored=header["ignored"],
        notes=header["notes"],
        listed=listed,
        declared=header["declared"],
        normalised=header["normalised"],
        **columns,
    )
    flip = header["flip_indices"]
    return dataclasses.replace(
        samples, rejected=header["rejected"], flip_indices=None if flip is None else tuple(flip)
    )
