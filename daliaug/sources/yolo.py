"""YOLO detection folders: ``images/`` and ``labels/`` matched by relative path, one line per
object (normalised to the image): ``class cx cy w h`` (a box), then ``px py [v]`` per keypoint
in a pose dataset (``kpt_shape`` in its ``data.yaml``), or ``class x1 y1 x2 y2 ...`` (a segment
polygon, whose enclosing box is taken)."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Literal

import numpy as np

from daliaug.config_files import read_config_file, read_text
from daliaug.errors import DataError
from daliaug.fields import FilePath
from daliaug.sources.annotations import (
    BoxTable,
    ImageAnnotations,
    detection_samples,
    folders_of,
)
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.kept_listing import list_images
from daliaug.sources.kept_samples import kept_samples

NAME_FILES = ("data.yaml", "dataset.yaml")
"""Where a YOLO dataset names its classes (``names``), in ``path`` or its parent."""

UNNAMED_CLASSES = 4096
"""How many classes a YOLO dataset without a class file may number (``"0"``, ``"1"``, ...): a
larger index is a typo far more often than a class, and would make that many names."""


def _names_from_yaml(path: Path) -> list[str]:
    """The ``names`` of a YOLO ``data.yaml``: a list, or a mapping of the indices 0..K-1."""
    names = read_config_file(path).get("names")
    if isinstance(names, dict) and sorted(names) == list(range(len(names))):
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names:
        raise DataError(
            f"{path}: 'names' must be a list of class names or a mapping of the indices "
            f"0..K-1 to names, got {str(names)[:200]}"
        )
    return [str(name) for name in names]


KeypointShape = tuple[int, int]
"""A pose dataset's ``kpt_shape``: keypoints per object, and 2 (``px py``) or 3 numbers each
(``px py v``)."""


def _pose(path: Path) -> tuple[KeypointShape, tuple[int, ...] | None] | None:
    """The ``kpt_shape`` of a YOLO ``data.yaml`` and its ``flip_idx`` (keypoint ``k`` of a
    mirrored image is keypoint ``flip_idx[k]`` of the image, as Ultralytics flips them; a
    permutation of the keypoints), ``None`` without a ``kpt_shape``."""
    data = read_config_file(path)
    shape = data.get("kpt_shape")
    if shape is None:
        return None
    fine = (
        isinstance(shape, list)
        and len(shape) == 2
        and all(type(v) is int for v in shape)
        and shape[0] > 0
        and shape[1] in (2, 3)
    )
    if not fine:
        raise DataError(
            f"{path}: 'kpt_shape' must be [keypoints, 2 or 3] (px py, or px py v, each), got "
            f"{str(shape)[:200]}"
        )
    flip = data.get("flip_idx")
    fine = isinstance(flip, list) and all(type(v) is int for v in flip)
    if flip is not None and not (fine and sorted(flip) == list(range(shape[0]))):
        raise DataError(
            f"{path}: 'flip_idx' must list each of the {shape[0]} keypoints once (keypoint k "
            f"of a mirrored image is keypoint flip_idx[k]), got {str(flip)[:200]}"
        )
    return (shape[0], shape[1]), None if flip is None else tuple(flip)


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


def _stems(paths: list[str], folder: Path) -> list[str]:
    """Each of ``paths`` (listed under ``folder``) relative to it, without its suffix: string
    arithmetic, as a listing's paths are ``folder``'s own name joined with theirs."""
    prefix = os.path.join(folder, "")
    inside = (
        p[len(prefix) :] if p.startswith(prefix) else os.path.relpath(p, folder) for p in paths
    )
    return [os.path.splitext(path)[0] for path in inside]


class YoloSource(SourceConfig):
    """``path/images/**`` and ``path/labels/**.txt``: ``images/a/b.jpg``'s boxes are in
    ``labels/a/b.txt``, a line ``class cx cy w h`` each (centre and size as fractions of the
    image), converted to absolute ``xyxy`` with the image's header size (read by the listing,
    or, where the background check reads the headers, as each batch is made, the check holding
    each image's boxes to it). A pose dataset (its
    ``data.yaml`` has ``kpt_shape: [K, 2 or 3]``) follows each box with its K keypoints
    ``px py [v]`` (the ``keypoints`` column), swapped by its ``flip_idx`` where a flip
    mirrors the image (unless the config gives ``flip_indices``); a segment line ``class x1
    y1 x2 y2 ...`` (a polygon of 3 points or more) gives the polygon's enclosing box (no
    mask).

    Class names come from the ``names`` of a ``data.yaml`` (or ``dataset.yaml``) in ``path``
    or its parent, else from a ``classes.txt`` (one name a line) in ``path`` or ``labels/``,
    else they are ``"0"`` to the largest index found (below :data:`UNNAMED_CLASSES`). An image
    without a label file is a sample without boxes (``daliaug check`` notes it); a label file
    without an image is named among what the folders hold besides samples.
    """

    type: Literal["yolo"] = "yolo"
    path: FilePath

    @property
    def detection(self) -> bool:
        return True

    def _class_file(self) -> Path | None:
        root = self.path.expanduser()
        candidates = [root / n for n in NAME_FILES] + [root.parent / n for n in NAME_FILES]
        candidates += [root / "classes.txt", root / "labels" / "classes.txt"]
        return next((c for c in candidates if c.is_file()), None)

    def _class_names(self, found: list[ImageAnnotations]) -> list[str]:
        """The class names (see the class), checked against the indices ``found``."""
        source = self._class_file()
        if source is None:
            names = [str(i) for i in range(UNNAMED_CLASSES)]
        elif source.name == "classes.txt":
            text = read_text(source, "source.path: cannot read class names")
            lines = text.removeprefix("\ufeff").splitlines()
            names = [line.strip() for line in lines if line.strip()]
        else:
            names = _names_from_yaml(source)
        among = f"the {len(names)} classes of {source or 'a dataset without a class file'}"
        for f in found:
            for label, where in zip(f.labels, f.where, strict=True):
                if label >= len(names):
                    f.problems.append(f"{where}: class {label} is not among {among}")
        if source is None:  # "0" to the largest index found
            top = max((x for f in found for x in f.labels if x < UNNAMED_CLASSES), default=0)
            return names[: top + 1]
        return names

    def list_samples(self) -> Samples:
        """The samples, as kept from the last start where no file listed, no label file and
        no image changed since (:mod:`daliaug.sources.kept_samples`); where the listing leaves
        the headers to the background check, the images are held by name (what each holds is
        the check's)."""
        root = self.path.expanduser()
        images_dir, labels_dir = folders_of(root, ("images", "labels"), "YOLO")
        listing = list_images([images_dir], root)
        labels = list_images([labels_dir], root, (".txt",))
        ignored = {**listing.ignored, **listing.skipped, **labels.ignored, **labels.skipped}
        paths = listing.all_images
        if not paths:
            raise DataError(f"source.path: found no images under {images_dir}")
        source = self._class_file()
        defer = self.defers_headers(len(paths))
        inputs = [str(source)] if source else []
        inputs += [*labels.all_images, *ignored]

        def list_now() -> Samples:
            return self._samples(paths, labels.all_images, images_dir, labels_dir, ignored, defer)

        return kept_samples(self.listing_settings(), inputs, list_now, paths)

    def _samples(
        self,
        paths: list[str],
        label_paths: list[str],
        images_dir: Path,
        labels_dir: Path,
        ignored: dict[str, str],
        defer: bool,
    ) -> Samples:
        """The samples of the images ``paths`` with the label files ``label_paths`` read (the
        headers left to the background check with ``defer``)."""
        classes = str(labels_dir / "classes.txt")
        label_paths = [p for p in label_paths if p != classes]
        label_files = dict(zip(_stems(label_paths, labels_dir), label_paths, strict=True))
        stems = _stems(paths, images_dir)
        source = self._class_file()
        pose = None if source is None or source.suffix == ".txt" else _pose(source)
        kpt_shape, flip = (None, None) if pose is None else pose
        notes: dict[str, str] = {}
        found = []
        for path, stem in zip(paths, stems, strict=True):
            label_file = label_files.get(stem)
            if label_file is None:
                notes[path] = f"no label file labels/{stem}.txt: a sample without boxes"
                found.append(ImageAnnotations())
                continue
            try:
                text = read_text(label_file, "cannot read label file")
                found.append(parse_labels(text, label_file, kpt_shape))
            except DataError as e:
                found.append(ImageAnnotations(problems=[str(e)]))
        ignored = dict(ignored)
        for stem in sorted(label_files.keys() - set(stems)):
            ignored[label_files[stem]] = f"a label file without an image images/{stem}.*"
        names = self._class_names(found)
        num_keypoints = None if kpt_shape is None else kpt_shape[0]
        table = BoxTable.of(found, num_keypoints)
        samples = detection_samples(paths, table, names, ignored, notes, defer=defer)
        return dataclasses.replace(samples, flip_indices=flip)
