"""YOLO label files: one line per object, normalised to the image (``class cx cy w h``, then
``px py [v]`` per keypoint in a pose dataset, or a segment ``class x1 y1 x2 y2 ...``), parsed
(:func:`parse_labels`); and, where the listing leaves them to the background check, the
target columns read as it holds each image (:class:`LabelColumn`).

A YOLO listing that knows its classes from a class file and leaves the headers to the check
reads no label file: it pairs each image with its label file by name. The check reads each
image's label file when it reads the image's header, and holds its boxes to the image's size
(:class:`HeldLabels`, the check's :class:`~daliaug.sources.background.SizeRule`): a line that
is not an object, a class beyond the class file's, or a box the image cannot hold make the
file bad, named by the label file and line, as a listing that read every label file would
refuse it. The boxes read are kept for the rest of the run (fractions of the image, as
:attr:`Samples.normalised <daliaug.sources.base.Samples.normalised>` has them); a label file
is read again at each start, and a resumed run's fingerprint holds each to its size and
modification time (:meth:`LabelColumn.key`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from daliaug.config_files import read_text
from daliaug.errors import DataError
from daliaug.sources.annotations import ImageAnnotations, checked_targets
from daliaug.sources.background import PathRows, SizeRule
from daliaug.sources.checks import size_and_time

KeypointShape = tuple[int, int]
"""A pose dataset's ``kpt_shape``: keypoints per object, and 2 (``px py``) or 3 numbers each
(``px py v``)."""


def _numbers(fields: list[str]) -> list[float] | None:
    """A line's fields as finite numbers, or ``None`` if one is not."""
    try:
        values = [float(v) for v in fields]
    except ValueError:
        return None
    return values if all(map(math.isfinite, values)) else None


def _expected(kpt_shape: KeypointShape | None) -> str:
    """What a label line holds, for messages."""
    if kpt_shape is None:
        return (
            "expected 'class cx cy w h' (5 numbers) or a segment 'class x1 y1 x2 y2 x3 y3 ...' "
            "(3 points or more)"
        )
    count, dims = kpt_shape
    shown = "px py" if dims == 2 else "px py v"
    return (
        f"expected 'class cx cy w h' and {count} keypoints '{shown}' "
        f"({5 + count * dims} numbers, kpt_shape {list(kpt_shape)})"
    )


def _object(
    values: list[float], kpt_shape: KeypointShape | None
) -> tuple[tuple[float, ...], np.ndarray | None]:
    """One label line's normalised ``xyxy`` box and, with ``kpt_shape``, its ``(K, 3)``
    keypoints ``(x, y, visible)`` (YOLO's ``v`` 0 becomes 0, 1 and 2 become 1; visible without
    ``v``); a ``ValueError`` saying what the line should be."""
    if kpt_shape is None and len(values) >= 7 and len(values) % 2:  # a segment's polygon
        xs, ys = values[1::2], values[2::2]
        return (min(xs), min(ys), max(xs), max(ys)), None
    count, dims = kpt_shape or (0, 0)
    if len(values) != 5 + count * dims:
        raise ValueError(_expected(kpt_shape))
    cx, cy, w, h = values[1:5]
    box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
    if kpt_shape is None:
        return box, None
    points = np.ones((count, 3), np.float32)
    points[:, :dims] = np.reshape(values[5:], (count, dims))
    points[:, 2] = points[:, 2] > 0
    return box, points


def parse_labels(
    text: str, label_file: str, kpt_shape: KeypointShape | None = None
) -> ImageAnnotations:
    """One label file's boxes (normalised ``xyxy``), class indices and, with ``kpt_shape``,
    keypoints; each malformed line is a problem naming ``label_file:line``."""
    found = ImageAnnotations(normalised=True, origin=label_file)
    text = text.removeprefix("\ufeff")  # the byte order mark Notepad writes
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{label_file}:{number}"
        values = _numbers(fields)
        try:
            if values is None:
                raise ValueError("expected finite numbers")
            box, points = _object(values, kpt_shape)
        except ValueError as e:
            found.problems.append(f"{where}: {e}, got {line[:200]!r}")
            continue
        label = values[0]
        if label < 0 or label != int(label):
            found.problems.append(f"{where}: class {fields[0]!r} is not a class index")
            continue
        found.add(box, int(label), where)
        if points is not None:
            found.keypoints.append(points)
    return found


def read_labels(label_file: str, kpt_shape: KeypointShape | None) -> ImageAnnotations:
    """``label_file`` parsed (``""``: no label file, no boxes); a file that cannot be read is
    a problem naming it."""
    if not label_file:
        return ImageAnnotations()
    try:
        return parse_labels(read_text(label_file, "cannot read label file"), label_file, kpt_shape)
    except DataError as e:
        return ImageAnnotations(problems=[str(e)])


def class_problems(found: ImageAnnotations, count: int, among: str) -> None:
    """Each of ``found``'s boxes whose class is not below ``count`` (``among``: the classes,
    for messages), a problem of ``found`` naming its line."""
    for label, where in zip(found.labels, found.where, strict=True):
        if label >= count:
            found.problems.append(f"{where}: class {label} is not among {among}")


Targets = tuple[np.ndarray, np.ndarray, np.ndarray | None]
"""One image's boxes (float64 ``(n, 4)`` fractions of the image, ``xyxy``), class indices
(int32 ``(n,)``) and keypoints (float32 ``(n, K, 3)``, fractions; ``None`` without)."""
PARTS = ("boxes", "box_labels", "keypoints")
"""The target columns, in the order of :data:`Targets`."""


class LabelFiles:
    """The label file of each of a listing's images (``""``: none, a sample without boxes),
    read when asked: by the check, held to the image's size (:meth:`held`), else as it is
    (:meth:`targets`). ``classes``: how many the class file names (``among`` says which, for
    messages); ``kpt_shape``: a pose dataset's."""

    def __init__(
        self,
        files: Sequence[str],
        classes: int,
        among: str,
        kpt_shape: tuple[int, int] | None,
    ) -> None:
        self.files, self.classes, self.among, self.kpt_shape = files, classes, among, kpt_shape
        self._read: dict[int, bytes] = {}
        """Each image's targets once its label file was read and held, packed (one ``bytes``
        an image, about 155 bytes with one box and no keypoints; a dict's items hold under the
        GIL: the check's thread and the feed's may both read one file)."""

    @property
    def keypoints_per_box(self) -> int | None:
        return None if self.kpt_shape is None else self.kpt_shape[0]

    def _parsed(self, row: int) -> ImageAnnotations:
        """Image ``row``'s label file parsed, its classes checked."""
        found = read_labels(self.files[row], self.kpt_shape)
        class_problems(found, self.classes, self.among)
        return found

    def held(self, row: int, size: tuple[int, int]) -> str | None:
        """Why image ``row``'s label file fails where the image is ``size`` (height, width):
        every problem named by line (``None``: it does not, and its targets are kept)."""
        found = self._parsed(row)
        try:
            checked_targets(found, *size, self.keypoints_per_box)
        except DataError as e:
            return str(e)
        boxes, labels, points = self._targets(found)
        parts = (boxes, labels) if points is None else (boxes, labels, points)
        self._read[row] = b"".join(part.tobytes() for part in parts)
        return None

    def targets(self, row: int) -> Targets:
        """Image ``row``'s targets: as the check held them, else read now and checked for what
        needs no size (a :class:`DataError` naming each problem; not kept, the check not
        having held them to the image)."""
        held = self._read.get(row)
        if held is None:
            found = self._parsed(row)
            checked_targets(found, None, None, self.keypoints_per_box)
            return self._targets(found)
        count = self.keypoints_per_box
        n = len(held) // (36 + 12 * (count or 0))  # (a box: 4 float64, an int32, K x 3 float32)
        boxes = np.frombuffer(held, np.float64, 4 * n).reshape(n, 4)
        labels = np.frombuffer(held, np.int32, n, offset=32 * n)
        if count is None:
            return boxes, labels, None
        points = np.frombuffer(held, np.float32, 3 * count * n, offset=36 * n)
        return boxes, labels, points.reshape(n, count, 3)

    def _targets(self, found: ImageAnnotations) -> Targets:
        """``found`` as arrays, as a listing that read every label file holds them."""
        boxes = np.array(found.boxes, np.float64).reshape(-1, 4)
        labels = np.array(found.labels, np.int32)
        count = self.keypoints_per_box
        if count is None:
            return boxes, labels, None
        points = np.zeros((len(boxes), count, 3), np.float32)
        for i, p in enumerate(found.keypoints):
            points[i] = p
        return boxes, labels, points


class LabelColumn:
    """One target column (``part`` of :data:`PARTS`) of samples whose label files are read late:
    row ``k`` is image ``rows[k]`` of ``files``. Indexing by a position gives that sample's
    array, by positions (or a slice) the column of those samples."""

    def __init__(self, files: LabelFiles, part: str, rows: np.ndarray) -> None:
        self.files, self.part, self.rows = files, part, rows
        self._at = PARTS.index(part)

    @staticmethod
    def columns(files: LabelFiles) -> dict[str, LabelColumn]:
        """The target columns of every image of ``files`` (``keypoints`` in a pose dataset)."""
        rows = np.arange(len(files.files))
        parts = PARTS if files.kpt_shape is not None else PARTS[:2]
        return {part: LabelColumn(files, part, rows) for part in parts}

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shape(self) -> tuple[int, None]:
        return len(self), None

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, np.integer)):
            return self.files.targets(int(self.rows[index]))[self._at]
        return LabelColumn(self.files, self.part, self.rows[index])

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self.files.targets(row)[self._at] for row in self.rows.tolist())

    def label_files(self) -> list[str]:
        """Each sample's label file (``""``: none)."""
        return [self.files.files[row] for row in self.rows.tolist()]

    def key(self) -> bytes:
        """What identifies the column: its samples' rows and, for ``boxes``, each label file
        with its size and modification time now (a file rewritten since differs)."""
        key = self.part.encode() + self.rows.tobytes()
        if self.part != "boxes":
            return key
        lines = [f"{path}\0{size_and_time(path) or ''}\n" for path in self.label_files()]
        return key + os.fsencode("".join(lines))

    def rule(self, paths: Sequence[str]) -> SizeRule:
        """What the check holds each of ``paths`` (the samples' images) to: its label file's
        boxes fit its size (:class:`HeldLabels`)."""
        return HeldLabels(paths, self)


class HeldLabels:
    """The check's :class:`~daliaug.sources.background.SizeRule` for images whose label files
    are read late: each image's label file read as its header is, the file bad where a line
    fails or a box does not fit the image (see the module)."""

    def __init__(self, paths: Sequence[str], column: LabelColumn) -> None:
        self._positions, self._column = PathRows(paths), column

    def problem(self, path: str, size: tuple[int, int]) -> str | None:
        files, rows = self._column.files, self._column.rows
        for position in self._positions(path):
            problem = files.held(int(rows[position]), size)
            if problem is not None:
                return problem
        return None
