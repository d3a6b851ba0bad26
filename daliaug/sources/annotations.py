"""Detection annotations, shared by the box sources (``coco``, ``yolo``, ``voc``): each image's
boxes checked against its size (its header's, or the one its annotations declare where the
listing leaves the headers to the background check), every box of a source at once as columns
(:class:`BoxTable`), and the samples built from them.

Boxes come out in absolute pixel ``xyxy`` of the source image, with pixel-corner coordinates
(the whole image is ``[0, W] x [0, H]``): the ``boxes`` column holds one float32 ``(n, 4)``
array per sample, ``box_labels`` one int32 ``(n,)`` array of class indices, and ``keypoints``
(where the source has them) one float32 ``(n, K, 3)`` array of ``(x, y, visible)``. A box
within :data:`TOLERANCE` pixels outside its image is clipped to it; a box further out, of no
area or not finite, or keypoints not finite, fail its sample (``source.on_error``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.errors import DataError
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


def box_problem(box: Sequence[float], height: int, width: int, where: str) -> str | None:
    """Why ``box`` (absolute ``xyxy``) cannot be clipped to a ``width`` x ``height`` image,
    starting with ``where``: not finite, no area, or more than :data:`TOLERANCE` pixels
    outside; ``None`` if it can."""
    x0, y0, x1, y1 = (float(v) for v in box)
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        return f"{where}: box {_shown(box)} is not finite"
    if x1 <= x0 or y1 <= y0:
        return f"{where}: box xyxy {_shown(box)} has a non-positive width or height"
    outside = min(x0, y0) < -TOLERANCE or x1 > width + TOLERANCE or y1 > height + TOLERANCE
    if outside or min(x1, width) <= max(x0, 0) or min(y1, height) <= max(y0, 0):
        return (
            f"{where}: box xyxy {_shown(box)} lies outside the {width}x{height} image (by more "
            f"than {TOLERANCE:g} pixel)"
        )
    return None


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
    found: ImageAnnotations, height: int, width: int, num_keypoints: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One image's boxes, labels and keypoints, checked; a :class:`DataError` naming each
    problem (the source's and the boxes')."""
    scale = np.array([width, height, width, height], np.float64) if found.normalised else 1.0
    boxes = np.array(found.boxes, np.float64).reshape(-1, 4) * scale
    clipped = np.clip(boxes, 0, [width, height, width, height])
    with np.errstate(invalid="ignore"):  # NaN compares False: refused below
        fine = (
            (clipped[:, 2:] > clipped[:, :2]).all()
            and (boxes[:, 2:] > boxes[:, :2]).all()
            and (boxes[:, :2] >= -TOLERANCE).all()
            and (boxes[:, 2:] <= np.array([width, height]) + TOLERANCE).all()
        )
    problems = list(found.problems)
    problems += [
        f"{where}: its keypoints are not all finite numbers"
        for where, p in zip(found.where, found.keypoints, strict=False)
        if not np.isfinite(np.asarray(p, np.float64)).all()
    ]
    if not fine:  # each bad box named
        reasons = (
            box_problem(b, height, width, w) for b, w in zip(boxes, found.where, strict=True)
        )
        problems += [reason for reason in reasons if reason]
    if problems:
        raise DataError(_problem(problems))
    points = None
    if num_keypoints is not None:
        points = np.zeros((len(clipped), num_keypoints, 3), np.float32)
        for i, p in enumerate(found.keypoints):
            points[i] = p
        if found.normalised:
            points[..., :2] *= (width, height)
    return clipped.astype(np.float32), np.array(found.labels, np.int32), points


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
    into ``rejected`` with every reason, one without boxes into ``notes``. With ``defer`` and
    every image's size declared (COCO's, VOC's), no header is read: the boxes are checked
    against the declared sizes, and the background check holds each file's header to its size
    (:attr:`Samples.declared`)."""
    notes = dict(notes)
    declares, declared = table.declares, table.declared
    defer = defer and bool(declares.all())
    rejected = dict(rejected or {})
    listed = None
    if defer:
        plausible = (declared >= 1).all(1) & (declared.astype(np.float64).prod(1) <= MAX_PIXELS)
        for i in np.flatnonzero(~plausible).tolist():
            h, w = declared[i].tolist()
            rejected[paths[i]] = (
                f"{table.origins[i]}: the annotations declare a {w}x{h} image, beyond what "
                f"daliaug decodes (1 to {MAX_PIXELS:,} pixels)"
            )
        sizes = np.where(plausible[:, None], declared, 0).astype(np.int32)
    else:
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
        **arrays,
    )


def _targets(
    paths: list[str], table: BoxTable, sizes: np.ndarray, rejected: dict[str, str]
) -> dict[str, np.ndarray]:
    """The ``boxes``, ``box_labels`` (and ``keypoints``) columns of the images of ``table``
    of ``sizes``, every box checked at once; an image whose annotations fail goes into
    ``rejected`` with every reason (:func:`checked_targets`)."""
    n, image = len(paths), table.image
    wh = sizes[image][:, ::-1].astype(np.float64)
    normalised = table.normalised[image]
    boxes = table.boxes.copy()
    with np.errstate(invalid="ignore", over="ignore"):  # NaN compares False: refused below
        boxes[normalised] *= np.tile(wh[normalised], 2)
        clipped = np.clip(boxes, 0, np.tile(wh, 2))
        fine = (
            (clipped[:, 2:] > clipped[:, :2]).all(1)
            & (boxes[:, 2:] > boxes[:, :2]).all(1)
            & (boxes[:, :2] >= -TOLERANCE).all(1)
            & (boxes[:, 2:] <= wh + TOLERANCE).all(1)
        )
    bad = np.bincount(image[~fine], minlength=n) > 0
    bad[list(table.problems)] = True
    labels = table.labels.astype(np.int32)  # (a label beyond int32 fails its sample: named)
    columns = {"boxes": clipped.astype(np.float32), "box_labels": labels}
    if table.keypoints is not None:
        points = table.keypoints.copy()
        bad |= np.bincount(image[~np.isfinite(points).all((1, 2))], minlength=n) > 0
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
        height, width = sizes[i].tolist()
        try:
            checked_targets(table.annotations(i), height, width, count)
        except DataError as e:
            rejected[paths[i]] = str(e)
    return {name: object_column(column) for name, column in out.items()}
