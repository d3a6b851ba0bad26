"""Detection annotations, shared by the box sources (``coco``, ``yolo``, ``voc``): each image's
boxes checked against its header's size, and the samples built from them.

Boxes come out in absolute pixel ``xyxy`` of the source image, with pixel-corner coordinates
(the whole image is ``[0, W] x [0, H]``): the ``boxes`` column holds one float32 ``(n, 4)``
array per sample, ``box_labels`` one int32 ``(n,)`` array of class indices, and ``keypoints``
(where the source has them) one float32 ``(n, K, 3)`` array of ``(x, y, visible)``. A box
within :data:`TOLERANCE` pixels outside its image is clipped to it; a box further out, of no
area or not finite, or keypoints not finite, fail its sample (``source.on_error``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.base import Samples
from daliaug.sources.checks import image_headers

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
    found: list[ImageAnnotations],
    class_names: list[str],
    ignored: dict[str, str],
    notes: dict[str, str],
    num_keypoints: int | None = None,
    rejected: dict[str, str] | None = None,
) -> Samples:
    """The samples of image ``paths`` with their annotations ``found``: each image's header
    read (kept for the next start with the file's key, which the samples hand on to the read
    check, as a class folder's), its declared size and boxes checked; a sample that fails goes
    into ``rejected`` with every reason, one without boxes into ``notes`` (``keypoints`` only
    with ``num_keypoints``)."""
    notes = dict(notes)
    headers = image_headers(paths)
    sizes, failed = headers.sizes, headers.rejected
    origins = dict(zip(paths, (f.origin for f in found), strict=True))
    failed = {p: f"{origins[p]}: {r}" if origins[p] else r for p, r in failed.items()}
    rejected = {**(rejected or {}), **failed}
    empty = (np.zeros((0, 4), np.float32), np.zeros(0, np.int32), None)
    columns: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    for path, image, (height, width) in zip(paths, found, sizes, strict=True):
        targets = empty
        if path not in rejected:
            try:
                if image.size not in (None, (height, width)):
                    h, w = image.size
                    raise DataError(
                        f"{image.origin}: the annotations say the image is {w}x{h}, but "
                        f"its file is {width}x{height}"
                    )
                targets = checked_targets(image, int(height), int(width), num_keypoints)
            except DataError as e:
                rejected[path] = str(e)
        if path not in rejected and not len(targets[0]) and path not in notes:
            notes[path] = f"{image.origin} has no annotations: a sample without boxes"
        columns.append(targets)
    arrays = {
        "boxes": object_column([boxes for boxes, _, _ in columns]),
        "box_labels": object_column([labels for _, labels, _ in columns]),
    }
    if num_keypoints is not None:
        zero = np.zeros((0, num_keypoints, 3), np.float32)
        arrays["keypoints"] = object_column([zero if p is None else p for _, _, p in columns])
    listed = {p: key for p, key in headers.key_of(paths).items() if p not in rejected}
    return Samples.of_files(
        {"path": paths}, class_names, sizes, rejected, ignored, notes, listed, **arrays
    )
