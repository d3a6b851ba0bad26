"""What a source yields: the samples of one epoch as aligned columns, checked before decoding.

A column is a NumPy array with one row per sample; the DALI graph takes each column as one
input of the same name (``path``: zero-padded UTF-8 file names, ``mask_path`` likewise,
``label``: int32, ``image``: uint8 HWC arrays). TFRecord shards are streamed instead (see
:mod:`daliaug.sources.tfrecord`); both are a :class:`~daliaug.sources.sample_set.SampleSet`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import model_validator

from daliaug.errors import ConfigError, DataError
from daliaug.fields import ShardCount, ShardId
from daliaug.sources.checks import FileKey, assert_unchanged, describe_rejected, read_files
from daliaug.sources.listing import IMAGE_EXTENSIONS
from daliaug.sources.sample_set import SampleSet, shard_range
from daliaug.tagged import Tagged

if TYPE_CHECKING:
    from daliaug.sources.background import BackgroundCheck


def padded(rows: Sequence[bytes | np.ndarray]) -> np.ndarray:
    """Byte strings as one zero-padded ``uint8`` matrix, a row each (decoders stop at an
    image's end; ``fn.io.file.read`` at a name's first zero)."""
    out = np.zeros((len(rows), max(map(len, rows), default=1)), dtype=np.uint8)
    for i, row in enumerate(rows):
        out[i, : len(row)] = np.frombuffer(row, dtype=np.uint8)
    return out


def fs_names(paths: Sequence[str]) -> list[bytes]:
    """The bytes of each file name on the file system, encoded at once (not a call a name;
    no name Linux allows holds a zero byte)."""
    return os.fsencode("\0".join(paths)).split(b"\0") if paths else []


def encode_paths(paths: Sequence[str]) -> np.ndarray:
    """File names as a zero-padded ``uint8`` matrix, one row per file (for ``fn.io.file.read``):
    the bytes of each name on the file system (NumPy's fixed-width bytes, zero-padded, are
    the rows as they are)."""
    if not paths:
        return np.zeros((0, 1), np.uint8)
    names = np.array(fs_names(paths))
    return names.view(np.uint8).reshape(len(names), max(names.itemsize, 1))


@dataclass(frozen=True)
class Samples(SampleSet):
    """One epoch of samples: ``columns[name][i]`` is input ``name`` of sample ``i``.

    ``files`` keeps the file names behind the file columns (``path``, ``mask_path``) for error
    messages; ``class_names`` names the label values (or mask classes); ``sizes`` holds each
    image's (height, width), which the host needs to compute crop windows and warp matrices.
    """

    columns: dict[str, np.ndarray]
    class_names: list[str]
    sizes: np.ndarray
    files: dict[str, list[str]] = field(default_factory=dict)
    checked: dict[str, FileKey] | None = None
    """After the full decode check: each file's key (size, times, inode) when it passed."""
    rejected: dict[str, str] = field(default_factory=dict)
    """Files left out when the samples were listed (a broken header, a mask that does not fit
    its image...), with the reason; their samples are not among these."""
    ignored: dict[str, str] = field(default_factory=dict)
    """What the source's folders hold besides samples (files of other types, links to folders
    not followed), with the reason; ``daliaug check`` names them."""
    notes: dict[str, str] = field(default_factory=dict)
    """Samples kept that a check should mention (an image without annotations, annotations
    left out), by file, with why; ``daliaug check`` names them."""
    flip_indices: tuple[int, ...] | None = None
    """Keypoints: the order a mirror gives them, as the data declares it (YOLO's
    ``flip_idx``); a config's ``flip_indices`` goes first."""
    listed: dict[str, FileKey] | None = None
    """Each file's key as the listing found it, where it knows them: the full check takes
    these rather than asking the file system for every file again."""
    background: BackgroundCheck | None = None
    """With ``source.check: background``: the decode check running beside training, which
    the feed asks before it hands on a batch (:mod:`daliaug.sources.background`)."""
    sized: bool = True
    """Whether the listing read every image's header (``sizes``); ``False`` where it left
    them to the background check (``check: background`` over local files: a start costs the
    listing alone), which reads each with the file's key when it checks the file
    (:meth:`sizes_at`)."""
    declared: bool = False
    """Whether ``sizes`` are those the annotations declare (COCO's, VOC's) where the listing
    read no header (``sized`` false): the boxes were checked against them, and the background
    check holds each file's header to its declared size, a file that differs being bad."""
    normalised: bool = False
    """Whether the ``boxes`` and ``keypoints`` are fractions of each image's width and height
    (YOLO's, unclipped) where the listing read no header (``sized`` false) and none was
    declared: boxes are scaled (and clipped) by the sizes the background check reads, as the
    batch that holds them is made, and the check holds each image's boxes to its size (a box
    that its image does not hold, as a listing that read the header would refuse it, makes
    the file bad). Where a class file names YOLO's classes the listing reads no label file
    either: the columns are read as the check holds each image
    (:class:`~daliaug.sources.yolo_labels.LabelColumn`)."""
    beside: bool = False
    """Whether ``check: auto`` chose the check beside training for samples whose listing
    read their headers (a box source of :data:`BACKGROUND_FROM` images or more), decided on
    the whole listing, before any shard, so every process of a job decides the same."""

    @staticmethod
    def of_files(
        files: dict[str, list[str]],
        class_names: list[str],
        sizes: np.ndarray | None,
        rejected: dict[str, str] | None = None,
        ignored: dict[str, str] | None = None,
        notes: dict[str, str] | None = None,
        listed: dict[str, FileKey] | None = None,
        declared: bool = False,
        normalised: bool = False,
        **arrays: np.ndarray,
    ) -> Samples:
        """Samples whose file columns are the given file lists (encoded for DALI), without the
        samples that have a file in ``rejected``; ``sizes`` ``None``, or ``declared`` (the
        annotations' sizes): the listing left the headers to the background check (see
        :attr:`sized`, :attr:`declared`, :attr:`normalised`)."""
        rejected = rejected or {}
        count = len(next(iter(files.values())))
        keep = np.arange(count)
        if rejected:
            keep = np.flatnonzero(
                [not any(p[i] in rejected for p in files.values()) for i in range(count)]
            )
        kept = {k: v if len(keep) == len(v) else [v[i] for i in keep] for k, v in files.items()}
        columns = {name: encode_paths(paths) for name, paths in kept.items()}
        arrays = {name: column[keep] for name, column in arrays.items()}
        return Samples(
            {**columns, **arrays},
            list(class_names),
            np.zeros((len(keep), 2), np.int32) if sizes is None else sizes[keep],
            kept,
            None,
            rejected,
            ignored or {},
            notes or {},
            listed=listed,
            sized=sizes is not None and not declared,
            declared=declared,
            normalised=normalised,
        )

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(self.columns)

    @property
    def paths(self) -> list[str]:
        """The image files (empty for in-memory arrays)."""
        return self.files.get("path", [])

    @property
    def image_files(self) -> list[str]:
        return [f for paths in self.files.values() for f in paths]

    @property
    def labels(self) -> np.ndarray | None:
        return self.columns.get("label")

    @property
    def has_boxes(self) -> bool:
        return "boxes" in self.columns

    @property
    def target_shape(self) -> tuple[int, ...]:
        target = self.columns.get("target")
        return () if target is None else tuple(target.shape[1:])

    @property
    def sizes_known(self) -> bool:
        """Whether ``sizes`` holds every image's size before any file is checked: read by the
        listing, or as the annotations declare it."""
        return self.sized or self.declared

    @property
    def size_hint(self) -> tuple[int, int] | None:
        if not self.sizes_known or not len(self.sizes):
            return None
        height, width = np.asarray(self.sizes).max(axis=0)
        return int(height), int(width)

    def subset(self, indices: Sequence[int] | np.ndarray) -> Samples:
        """The samples at ``indices``, with the same class names."""
        idx = np.asarray(indices, dtype=np.int64)
        return Samples(
            {name: column[idx] for name, column in self.columns.items()},
            self.class_names,
            self.sizes[idx],
            {name: [paths[i] for i in idx] for name, paths in self.files.items()},
            self.checked,
            self.rejected,
            self.ignored,
            self.notes,
            self.flip_indices,
            self.listed,
            self.background,
            self.sized,
            self.declared,
            self.normalised,
            self.beside,
        )

    @property
    def held_keys(self) -> dict[str, FileKey] | None:
        """The keys the files are held to: as the full or background check took them, else
        as the listing found them (``None``: neither took any)."""
        return self.checked if self.checked is not None else self.listed

    def sizes_at(self, indices: np.ndarray) -> np.ndarray:
        """The ``(height, width)`` of the images at ``indices``; where the listing left the
        headers to the background check, as it read them (their files checked now if they
        were not yet)."""
        if self.sized:
            return self.sizes[indices]
        assert self.background is not None, "unread headers are read by the background check"
        paths = self.paths
        return self.background.sizes([paths[i] for i in np.asarray(indices).tolist()])

    def with_checked(self, keys: dict[str, FileKey]) -> Samples:
        """The same samples, their files' checked keys recorded (see :attr:`checked`)."""
        return dataclasses.replace(self, checked=keys, listed=None)

    def with_background(self, check: BackgroundCheck) -> Samples:
        """The same samples, their files checked by ``check`` beside training."""
        return dataclasses.replace(self, background=check)

    def assert_unchanged(self, indices: np.ndarray) -> None:
        """A :class:`DataError` naming the first file of the samples at ``indices`` that
        changed or went missing since the full check."""
        if self.checked is None:
            return
        for paths in self.files.values():
            for i in indices:
                assert_unchanged(paths[i], self.checked[paths[i]])

    def read(self, column: str, indices: np.ndarray) -> list[np.ndarray]:
        """The bytes of the files of column ``column`` (``path``, ``mask_path``) at
        ``indices``, each the file the full check passed or the listing found (else a
        :class:`DataError` naming the first that changed or went missing:
        :func:`~daliaug.sources.checks.read_files`)."""
        paths = self.files[column]
        return read_files([paths[i] for i in indices.tolist()], self.held_keys)

    def shard(self, shard_id: int, num_shards: int) -> Samples:
        if num_shards == 1:
            return self
        return self.subset(np.arange(*shard_range(len(self), shard_id, num_shards)))

    def holdout(self, fraction: float, seed: int) -> tuple[Samples, Samples]:
        """``(training, validation)`` as Keras' ``image_dataset_from_directory`` splits its
        files (``validation_split``, ``subset``, ``seed``): the listing shuffled by NumPy's
        ``RandomState(seed)``, its last ``int(fraction * n)`` samples for validation, the rest
        for training (over the whole listing, not class by class); each part in listing
        order. Either part empty is a :class:`DataError`."""
        order = np.arange(len(self))
        np.random.RandomState(seed).shuffle(order)
        held = int(fraction * len(self))
        if not 0 < held < len(self):
            raise DataError(
                f"source.validation_split: {fraction:g} of {len(self)} samples leaves "
                f"{held} for validation and {len(self) - held} for training; both need some"
            )
        cut = len(self) - held
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))

    def split(self, fraction: float, seed: int = 0) -> tuple[Samples, Samples]:
        order = np.random.default_rng(seed).permutation(len(self))
        cut = len(self) - max(1, round(fraction * len(self)))
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))


BACKGROUND_FROM = 10_000
"""Image files from which ``check: auto`` checks them beside training: the full check of
10,000 files takes about 10 s on two cores (``bench/results/start-*.md``)."""


class SourceConfig(Tagged):
    """Base of the ``source`` section; concrete sources are tagged by ``type``.

    Every source can be sharded (``shard_id`` of ``num_shards``, for multi-GPU training):
    the shards are disjoint and together hold every sample exactly once.
    """

    registry: ClassVar[dict[str, type[SourceConfig]]] = {}
    streamed: ClassVar[str | None] = None
    """For a source whose samples stream to the graph, never held by the host as columns
    (no batch stages): why, and the fix; ``None`` for column sources."""

    shard_id: ShardId = 0
    num_shards: ShardCount = 1
    check: Literal["auto", "full", "background", "headers"] = "auto"
    """``full``: every file decoded once before training (cached); ``background``: the same
    decode check beside training, each batch's files checked before the batch is handed on,
    and a class folder or a local file list listed without reading a file
    (:mod:`daliaug.sources.background`); ``headers``: only the headers read (a file that then
    fails to decode stops training unnamed); ``auto`` (the default): ``background`` for a
    class folder or local file list of :data:`BACKGROUND_FROM` files or more (a start then
    costs the listing alone, whatever the size) and for a COCO, YOLO or VOC source of as many
    images (a COCO or VOC listing whose every image declares its size, or a YOLO listing,
    then reads no header: the check holds each to the declared size or to the image's
    boxes; a YOLO listing with a class file reads no label file either, the check reading
    each with its image's header), else ``full`` (seconds; every bad file named before
    ``make_dataset`` returns)."""
    on_error: Literal["raise", "skip"] = "raise"
    """What a file that fails the full check does: stop with an error naming it, or leave its
    sample out of every epoch (listed next to the cache)."""

    @model_validator(mode="after")
    def _shard_in_range(self) -> SourceConfig:
        if self.shard_id >= self.num_shards:
            raise ValueError(f"shard_id {self.shard_id} must be below num_shards {self.num_shards}")
        if self.on_error == "skip" and self.check == "headers":
            raise ValueError(
                "on_error: skip needs check: full or background (bad files are found by decoding)"
            )
        return self

    def defers_headers(self, files: int) -> bool:
        """Whether listing ``files`` local image files leaves each file's header to the
        background check, which reads it when it checks the file (``check: background``, or
        ``auto`` from :data:`BACKGROUND_FROM` files): a start then costs the listing alone,
        not a read of every file (a COCO or VOC source's where every image's size is
        declared, a YOLO source's: the check then holds each header to the declared size or
        to the image's boxes). Decided on the whole listing,
        before any shard or split, so every process of a job decides the same."""
        return self.check == "background" or (self.check == "auto" and files >= BACKGROUND_FROM)

    @property
    def segmentation(self) -> bool:
        """Whether samples carry masks (targets are masks, not labels)."""
        return False

    @property
    def detection(self) -> bool:
        """Whether samples carry boxes (``boxes``, ``box_labels``; targets are boxes, not
        labels)."""
        return False

    @property
    def both(self) -> bool:
        """Whether the source reads both parts of a split (``make_dataset`` then returns two
        datasets)."""
        return False

    def samples(self, seed: int | None = None) -> Samples:
        """List and check this shard's samples (of the source's part, see :meth:`part`).
        Files that fail the checks are a :class:`DataError` naming them (``on_error:
        raise``), or left out and recorded in ``Samples.rejected`` (``skip``)."""
        listed = self.list_samples()
        if self.detection and listed.sized and listed.files and self.check == "auto":
            whole = len(listed) + len(listed.rejected)
            listed = dataclasses.replace(listed, beside=self.defers_headers(whole))
        samples = self.part(listed, seed)
        if samples.rejected and self.on_error == "raise":
            raise DataError(
                describe_rejected(samples.rejected, len(samples) + len(samples.rejected))
            )
        return samples.shard(self.shard_id, self.num_shards)

    def list_samples(self) -> Samples:
        """All samples of the source, before sharding."""
        raise NotImplementedError

    def listing_settings(self) -> dict[str, Any]:
        """The settings :meth:`list_samples` depends on (not those applied after it: the
        shard, what a bad file does), as JSON values; ``check`` among them, as it decides
        whether a listing reads the headers (:meth:`defers_headers`)."""
        return self.model_dump(mode="json", exclude={"shard_id", "num_shards", "on_error"})

    def part(self, samples: Samples, seed: int | None) -> Samples:
        """The part of the listed ``samples`` this source reads (split by the config's
        ``seed`` where the source holds some out): all of them here."""
        return samples

    def write_listings(self) -> list[str]:
        """This source's listing files, written beside its data for every later start to
        read instead of the data (:mod:`daliaug.sources.listing_files`); the files written.
        A source whose data has none: a :class:`ConfigError` saying which do."""
        raise ConfigError(
            f"--write-listings: source.type is {getattr(self, 'type', '?')}; listing files are "
            "written beside WebDataset shards (webdataset), file lists of s3:// images "
            "(file_list) and TFRecords listed as columns (tfrecord with listed: true)"
        )

    def with_path(self, path: Path | str) -> SourceConfig:
        """The same source reading from ``path`` (the CLI's ``--data``: a path, or an ``s3://``
        URL where the source's path takes one)."""
        return self.model_validate({**self.model_dump(), "path": str(path)})


def is_image(path: Path) -> bool:
    """Whether ``path`` is a file with a JPEG or PNG extension."""
    return path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()
