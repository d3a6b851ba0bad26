"""A CSV or text file of ``path,label`` lines; the list and the images local or ``s3://``."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from daliaug.cache import read_cached, write_cached
from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import Location
from daliaug.sources import listing_files, storage
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import check_image_files, image_header, pillow_reason
from daliaug.sources.member_listing import MemberColumn


class FileListSource(SourceConfig):
    """Lines of ``path,label`` (``.txt`` may separate them with whitespace instead).

    Labels are integer class indices, or class names mapped to indices in sorted order. Relative
    paths are taken relative to ``root`` (default: the list file's folder). A first line
    ``path,label`` is a header and skipped.

    The list, ``root`` and the images may be ``s3://`` objects (credentials and endpoint
    from the AWS variables): each image on S3 is known at listing by its size and header (and
    its decode by Pillow with ``check: full``), then read by the host each batch, as
    WebDataset members are (:class:`~daliaug.sources.member_listing.MemberColumn`); a missing or
    unreadable object is named by its bucket and key. What an image is known by is taken from
    the list's listing file beside it (``train.csv`` -> ``train.listing.json``, which ``daliaug
    check CONFIG --write-listings`` writes) or this host's cache, for each object whose
    identity (size and ETag, from its bucket's listing) is still the one recorded there; else
    the image is read whole once at listing.
    """

    type: Literal["file_list"] = "file_list"
    path: Location
    root: Location | None = None

    def _text(self) -> str:
        if not isinstance(self.path, str):
            return read_text(self.path, "source.path: cannot read file list")
        text = storage.read_text(self.path)
        if text is None:
            raise DataError(f"source.path: there is no file list at {self.path}")
        return text

    def _rows(self) -> list[tuple[int, str, str]]:
        list_file = self.path if isinstance(self.path, str) else self.path.expanduser()
        text = self._text()
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if "," not in line:
                fields = line.rsplit(None, 1)
            else:  # (a line without quotes is what csv would make of it: one split)
                fields = line.split(",") if '"' not in line else next(csv.reader([line]))
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise DataError(f"{list_file}:{number}: expected 'path,label', got {line!r}")
            if number == 1 and [f.strip().lower() for f in fields] == ["path", "label"]:
                continue
            rows.append((number, fields[0].strip(), fields[1].strip()))
        if not rows:
            raise DataError(f"source.path: file list {list_file} lists no images")
        return rows

    def list_samples(self) -> Samples:
        rows = self._rows()
        raw = [label for _, _, label in rows]
        numeric = all(label.lstrip("-").isdigit() for label in raw)
        if numeric:
            values = [int(label) for label in raw]
            for (number, _, _), value in zip(rows, values, strict=True):
                if value < 0:
                    raise DataError(f"{self.path}:{number}: label {value} is negative")
            class_names = [str(i) for i in range(max(values) + 1)]
        else:
            class_names = sorted(set(raw))
            index = {name: i for i, name in enumerate(class_names)}
            values = [index[label] for label in raw]
        paths = self._paths(rows)
        labels = np.asarray(values, dtype=np.int32)
        if any(map(storage.is_s3, paths)):
            return self._objects(paths, class_names, labels)
        if self.defers_headers(len(paths)):
            return Samples.of_files({"path": paths}, class_names, None, label=labels)
        sizes, rejected = check_image_files(paths)
        return Samples.of_files({"path": paths}, class_names, sizes, rejected, label=labels)

    def _paths(self, rows: list[tuple[int, str, str]]) -> list[str]:
        """Where each listed image is (see :meth:`_located`)."""
        root = self.root if self.root is not None else _parent(self.path)
        under = f"{root.rstrip('/')}/" if isinstance(root, str) else _prefix(root.expanduser())
        return [self._located(path, root, under) for _, path, _ in rows]

    @staticmethod
    def _located(path: str, root: str | Path, under: str) -> str:
        """A listed ``path`` where it is: as given if absolute (or ``s3://``), else under
        ``root`` (the ``root`` field, default: the list's folder), whose own path with a
        separator is ``under``; a plain relative name (most of a million) is joined as text,
        any other (``~``, ``.``, doubled separators) as a ``Path`` would."""
        if _PLAIN.fullmatch(path):
            return under + path
        local = Path(path).expanduser()
        if storage.is_s3(path) or local.is_absolute():
            return path if storage.is_s3(path) else str(local)
        if isinstance(root, str):
            return under + path
        return str(root.expanduser() / local)

    def _objects(self, paths: list[str], class_names: list[str], labels: np.ndarray) -> Samples:
        """The samples of images some of which are on S3, each known as :meth:`_known` says;
        the ``encoded`` column reads them per batch."""
        known = self._known(paths)
        found = [known[p] for p in paths]
        rejected = {p: why for p, (why, _, _, _) in zip(paths, found, strict=True) if why}
        keep = [i for i, p in enumerate(paths) if p not in rejected]
        where = np.asarray([(i, 0, found[i][1]) for i in keep], np.int64).reshape(-1, 3)
        sizes = np.asarray([found[i][2] for i in keep], np.int64).reshape(-1, 2)
        identities = [identity for _, _, _, identity in found]
        columns = {"encoded": MemberColumn(paths, where, identities), "label": labels[keep]}
        return Samples(columns, class_names, sizes, rejected=rejected)

    def _known(self, paths: list[str]) -> dict[str, Object]:
        """What each of ``paths`` is known by (:meth:`_object`): from this host's cache, else
        (only where the cache leaves some) the list's listing file, where the image's identity
        (from its bucket's listing, or a ``stat``) is the one recorded there and that record's
        check covers this source's; else read whole once (in parallel). Kept in the cache
        where any came from elsewhere."""
        now = storage.identities(paths)
        full = self.check != "headers"
        kept: dict[str, tuple[Object, bool]] = {}

        def serve(records: dict[str, list]) -> None:
            for path, (why, size, hw, identity, checked) in records.items():
                if identity and now.get(path) == identity and (checked or not full):
                    kept.setdefault(path, ((why, size, (hw[0], hw[1]), identity), checked))

        serve(self._cached())
        from_cache = set(kept)
        if any(path not in kept for path in paths):
            serve(self._listing_file())
        todo = [p for p in dict.fromkeys(paths) if p not in kept]
        with ThreadPoolExecutor(storage.S3_READERS) as pool:
            read = list(pool.map(self._object, todo))
        kept.update((path, (found, full)) for path, found in zip(todo, read, strict=True))
        if set(kept) - from_cache:
            records = {p: [*found, checked] for p, (found, checked) in kept.items()}
            write_cached(self._cache_name(), json.dumps(records), "an S3 image listing")
        return {path: found for path, (found, _) in kept.items()}

    def _cache_name(self) -> str:
        where = f"{self.path}\0{self.root}"
        return f"object-listing/{hashlib.sha1(where.encode()).hexdigest()[:24]}.json"

    def _cached(self) -> dict[str, list]:
        """What this host's cache records of the list's images (empty where nothing)."""
        with contextlib.suppress(ValueError):
            return _records(read_cached(self._cache_name()))
        return {}

    def _listing_file(self) -> dict[str, list]:
        """What the list's listing file records of its images (empty where there is none, or
        it cannot serve: named in a :class:`~daliaug.errors.DataWarning`)."""
        place = listing_files.beside(str(self.path))
        instead = "the images it lists are read to list them"
        kept = listing_files.read(place, LISTING_FORMAT, instead)
        if kept is None:
            return {}
        try:
            return _records(kept["listing"])
        except ValueError as e:
            listing_files.unused(place, str(e), instead)
            return {}

    def write_listings(self) -> list[str]:
        """The list's listing file, written beside it: what each of its images on S3 is known
        by, made with the full check (from this host's cache where it serves, else the image
        read whole), for the image as it is now."""
        paths = self._paths(self._rows())
        if not any(map(storage.is_s3, paths)):
            raise ConfigError(
                f"--write-listings: the images of {self.path} are local files; listing files "
                "are written for file lists of s3:// images (local ones are listed and checked "
                "from this host's cache)"
            )
        known = self.model_copy(update={"check": "full"})._known(paths)
        place = listing_files.beside(str(self.path))
        records = {p: [*known[p], True] for p in dict.fromkeys(paths) if known[p][3]}
        listing_files.write(place, LISTING_FORMAT, {"list": str(self.path)}, records)
        return [place]

    def _object(self, path: str) -> Object:
        """``(why it cannot be used or None, its size in bytes, its (height, width), its
        identity as read)``: each batch's read checks that it is still that object."""
        try:
            data, identity = storage.read_object(path)
            _, height, width = image_header(path, data)
        except DataError as e:
            return str(e), 0, (0, 0), ""
        broken = pillow_reason(io.BytesIO(data)) if self.check != "headers" else None
        if broken is not None:
            return f"cannot decode image {path}: {broken}", 0, (0, 0), identity
        return None, len(data), (height, width), identity


Object = tuple[str | None, int, tuple[int, int], str]
"""What an image on S3 is known by: why it cannot be used (or ``None``), its size in bytes,
its ``(height, width)``, its identity as read."""
LISTING_FORMAT = "daliaug object listing 1"


def _records(raw: Any) -> dict[str, list]:
    """Records of images (``[why, size, [height, width], identity, checked]`` by path), a
    ``ValueError`` saying so where ``raw`` is not such records."""
    if isinstance(raw, dict) and all(
        isinstance(r, list) and len(r) == 5 and isinstance(r[2], list) and len(r[2]) == 2
        for r in raw.values()
    ):
        return raw
    raise ValueError("its records are not [why, size, [height, width], identity, checked]")


_PLAIN = re.compile(r"(?!~|s3://)(?:(?!\.\.?/)[^/]+/)*(?!\.\.?$)[^/]+")
"""A relative path whose parts are all names, none ``.`` or ``..`` nor empty, not starting
with ``~``: joined to its root as text, it is what ``Path`` would make of it."""


def _prefix(folder: Path) -> str:
    """``folder``'s path as the start of a path under it (empty for the current folder)."""
    text = str(folder)
    return "" if text == "." else f"{text.rstrip('/')}/"


def _parent(location: str | Path) -> str | Path:
    """The folder (or ``s3://`` prefix) ``location`` is in."""
    if isinstance(location, str):
        return location.rsplit("/", 1)[0]
    return location.expanduser().parent
