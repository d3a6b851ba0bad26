"""YOLO detection folders: ``images/`` and ``labels/`` matched by relative path, one
``class cx cy w h`` line (normalised to the image) per box."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from daliaug.errors import DataError
from daliaug.fields import FilePath
from daliaug.sources.annotations import ImageAnnotations, detection_samples, folders_of
from daliaug.sources.base import Samples, SourceConfig, read_text
from daliaug.sources.listing import list_images

NAME_FILES = ("data.yaml", "dataset.yaml")
"""Where a YOLO dataset names its classes (``names``), in ``path`` or its parent."""

UNNAMED_CLASSES = 4096
"""How many classes a YOLO dataset without a class file may number (``"0"``, ``"1"``, ...): a
larger index is a typo far more often than a class, and would make that many names."""


def _names_from_yaml(path: Path) -> list[str]:
    """The ``names`` of a YOLO ``data.yaml``: a list, or a mapping of indices 0..K-1."""
    from daliaug.config_files import read_config_file  # config_files imports sources

    names = read_config_file(path).get("names")
    if isinstance(names, dict) and sorted(names) == list(range(len(names))):
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names:
        raise DataError(
            f"{path}: 'names' must be a list of class names or a mapping of the indices "
            f"0..K-1 to names, got {str(names)[:200]}"
        )
    return [str(name) for name in names]


def parse_labels(text: str, label_file: str) -> ImageAnnotations:
    """One label file's boxes (normalised ``xyxy``) and class indices; each malformed line is
    a problem naming ``label_file:line``."""
    found = ImageAnnotations(normalised=True, origin=label_file)
    text = text.removeprefix("\ufeff")  # the byte order mark Notepad writes
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{label_file}:{number}"
        try:
            values = [float(v) for v in fields]
        except ValueError:
            values = []
        if len(values) != 5 or not all(math.isfinite(v) for v in values):
            found.problems.append(f"{where}: expected 'class cx cy w h' (5 numbers), got {line!r}")
            continue
        label, cx, cy, w, h = values
        if label < 0 or label != int(label):
            found.problems.append(f"{where}: class {fields[0]!r} is not a class index")
            continue
        found.add((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), int(label), where)
    return found


class YoloSource(SourceConfig):
    """``path/images/**`` and ``path/labels/**.txt``: ``images/a/b.jpg``'s boxes are in
    ``labels/a/b.txt``, a line ``class cx cy w h`` each (centre and size as fractions of the
    image), converted to absolute ``xyxy`` with the image's header size.

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
        root = self.path.expanduser()
        images_dir, labels_dir = folders_of(root, ("images", "labels"), "YOLO")
        listing = list_images([images_dir], root)
        labels = list_images([labels_dir], root, (".txt",))
        ignored = {**listing.ignored, **listing.skipped, **labels.ignored, **labels.skipped}
        paths = listing.all_images
        if not paths:
            raise DataError(f"source.path: found no images under {images_dir}")
        label_files = {
            str(Path(p).relative_to(labels_dir).with_suffix("")): p
            for p in labels.all_images
            if Path(p) != labels_dir / "classes.txt"
        }
        stems = [str(Path(p).relative_to(images_dir).with_suffix("")) for p in paths]
        notes: dict[str, str] = {}
        found = []
        for path, stem in zip(paths, stems, strict=True):
            label_file = label_files.get(stem)
            if label_file is None:
                notes[path] = f"no label file labels/{stem}.txt: a sample without boxes"
                found.append(ImageAnnotations())
                continue
            try:
                text = read_text(Path(label_file), "cannot read label file")
                found.append(parse_labels(text, label_file))
            except DataError as e:
                found.append(ImageAnnotations(problems=[str(e)]))
        for stem in sorted(label_files.keys() - set(stems)):
            ignored[label_files[stem]] = f"a label file without an image images/{stem}.*"
        names = self._class_names(found)
        return detection_samples(paths, found, names, ignored, notes)
