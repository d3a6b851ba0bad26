"""Detection annotations, shared by the box sources (``coco``, ``yolo``, ``voc``): each image's
boxes checked against its size (its header's, or the one its annotations declare where the
listing leaves the headers to the background check), every box of a source at once as columns
(:class:`BoxTable`), and the samples built from them. Where the listing leaves the headers to
the background check and no size is declared (YOLO's), boxes stay fractions of their image
until a batch holds them, and the check holds each image's boxes to its size
(:class:`NormalisedBoxes`); with a class file, YOLO's listing reads no label file either, the
check reading each with its image's header (:mod:`daliaug.sources.yolo_labels`).

Boxes come out in absolute pixel ``xyxy`` of the source image, with pixel-corner coordinates
(the whole image is ``[0, W] x [0, H]``): the ``boxes`` column holds one float32 ``(n, 4)``
array per sample (float64 fractions of the image's width and height, unclipped, where
:attr:`Samples.normalised`: :func:`in_pixels` places them once the size is read),
``box_labels`` one int32 ``(n,)`` array of class indices, and ``keypoints`` (where the source
has them) one float32 ``(n, K, 3)`` array of ``(x, y, visible)``. A box within
:data:`TOLERANCE` pixels outside its image is clipped to it; a box further out, of no area or
not finite, or keypoints not finite, fail its sample (``source.on_error``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.background import DeclaredSizes, PathRows, ReadLate, SizeRule
from daliaug.sources.base import Samples
from daliaug.sources.checks import MAX_PIXELS, image_headers, unlike_declared

TOLERANCE = 1.0
"""How far (pixels) a box may reach outside its image and still be clipped, not refused."""


@dataclass
class ImageAnnotations:
    """One image's annotations as a source read them, before they meet the image's header.

    ``where`` names each box for messages (``file:line``, ``annotation 17``); ``normalised``
    boxes and keypoints are fractions of the image's width and height (YOLO's); ``problems``
    fail the sample, each naming the annotation file and the item."""

    boxes: list[Sequence[float]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    keypoints: list[np.ndarray] = field(default_factory=list)
    normalised: bool = False
    origin: str = ""
    """Where the image's annotations are (``file``, ``file: image id 3``), for messages."""
    size: tuple[int, int] | None = None
    """The (height, width) the annotations declare, checked against the file's header."""
    problems: list[str] = field(default_factory=list)

    def add(self, box: Sequence[float], label: int, where: str) -> None:
        self.boxes.append(box)
        self.labels.append(label)
        self.where.append(where)


@dataclass(frozen=True)
class BoxTable:
    """A source's boxes as columns, before they meet the images' sizes: box ``k`` belongs to
    image ``image[k]`` (ascending), its ``boxes[k]`` absolute ``xyxy`` (fractions of the
    image's width and height where the image is ``normalised``), its class ``labels[k]`` and,
    with keypoints, ``keypoints[k]`` (``(K, 3)``). Per image: the ``origins`` of its
    annotations (for messages), whether it ``declares`` a size and the ``(height, width)``
    ``declared`` (as :func:`int_array` keeps them), and the ``problems`` that fail it;
    ``where(k)`` names box ``k`` (``file:line``, ``annotation 17``), made only for a
    message."""

    origins: Sequence[str]
    declares: np.ndarray
    declared: np.ndarray
    normalised: np.ndarray
    image: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray
    keypoints: np.ndarray | None
    problems: dict[int, list[str]]
    where: Callable[[int], str]

    @staticmethod
    def of(found: Sequence[ImageAnnotations], num_keypoints: int | None) -> BoxTable:
        """The table of images annotated one :class:`ImageAnnotations` each (an image
        with fewer keypoints than boxes has a problem already: its missing ones are zeros)."""
        n = len(found)
        counts = np.fromiter((len(f.boxes) for f in found), np.int64, n)
        points = None
        if num_keypoints is not None:
            padded = [p for f in found for p in _padded(f, num_keypoints)]
            points = np.array(padded, np.float32).reshape(-1, num_keypoints, 3)
        wheres = [w for f in found for w in f.where]
        return BoxTable(
            [f.origin for f in found],
            np.fromiter((f.size is not None for f in found), bool, n),
            int_array([f.size or (0, 0) for f in found]).reshape(n, 2),
            np.fromiter((f.normalised for f in found), bool, n),
            np.repeat(np.arange(n), counts),
            np.array([b for f in found for b in f.boxes], np.float64).reshape(-1, 4),
            int_array([v for f in found for v in f.labels]),
            points,
            {i: f.problems for i, f in enumerate(found) if f.problems},
            wheres.__getitem__,
        )

    def annotations(self, i: int) -> ImageAnnotations:
        """Image ``i``'s annotations, one object (for :func:`checked_targets`' messages)."""
        a, b = np.searchsorted(self.image, [i, i + 1]).tolist()
        size = tuple(self.declared[i].tolist()) if self.declares[i] else None
        return ImageAnnotations(
            boxes=list(self.boxes[a:b]),
            labels=self.labels[a:b].tolist(),
            where=[self.where(k) for k in range(a, b)],
            keypoints=[] if self.keypoints is None else list(self.keypoints[a:b]),
            normalised=bool(self.normalised[i]),
            origin=self.origins[i],
            size=size,
            problems=list(self.problems.get(i, [])),
        )


LIMIT = 2**62
"""What :func:`int_array` keeps integers within: beyond any image's size or class (a value
further out fails its sample, named, rather than overflow an int64 column)."""


def int_array(values: Sequence[object]) -> np.ndarray:
    """``values`` (integers, or tuples of them) as an int64 array, each kept within
    ``[-LIMIT, LIMIT]`` (clamped only where one is not: a listing makes one array at once)."""
    try:
        array = np.array(values, np.int64)
    except OverflowError:
        array = np.array(_clamped(values), np.int64)
    return np.clip(array, -LIMIT, LIMIT)


def _clamped(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_clamped(v) for v in value]
    return max(-LIMIT, min(int(value), LIMIT))


def _padded(found: ImageAnnotations, num_keypoints: int) -> list[np.ndarray]:
    """``found``'s keypoints, a ``(K, 3)`` array per box (zeros where a box has none)."""
    zero = np.zeros((num_keypoints, 3), np.float32)
    return [*found.keypoints, *[zero] * (len(found.boxes) - len(found.keypoints))][
        : len(found.boxes)
    ]


def folders_of(root: Path, names: Sequence[str], kind: str) -> list[Path]:
    """The folders ``names`` under a dataset's ``root``: a :class:`DataError` naming the
    first one missing and what a ``kind`` dataset holds."""
    folders = [root / name for name in names]
    for folder in folders:
        if not folder.is_dir():
            held = " and ".join(f"{name}/" for name in names)
            raise DataError(
                f"source.path: {root} has no {folder.name}/ folder (a {kind} dataset holds {held})"
            )
    return folders


def _shown(box: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


def box_problem(
    box: Sequence[float], height: int | None, width: int | None, where: str
) -> str | None:
    """Why ``box`` (absolute ``xyxy``) cannot be clipped to a ``width`` x ``height`` image,
    starting with ``where``: not finite, no area, or more than :data:`TOLERANCE` pixels
    outside (the size ``None``: not known yet, not asked); ``None`` if it can."""
    x0, y0, x1, y1 = (float(v) for v in box)
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        return f"{where}: box {_shown(box)} is not finite"
    if x1 <= x0 or y1 <= y0:
        return f"{where}: box xyxy {_shown(box)} has a non-positive width or height"
    if height is None or width is None:
        return None
    outside = min(x0, y0) < -TOLERANCE or x1 > width + TOLERANCE or y1 > height + TOLERANCE
    if outside or min(x1, width) <= max(x0, 0) or min(y1, height) <= max(y0, 0):
        return (
            f"{where}: box xyxy {_shown(box)} lies outside the {width}x{height} image (by more "
            f"than {TOLERANCE:g} pixel)"
        )
    return None


def fitting(boxes: np.ndarray, wh: np.ndarray | None) -> np.ndarray:
    """Which of ``boxes`` (absolute ``xyxy``, float64 ``(n, 4)``) of images ``wh`` (width,
    height: one, or a row per box) can be clipped to their image (see :func:`box_problem`);
    ``wh`` ``None``: the sizes not known yet, only those finite and of positive width and
    height."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN compares False: refused
        fine = np.isfinite(boxes).all(1) & (boxes[:, 2:] > boxes[:, :2]).all(1)
        if wh is None:
            return fine
        clipped = np.clip(boxes, 0, np.tile(wh, 2))
        return (
            fine
            & (clipped[:, 2:] > clipped[:, :2]).all(1)
            & (boxes[:, :2] >= -TOLERANCE).all(1)
            & (boxes[:, 2:] <= wh + TOLERANCE).all(1)
        )


def object_column(arrays: list[np.ndarray]) -> np.ndarray:
    """A column of ``arrays``, one per sample (an object array: their lengths differ)."""
    column = np.empty(len(arrays), dtype=object)
    for i, array in enumerate(arrays):
        column[i] = array
    return column


def _problem(problems: list[str]) -> str:
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return "; ".join(problems[:3]) + more


def checked_targets(
    found: ImageAnnotations, height: int | None, width: int | None, num_keypoints: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One image's boxes, labels and keypoints, checked; a :class:`DataError` naming each
    problem (the source's and the boxes'). The size ``None`` (not known yet): normalised
    boxes stay fractions, unclipped, not yet held to their image."""
    size = None if height is None or width is None else (width, height)
    scale = np.array(size * 2, np.float64) if found.normalised and size else 1.0
    boxes = np.array(found.boxes, np.float64).reshape(-1, 4) * scale
    problems = list(found.problems)
    problems += [
        f"{where}: its keypoints are not all finite numbers"
        for where, p in zip(found.where, found.keypoints, strict=False)
        if not np.isfinite(np.asarray(p, np.float64)).all()
    ]
    wh = None if size is None else np.array(size, np.float64)
    if not fitting(boxes, wh).all():  # each bad box named
        reasons = (
            box_problem(b, height, width, w) for b, w in zip(boxes, found.where, strict=True)
        )
        problems += [reason for reason in reasons if reason]
    if problems:
        raise DataError(_problem(problems))
    if size is not None:
        boxes = np.clip(boxes, 0, size * 2)
    points = None
    if num_keypoints is not None:
        points = np.zeros((len(boxes), num_keypoints, 3), np.float32)
        for i, p in enumerate(found.keypoints):
            points[i] = p
        if found.normalised and size is not None:
            points[..., :2] *= size
    return boxes.astype(np.float32), np.array(found.labels, np.int32), points


def detection_samples(
    paths: list[str],
    table: BoxTable,
    class_names: list[str],
    ignored: dict[str, str],
    notes: dict[str, str],
    rejected: dict[str, str] | None = None,
    defer: bool = False,
) -> Samples:
    """The samples of image ``paths`` with their boxes ``table``: each image's header read
    (kept for the next start with the file's key, which the samples hand on to the read
    check, as a class folder's), its declared size and boxes checked; a sample that fails goes
    into ``rejected`` with every reason, one without boxes into ``notes``. With ``defer``, no
    header is read where every image's size is declared (COCO's, VOC's: the boxes are checked
    against the declared sizes, :attr:`Samples.declared`) or none is and every image's boxes
    are fractions of it (YOLO's: kept so, :attr:`Samples.normalised`); the background check
    holds each file's header to them (:func:`size_rule`)."""
    notes = dict(notes)
    declares, declared = table.declares, table.declared
    boxed = table.normalised[table.image]  # (YOLO's: fractions; none declares a size)
    normalised = defer and not declares.any() and bool(len(boxed) and boxed.all())
    defer = defer and bool(declares.all())
    rejected = dict(rejected or {})
    listed = None
    sizes: np.ndarray | None = None
    if defer:
        plausible = (declared >= 1).all(1) & (declared.astype(np.float64).prod(1) <= MAX_PIXELS)
        for i in np.flatnonzero(~plausible).tolist():
            h, w = declared[i].tolist()
            rejected[paths[i]] = (
                f"{table.origins[i]}: the annotations declare a {w}x{h} image, beyond what "
                f"daliaug decodes (1 to {MAX_PIXELS:,} pixels)"
            )
        sizes = np.where(plausible[:, None], declared, 0).astype(np.int32)
    elif not normalised:
        headers = image_headers(paths)
        sizes = headers.sizes
        listed = headers.key_of(paths)
        position = dict(zip(paths, range(len(paths)), strict=True)) if headers.rejected else {}
        for path, reason in headers.rejected.items():
            origin = table.origins[position[path]]
            rejected[path] = f"{origin}: {reason}" if origin else reason
        differ = declares & sizes.any(1) & (declared != sizes).any(1)
        for i in np.flatnonzero(differ).tolist():
            rejected[paths[i]] = unlike_declared(table.origins[i], declared[i], sizes[i])
    arrays = _targets(paths, table, sizes, rejected)
    counts = np.bincount(table.image, minlength=len(paths))
    for i in np.flatnonzero(counts == 0).tolist():
        path = paths[i]
        if path not in rejected and path not in notes:
            notes[path] = f"{table.origins[i]} has no annotations: a sample without boxes"
    if listed is not None:
        listed = {p: key for p, key in listed.items() if p not in rejected}
    return Samples.of_files(
        {"path": paths},
        class_names,
        sizes,
        rejected,
        ignored,
        notes,
        listed,
        declared=defer,
        normalised=normalised,
        **arrays,
    )


def _targets(
    paths: list[str], table: BoxTable, sizes: np.ndarray | None, rejected: dict[str, str]
) -> dict[str, np.ndarray]:
    """The ``boxes``, ``box_labels`` (and ``keypoints``) columns of the images of ``table``
    of ``sizes``, every box checked at once; an image whose annotations fail goes into
    ``rejected`` with every reason (:func:`checked_targets`). ``sizes`` ``None`` (normalised
    boxes whose images' sizes are not known yet): the boxes stay fractions, unclipped, checked
    for what needs no size."""
    n, image = len(paths), table.image
    boxes = table.boxes.copy()
    normalised = table.normalised[image]
    wh = None
    if sizes is not None:
        wh = sizes[image][:, ::-1].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            boxes[normalised] *= np.tile(wh[normalised], 2)
    fine = fitting(boxes, wh)
    if wh is not None:
        boxes = np.clip(boxes, 0, np.tile(wh, 2))
    bad = np.bincount(image[~fine], minlength=n) > 0
    bad[list(table.problems)] = True
    labels = table.labels.astype(np.int32)  # (a label beyond int32 fails its sample: named)
    kept = boxes if wh is None else boxes.astype(np.float32)
    columns = {"boxes": kept, "box_labels": labels}
    if table.keypoints is not None:
        points = table.keypoints.copy()
        bad |= np.bincount(image[~np.isfinite(points).all((1, 2))], minlength=n) > 0
        if wh is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                points[normalised, :, :2] *= wh[normalised][:, None, :]
        columns["keypoints"] = points
    counts = np.bincount(image, minlength=n)
    ends = np.cumsum(counts)
    spans = list(zip((ends - counts).tolist(), ends.tolist(), strict=True))
    out = {name: [column[a:b] for a, b in spans] for name, column in columns.items()}
    held = np.fromiter((p not in rejected for p in paths), bool, n)
    count = None if table.keypoints is None else table.keypoints.shape[1]
    for i in np.flatnonzero(bad & held).tolist():  # (each problem named, the slow way)
        height, width = (None, None) if sizes is None else sizes[i].tolist()
        try:
            checked_targets(table.annotations(i), height, width, count)
        except DataError as e:
            rejected[paths[i]] = str(e)
    return {name: object_column(column) for name, column in out.items()}


def in_pixels(
    boxes: list[np.ndarray], keypoints: list[np.ndarray] | None, sizes: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Normalised ``boxes`` and ``keypoints`` (an array per image) of images of ``sizes``
    (``(height, width)`` rows) in pixels, each box clipped to its image: what a listing that
    read the headers holds (:func:`_targets`, the same arithmetic)."""
    wh = sizes[:, ::-1].astype(np.float64)
    pixels = [
        np.clip(b * np.tile(s, 2), 0, np.tile(s, 2)).astype(np.float32)
        for b, s in zip(boxes, wh, strict=True)
    ]
    if keypoints is None:
        return pixels, None
    points = [p.copy() for p in keypoints]
    for p, s in zip(points, wh, strict=True):
        p[:, :, :2] *= s
    return pixels, points


def pixel_targets(
    samples: Samples,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray] | None]:
    """Each sample's boxes, labels (and keypoints) in pixels of its image, as its source gives
    them: scaled by the sizes the background check read where they are fractions
    (:attr:`Samples.normalised`, each file checked now if it was not yet; a file it found bad
    has none)."""
    names = [name for name in ("boxes", "box_labels", "keypoints") if name in samples.columns]
    if not samples.normalised:
        boxes, labels, *points = (list(samples.columns[name]) for name in names)
        return boxes, labels, points[0] if points else None
    sizes = samples.sizes_at(np.arange(len(samples)))
    good = sizes.any(1).tolist()  # (a bad file's size is (0, 0))
    empty = {
        "boxes": np.zeros((0, 4)),
        "box_labels": np.zeros(0, np.int32),
        "keypoints": np.zeros((0, 0, 3), np.float32),
    }
    columns = {name: samples.columns[name] for name in names}
    boxes, labels, *points = (
        [column[i] if held else empty[name] for i, held in enumerate(good)]
        for name, column in columns.items()
    )
    pixels, keypoints = in_pixels(boxes, points[0] if points else None, sizes)
    return pixels, labels, keypoints


class NormalisedBoxes:
    """Each image's boxes as fractions of its width and height (``boxes``: a float64 ``(n,
    4)`` array per image of ``paths``, unclipped), held to the size its header gives: a box
    that image cannot hold (:func:`box_problem`) makes the file bad, as a listing that read the
    header would have refused it."""

    def __init__(self, paths: Sequence[str], boxes: np.ndarray) -> None:
        self._rows, self._boxes = PathRows(paths), boxes

    def problem(self, path: str, size: tuple[int, int]) -> str | None:
        height, width = size
        for row in self._rows(path):
            boxes = self._boxes[row] * (width, height, width, height)
            if fitting(boxes, np.array([width, height], np.float64)).all():
                continue
            wheres = (f"{path}, box {k + 1}" for k in range(len(boxes)))
            reasons = (box_problem(b, height, width, w) for b, w in zip(boxes, wheres, strict=True))
            return _problem([reason for reason in reasons if reason])
        return None


def size_rule(samples: Samples) -> SizeRule | None:
    """What each image's header must meet where the listing placed its boxes without it:
    the size its annotations declare, or one its boxes (fractions of it) fit, the boxes read
    then where the listing read none (:class:`~daliaug.sources.background.ReadLate`)."""
    if samples.declared:
        return DeclaredSizes(samples.paths, samples.sizes)
    boxes = samples.columns.get("boxes")
    if isinstance(boxes, ReadLate):
        return boxes.rule(samples.paths)
    if samples.normalised:
        return NormalisedBoxes(samples.paths, samples.columns["boxes"])
    return None
