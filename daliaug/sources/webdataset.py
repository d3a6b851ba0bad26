"""WebDataset shards: tar files whose consecutive members sharing a name before the first dot
are one sample (``000123.jpg``, ``000123.cls``, ``000123.json``), local or ``s3://``.

The samples are listed on the host as columns (ARCHITECTURE.md, "Two kinds of samples"): a
shard's listing gives every member's offset (the tar index, also written in DALI's ``wds2idx``
format for the user), each image's size from its header, each label and the decode check's
result; ``encoded`` (:class:`MemberColumn`) then reads a batch's images by byte range when the
feed needs them, so sharding, reshuffling, parameter rows and weights are those of every
column source, on every engine and output.

A shard's listing is found in this order, each kept for the shard's identity (its size and
ETag, or its size, times and inode), so a shard changed since is listed anew: this host's
cache (one file for the source's shards); the listing file of the shard's folder
(``daliaug-listing.json`` beside the shards, which ``daliaug convert`` writes with the shards
and ``daliaug check CONFIG --write-listings`` writes once, on any host: one read per folder
then replaces a read of every shard, on every host); else the shard itself, read whole in one
pass (and its index written).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Literal

import numpy as np
from pydantic import field_validator, model_validator

from daliaug.boxes import BoxFormat, to_xyxy
from daliaug.cache import write_atomically, write_cached
from daliaug.errors import ConfigError, DataError
from daliaug.fields import ClassCount, ClassNames, FilePath
from daliaug.sources.annotations import ImageAnnotations, checked_targets, object_column
from daliaug.sources.base import Samples
from daliaug.sources.checks import image_header, pillow_reason
from daliaug.sources.member_listing import (
    LISTING_NAME,
    Lister,
    MemberColumn,
    ShardListing,
    by_folder,
    rows,
)
from daliaug.sources.segmentation import MaskTargets
from daliaug.sources.storage import (
    Found,
    list_files,
    open_stream,
    read_text,
)
from daliaug.sources.tfrecord import METADATA

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png")
"""The members an image is read from, the first one a sample has."""
LISTING_FORMAT = "daliaug shard listing 2"


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


INT32 = 2**31 - 1
"""The largest class index (labels are ``int32``)."""


class WebDatasetSource(MaskTargets):
    """WebDataset tar shards: ``path`` is a ``.tar`` file, a folder or a glob of them, an
    ``s3://bucket/key.tar`` object or an ``s3://bucket/prefix`` holding them (credentials and
    endpoint from the AWS variables), or a list of these. A sample's image is its ``jpg``,
    ``jpeg`` or ``png`` member; its class its ``cls`` member (an integer), or with
    ``label_member: json`` the ``json_field`` of its ``json`` member (an integer, or a class
    name). Class names come from ``class_names``, else from the ``daliaug.json`` that
    ``daliaug convert`` writes next to the shards, else ``num_classes``, else the labels
    (``0..max``, or the sorted names). With ``targets: boxes`` (detection) the ``json``
    member holds Keras' ``bounding_boxes`` dict instead: ``boxes`` (``(n, 4)``, in
    ``bounding_box_format``, which defaults to the config's), ``labels`` (``n`` class
    indices) and optionally ``keypoints`` (``(n, K, 2 or 3)``: ``x, y[, visible]``); each box
    is checked against its image as a COCO source's are. With ``targets: masks``
    (segmentation) each sample's ``mask_member`` (``mask.png``) is its mask, with the mask
    fields of :class:`~daliaug.sources.segmentation.MaskTargets` (``num_classes`` or
    ``classes``...), checked as a segmentation source's masks. A sample without an image or a
    label, with a bad box, or whose image has a broken header or (``check: full``) does not
    decode with Pillow, is named, and left out with ``on_error: skip``; so are the samples
    after a truncated shard's end (DALI's decoders never see an image Pillow finds broken, see
    :func:`~daliaug.sources.checks.screened`). Each shard's index in DALI's ``wds2idx`` format
    is written to ``index_dir`` (default: a per-user cache folder) when a host reads the shard
    whole (not when its listing comes from this host's cache or a listing file)."""

    type: Literal["webdataset"] = "webdataset"
    path: str | list[str]
    label_member: Literal["cls", "json"] = "cls"
    json_field: str = "label"
    targets: Literal["labels", "boxes", "masks"] = "labels"
    mask_member: str = "mask.png"
    """With ``targets: masks``: the member holding each sample's mask (a PNG, see
    :class:`~daliaug.sources.segmentation.MaskTargets` for ``classes`` or ``num_classes``)."""
    bounding_box_format: BoxFormat = "xyxy"
    """The format of the json members' boxes (a config sets it to its own unless given)."""
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None  # type: ignore[assignment]
    index_dir: FilePath | None = None

    @property
    def detection(self) -> bool:
        return self.targets == "boxes"

    @property
    def segmentation(self) -> bool:
        return self.targets == "masks"

    @field_validator("path", mode="before")
    @classmethod
    def _some_path(cls, path: Any) -> Any:
        if isinstance(path, list | tuple) and not path:
            raise ValueError("an empty list names no shards; give a .tar file, folder or glob")
        return path

    @model_validator(mode="after")
    def _mask_classes_fit(self) -> WebDatasetSource:
        if self.segmentation and (self.num_classes or 0) > 255:
            raise ValueError(f"num_classes {self.num_classes}: 8-bit masks hold at most 255")
        return self

    def shard_files(self) -> Found:
        """The shards, in order (each location's sorted, each shard once), and what the
        listing left out beside them (not the files daliaug writes beside shards)."""
        locations = [self.path] if isinstance(self.path, str) else self.path
        found = list_files(locations, lambda name: name.endswith(".tar"), ".tar")
        companions = (f"/{LISTING_NAME}", ".idx", f"/{METADATA}")  # what daliaug writes there
        found.ignored = {k: v for k, v in found.ignored.items() if not k.endswith(companions)}
        return found

    def list_samples(self) -> Samples:
        found = self.shard_files()
        shards = found.files
        listings = self._listings(shards, found.identities)
        where = rows(listings, "where")
        rejected = {k: v for one in listings for k, v in one.rejected.items()}
        if not len(where) and not rejected:
            raise DataError(f"source.path: the shards at {self.path} hold no samples")
        keys = [
            f"{shard}#{key}"
            for shard, one in zip(shards, listings, strict=True)
            for key in one.keys
        ]
        sizes = rows(listings, "sizes")[:, 1:]
        identities = [one.identity for one in listings]
        columns = {"encoded": MemberColumn(shards, where, identities)}
        ignored = found.ignored
        if self.segmentation:
            columns["mask_encoded"] = MemberColumn(shards, rows(listings, "masks"), identities)
            return Samples(columns, self.mask_classes(), sizes, rejected=rejected, ignored=ignored)
        if self.detection:
            boxes = [b for one in listings for b in one.boxes]
            names, targets = self._box_columns(shards[0], keys, boxes)
            notes = {
                k: "its json member has no boxes"
                for k, b in zip(keys, boxes, strict=True)
                if not b["boxes"]
            }
            return Samples(
                {**columns, **targets},
                names,
                sizes,
                rejected=rejected,
                ignored=ignored,
                notes=notes,
            )
        labels = [label for one in listings for label in one.labels]
        names, values = self._classes(shards[0], labels, keys)
        return Samples(
            {**columns, "label": np.asarray(values, np.int32)},
            names,
            sizes,
            rejected=rejected,
            ignored=ignored,
        )

    def _box_columns(
        self, first: str, keys: list[str], boxes: list[dict[str, Any]]
    ) -> tuple[list[str], dict[str, np.ndarray]]:
        """The class names and the ``boxes``, ``box_labels`` (and ``keypoints``) columns of
        the samples ``keys`` whose json members gave ``boxes``."""
        labels = [label for one in boxes for label in one["labels"]]
        owners = [key for key, one in zip(keys, boxes, strict=True) for _ in one["labels"]]
        names, _ = self._classes(first, labels, owners)
        columns = {
            "boxes": object_column(
                [np.array(b["boxes"], np.float32).reshape(-1, 4) for b in boxes]
            ),
            "box_labels": object_column([np.array(b["labels"], np.int32) for b in boxes]),
        }
        counts = {
            len(b["keypoints"][0]): key
            for key, b in zip(keys, boxes, strict=True)
            if b["keypoints"]
        }
        if len(counts) > 1:
            shown = ", ".join(f"{count} in {key}" for count, key in counts.items())
            raise DataError(
                f"source: the json members give different numbers of keypoints ({shown})"
            )
        if counts:
            count = next(iter(counts))
            columns["keypoints"] = object_column(
                [
                    np.array(b["keypoints"], np.float32).reshape(-1, count, 3)
                    if b["keypoints"] is not None
                    else np.zeros((len(b["labels"]), count, 3), np.float32)
                    for b in boxes
                ]
            )
        return names, columns

    def _settings(self) -> dict[str, Any]:
        """What a shard's listing depends on (made with the full check, which serves every
        ``check``; class names are given to its labels later): the targets and the fields
        that read them (the label's member and field; the boxes' format; the mask's member
        and, where masks are checked, the classes they may hold, a class table by its
        colours wherever its file is)."""
        out: dict[str, Any] = {"type": self.type, "targets": self.targets}
        if self.detection:
            out["bounding_box_format"] = self.bounding_box_format
        elif self.segmentation:
            out |= {"mask_member": self.mask_member, "check_masks": self.check_masks}
            if self.check_masks:
                table = self.class_table()
                colours = None if table is None else [list(c) for c in table.colours]
                out |= {"colours": colours, "num_classes": self.num_classes}
                out["ignore_index"] = self.ignore_index
        else:
            out["label_member"] = self.label_member
            if self.label_member == "json":
                out["json_field"] = self.json_field
        return out

    def _lister(self, progress: Callable[[int], None] | None = None, keep: bool = True) -> Lister:
        """Where this source's shard listings are found and kept (:class:`Lister`: this
        host's cache, with the source's ``check``; the listing file of each folder; else the
        shard read whole, ``progress`` told its samples, and with ``keep`` its index
        written)."""

        def read(shard: str, known: str) -> ShardListing:
            listing = self._read_shard(shard, known)
            if keep:
                self._write_index(shard, listing.index)
            if progress is not None:
                progress(len(listing.keys) + len(listing.rejected))
            return listing

        settings = self._settings()  # (a class table's colours read once)
        key = json.dumps([LISTING_FORMAT, self.path, settings, self.check], sort_keys=True)
        cache = f"webdataset-listing/{hashlib.sha1(key.encode()).hexdigest()[:24]}.json"
        return Lister(LISTING_FORMAT, settings, cache, read)

    def _listings(
        self,
        shards: list[str],
        identities: dict[str, str],
        keep: bool = True,
        progress: Callable[[int], None] | None = None,
    ) -> list[ShardListing]:
        """Each of ``shards``' listing for its identity now (:meth:`Lister.listings`;
        ``progress`` told the samples of each shard read; with ``keep``, the index of each
        shard read whole written)."""
        return self._lister(progress, keep).listings(shards, identities, keep)

    def folder_listings(
        self, keep: bool = True, progress: Callable[[int], None] | None = None
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """Each folder of this source's shards with the listing of each of its shards (by
        name, as a listing file holds it), for the shards as they are now, made with the full
        check (from this host's cache or a listing file where they serve, else each shard
        read whole; ``keep`` and ``progress``: as for :meth:`_listings`)."""
        full = self.model_copy(update={"check": "full"})
        found = full.shard_files()
        return by_folder(found.files, full._listings(found.files, found.identities, keep, progress))

    def write_listing(
        self, folder: str, entries: dict[str, dict[str, Any]], others: bool = False
    ) -> str:
        """The listing file of ``folder`` (a folder or prefix), holding ``entries`` (its shards'
        listings by name) made with this source's settings (``others``: as for
        :meth:`Lister.write`); where it was written. A place that cannot be written is a
        :class:`DataError` naming it."""
        return self._lister().write(folder, entries, others)

    def write_listings(self) -> list[str]:
        """The listing file of each folder of this source's shards, written beside them (see
        the module's docstring and :meth:`folder_listings`); the files written."""
        folders = self.folder_listings().items()
        return [self.write_listing(f, entries, others=True) for f, entries in folders]

    def _read_shard(self, shard: str, known: str) -> ShardListing:
        out = ShardListing(identity=known)
        sample: dict[str, tuple[int, int, bytes]] = {}
        twice: set[str] = set()
        key = None
        with open_stream(shard, expect=known) as stream:
            try:
                for name, ext, offset, data in members(stream):
                    if name != key:
                        self._add(out, shard, key, sample, twice)
                        key, sample, twice = name, {}, set()
                    if ext in sample:
                        twice.add(ext)
                        continue
                    sample[ext] = (offset, len(data), data)
            except (tarfile.TarError, EOFError) as e:
                out.rejected[f"{shard}#{key or 'start'}"] = (
                    f"shard {shard} is not a whole tar file ({e}); the samples from "
                    f"{key or 'its start'} on are left out"
                )
                return out
        self._add(out, shard, key, sample, twice)
        return out

    def _add(
        self,
        out: ShardListing,
        shard: str,
        key: str | None,
        sample: dict[str, tuple],
        twice: set[str],
    ) -> None:
        """Sample ``key`` of ``shard`` (its members by extension, the first of each; those
        given ``twice`` refuse it) into ``out``, or into its ``rejected`` with the reason."""
        if key is None:
            return
        name = f"{shard}#{key}"
        out.index.append(
            " ".join(f"{ext} {o} {n} {key}.{ext}" for ext, (o, n, _) in sample.items())
        )
        image = next((ext for ext in IMAGE_EXTENSIONS if ext in sample), None)
        try:
            if twice:
                raise DataError(
                    f"sample {name} holds more than one {' and '.join(sorted(twice))} member; "
                    "a sample gives each member once"
                )
            if image is None:
                raise DataError(
                    f"sample {name} has no image member ({', '.join(IMAGE_EXTENSIONS)}); "
                    f"it holds {', '.join(sorted(sample)) or 'nothing'}"
                )
            offset, size, data = sample[image]
            _, height, width = image_header(f"{name}.{image}", data)
            broken = pillow_reason(io.BytesIO(data)) if self.check != "headers" else None
            if broken is not None:
                raise DataError(f"cannot decode image {name}.{image}: {broken}")
            if self.segmentation:
                out.masks.append(self._mask(name, sample, height, width))
            elif self.detection:
                out.boxes.append(self._boxes(name, sample, height, width))
            else:
                out.labels.append(self._label(name, sample))
        except DataError as e:
            out.rejected[name] = str(e)
            return
        out.keys.append(key)
        out.where.append((offset, size))
        out.sizes.append((height, width))

    def _mask(self, name: str, sample: dict[str, tuple], height: int, width: int) -> tuple:
        """Sample ``name``'s mask member ``(offset, size)``: a PNG of its image's size,
        holding only its classes (``check_masks``)."""
        mask = f"{name}.{self.mask_member}"
        if self.mask_member not in sample:
            raise DataError(
                f"sample {name} has no {self.mask_member} member (source.mask_member); it "
                f"holds {', '.join(sorted(sample))}"
            )
        offset, size, data = sample[self.mask_member]
        kind, mask_height, mask_width = image_header(mask, data)
        if kind != "PNG":
            raise DataError(f"mask {mask} is a {kind}; masks must be lossless PNGs")
        if (mask_height, mask_width) != (height, width):
            raise DataError(
                f"mask {mask} is {mask_width}x{mask_height} but its image is {width}x{height}"
            )
        if self.check_masks:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as m:
                self.check_mask(m, mask, self.class_table())
        return offset, size

    def _json(self, name: str, sample: dict[str, tuple]) -> Any:
        """Sample ``name``'s ``json`` member, parsed."""
        if "json" not in sample:
            raise DataError(f"sample {name} has no json member (source.targets: {self.targets})")
        try:
            return json.loads(sample["json"][2].decode("utf-8"))
        except RecursionError:
            raise DataError(f"sample {name}: its json member is nested too deeply") from None
        except (UnicodeDecodeError, ValueError) as e:
            raise DataError(f"sample {name}: its json member is not JSON: {e}") from None

    def _boxes(self, name: str, sample: dict[str, tuple], height: int, width: int) -> dict:
        """Sample ``name``'s boxes (absolute ``xyxy``, clipped to its ``width`` x ``height``
        image), their labels and keypoints (``(x, y, visible)``, or ``None``) from its json
        member, checked as every detection source's (:mod:`daliaug.sources.annotations`)."""
        where = f"{name}.json"
        y = self._json(name, sample)
        if not isinstance(y, dict) or not isinstance(y.get("boxes"), list):
            raise DataError(
                f"{where}: expected a mapping with a 'boxes' list (source.targets: boxes; "
                f"[] where the image holds none), got {str(y)[:100]}"
            )
        labels = y.get("labels", [])
        fine = isinstance(labels, list) and len(labels) == len(y.get("boxes", []))
        if not fine or any(type(v) is not int or v < 0 for v in labels):
            raise DataError(
                f"{where}: 'labels' must list one class index (0, 1, ...) per box, got "
                f"{str(labels)[:100]}"
            )
        try:
            boxes = np.array(y.get("boxes", []), np.float64).reshape(len(labels), 4)
            points = y.get("keypoints")
            points = None if points is None or not labels else np.array(points, np.float32)
        except (TypeError, ValueError) as e:
            raise DataError(
                f"{where}: its boxes or keypoints are not numbers in rows ({e})"
            ) from None
        if points is not None and (
            points.ndim != 3 or len(points) != len(labels) or points.shape[2] not in (2, 3)
        ):
            raise DataError(
                f"{where}: 'keypoints' must be ({len(labels)}, K, 2 or 3) (x, y[, visible] per "
                f"keypoint of each box), got shape {points.shape}"
            )
        fmt = self.bounding_box_format
        found = ImageAnnotations(origin=where, normalised=fmt.startswith("rel_"))
        for i, (box, label) in enumerate(zip(to_xyxy(boxes, fmt, (1.0, 1.0)), labels, strict=True)):
            found.add(box.tolist(), label, f"{where}: box {i} ({fmt} {boxes[i].tolist()})")
        if points is not None:
            seen = points[..., 2:] > 0 if points.shape[2] == 3 else np.ones((*points.shape[:2], 1))
            found.keypoints = list(np.concatenate([points[..., :2], seen], axis=-1))
        count = None if points is None else points.shape[1]
        xyxy, _, moved = checked_targets(found, height, width, count)
        return {
            "boxes": xyxy.tolist(),
            "labels": labels,
            "keypoints": None if moved is None else moved.tolist(),
        }

    def _label(self, name: str, sample: dict[str, tuple]) -> int | str:
        member = self.label_member
        if member not in sample:
            raise DataError(f"sample {name} has no {member} member (source.label_member)")
        if member == "cls":
            text = sample[member][2].decode("utf-8", "replace").strip()
            if not (text.isascii() and text.isdigit()) or int(text) > INT32:
                raise DataError(f"sample {name}: its cls member {text[:20]!r} is no class index")
            return int(text)
        y = self._json(name, sample)
        if not isinstance(y, dict) or self.json_field not in y:
            raise DataError(
                f"sample {name}: its json member has no {self.json_field!r} "
                f"(source.json_field): {str(y)[:100]}"
            )
        value = y[self.json_field]
        past = isinstance(value, int) and value > INT32
        if isinstance(value, bool) or not isinstance(value, int | str) or past:
            raise DataError(f"sample {name}: its json {self.json_field!r} is {value!r}")
        return value

    def _classes(
        self, first: str, labels: list[int | str], owners: list[str]
    ) -> tuple[list[str], list[int]]:
        """The class names and each label (of sample ``owners[i]``) as an index."""
        names = self.class_names or self._metadata_names(first)
        if names is None and self.num_classes:
            names = [str(i) for i in range(self.num_classes)]
        numeric = all(isinstance(label, int) for label in labels)
        if names is None and not numeric and any(isinstance(label, int) for label in labels):
            number, name = (
                next(o for o, label in zip(owners, labels, strict=True) if isinstance(label, kind))
                for kind in (int, str)
            )
            raise DataError(
                f"source: the labels mix class indices (sample {number}) and class names "
                f"(sample {name}); give source.class_names to say which name each index is"
            )
        if names is None:
            top = max((int(label) for label in labels), default=0) if numeric else 0
            names = [str(i) for i in range(top + 1)] if numeric else sorted(set(map(str, labels)))
        index = {name: i for i, name in enumerate(names)}

        def value(label: int | str) -> int:  # (-1: not one of the classes)
            found = label if isinstance(label, int) else index.get(label, -1)
            return found if 0 <= found < len(names) else -1

        values = np.fromiter(map(value, labels), np.int64, len(labels))
        outside = np.flatnonzero(values < 0)
        if len(outside):
            label, owner = labels[outside[0]], owners[outside[0]]
            raise DataError(
                f"source: sample {owner}: label {label!r} is not one of the {len(names)} "
                f"classes ({', '.join(names[:5])}{'...' if len(names) > 5 else ''})"
            )
        return names, values.tolist()

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
        """Keep ``shard``'s index (read whole on this host) in DALI's ``wds2idx`` format
        (``v1.2 count``, then one line per sample: ``ext offset size name`` per member)."""
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
