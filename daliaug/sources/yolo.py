"""YOLO detection folders: ``images/`` and ``labels/`` matched by relative path, one line per
object (normalised to the image): ``class cx cy w h`` (a box), then ``px py [v]`` per keypoint
in a pose dataset (``kpt_shape`` in its ``data.yaml``), or ``class x1 y1 x2 y2 ...`` (a segment
polygon, whose enclosing box is taken)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Literal

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
from daliaug.sources.yolo_labels import (
    KeypointShape,
    LabelColumn,
    LabelFiles,
    class_problems,
    read_labels,
)

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


def _stems(paths: list[str], folder: Path) -> list[str]:
    """Each of ``paths`` (listed under ``folder`` by their suffix) relative to it, without its
    suffix: string arithmetic, as a listing's paths are ``folder``'s own name joined with
    theirs, each ending in the suffix it was listed by."""
    prefix = os.path.join(folder, "")
    n = len(prefix)
    return [
        p[n : p.rindex(".")]
        if p.startswith(prefix)
        else os.path.splitext(os.path.relpath(p, folder))[0]
        for p in paths
    ]


class YoloSource(SourceConfig):
    """``path/images/**`` and ``path/labels/**.txt``: ``images/a/b.jpg``'s boxes are in
    ``labels/a/b.txt``, a line ``class cx cy w h`` each (centre and size as fractions of the
    image), converted to absolute ``xyxy`` with the image's header size (read by the listing,
    or, where the background check reads the headers, as each batch is made, the check holding
    each image's boxes to it; there, with a class file, the check reads each label file too,
    with its image's header: :mod:`daliaug.sources.yolo_labels`). A pose dataset (its
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

    @staticmethod
    def _classes(source: Path | None) -> tuple[list[str], str]:
        """The class names the class file ``source`` gives (see the class; without one, every
        name :data:`UNNAMED_CLASSES` allows) and which they are, for messages."""
        if source is None:
            names = [str(i) for i in range(UNNAMED_CLASSES)]
        elif source.name == "classes.txt":
            text = read_text(source, "source.path: cannot read class names")
            lines = text.removeprefix("\ufeff").splitlines()
            names = [line.strip() for line in lines if line.strip()]
        else:
            names = _names_from_yaml(source)
        return names, f"the {len(names)} classes of {source or 'a dataset without a class file'}"

    def _class_names(self, found: list[ImageAnnotations], source: Path | None) -> list[str]:
        """The class names (see the class; ``source``: the class file), checked against the
        indices ``found``."""
        names, among = self._classes(source)
        for f in found:
            class_problems(f, len(names), among)
        if source is None:  # "0" to the largest index found
            top = max((x for f in found for x in f.labels if x < UNNAMED_CLASSES), default=0)
            return names[: top + 1]
        return names

    def list_samples(self) -> Samples:
        """The samples, as kept from the last start where no file listed, no label file and
        no image changed since (:mod:`daliaug.sources.kept_samples`); where the listing leaves
        the headers to the background check, the images are held by name (what each holds is
        the check's), and with a class file the label files too (a label file rewritten in
        place keeps the record: the check reads each as it reads its image's header,
        :mod:`daliaug.sources.yolo_labels`)."""
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
        late = defer and source is not None
        inputs = [str(source)] if source else []
        named = [listing.digest, labels.digest] if late else [listing.digest]
        inputs += [*([] if late else labels.all_images), *ignored]

        def list_now() -> Samples:
            return self._samples(
                paths, labels.all_images, images_dir, labels_dir, ignored, defer, late
            )

        return kept_samples(self.listing_settings(), inputs, list_now, named)

    def _samples(
        self,
        paths: list[str],
        label_paths: list[str],
        images_dir: Path,
        labels_dir: Path,
        ignored: dict[str, str],
        defer: bool,
        late: bool,
    ) -> Samples:
        """The samples of the images ``paths`` with the label files ``label_paths`` read (the
        headers left to the background check with ``defer``; with ``late``, the label files
        too)."""
        classes = str(labels_dir / "classes.txt")
        by_name = {  # (each by the name an image's label file has: a .txt suffix)
            p if p.endswith(".txt") else p[:-4] + ".txt": p for p in label_paths if p != classes
        }
        stems = _stems(paths, images_dir)
        source = self._class_file()
        pose = None if source is None or source.suffix == ".txt" else _pose(source)
        kpt_shape, flip = (None, None) if pose is None else pose
        where = os.path.join(labels_dir, "")
        files = [by_name.get(f"{where}{stem}.txt", "") for stem in stems]
        notes: dict[str, str] = {}
        if "" in files:
            for path, stem, label_file in zip(paths, stems, files, strict=True):
                if not label_file:
                    notes[path] = f"no label file labels/{stem}.txt: a sample without boxes"
        ignored = dict(ignored)
        taken = set(files) - {""}
        if len(taken) < len(by_name):  # (a label file no image took)
            unused = sorted(set(by_name.values()) - taken)
            for label_file, stem in zip(unused, _stems(unused, labels_dir), strict=True):
                ignored[label_file] = f"a label file without an image images/{stem}.*"
        if late:
            names, among = self._classes(source)
            late_files = LabelFiles(files, len(names), among, kpt_shape)
            columns = LabelColumn.columns(late_files)
            samples = Samples.of_files(
                {"path": paths}, names, None, None, ignored, notes, normalised=True, **columns
            )
            return dataclasses.replace(samples, flip_indices=flip)
        found = [read_labels(label_file, kpt_shape) for label_file in files]
        names = self._class_names(found, source)
        num_keypoints = None if kpt_shape is None else kpt_shape[0]
        table = BoxTable.of(found, num_keypoints)
        samples = detection_samples(paths, table, names, ignored, notes, defer=defer)
        return dataclasses.replace(samples, flip_indices=flip)
