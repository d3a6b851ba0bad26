"""Pascal VOC detection folders: ``Annotations/*.xml``, one per image in ``JPEGImages/``."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Literal

from daliaug.errors import DataError
from daliaug.fields import ClassNames, FilePath
from daliaug.sources.annotations import (
    BoxTable,
    ImageAnnotations,
    detection_samples,
    folders_of,
)
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.kept_listing import list_images
from daliaug.sources.kept_samples import kept_samples

CORNERS = ("xmin", "ymin", "xmax", "ymax")


def _number(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_xml(xml: str, images: Path) -> tuple[str, ImageAnnotations, list[str]]:
    """One annotation file: its image's path, its boxes (``xyxy``, pixel corners) and each
    box's class name; a :class:`DataError` naming ``xml`` if it cannot be parsed at all."""
    try:
        root = ElementTree.parse(xml).getroot()
    except OSError as e:
        raise DataError(f"cannot read annotation file {xml}: {e.strerror or e}") from e
    except ElementTree.ParseError as e:
        raise DataError(f"annotation file {xml} is not valid XML: {e}") from e
    if root.tag != "annotation":
        raise DataError(
            f"annotation file {xml}: the root element is <{root.tag}>, not <annotation>"
        )
    filename = (root.findtext("filename") or "").strip() or f"{Path(xml).stem}.jpg"
    height, width = (_number(root.findtext(f"size/{k}")) for k in ("height", "width"))
    found = ImageAnnotations(origin=xml)
    if height and width and height == int(height) and width == int(width):  # 0: undeclared
        found.size = (int(height), int(width))
    names = []
    for k, obj in enumerate(root.findall("object"), start=1):
        name = (obj.findtext("name") or "").strip()
        where = f"{xml}: object {k} ({name or 'no name'})"
        corners = [_number(obj.findtext(f"bndbox/{c}")) for c in CORNERS]
        if not name or None in corners:
            found.problems.append(f"{where}: needs a <name> and a <bndbox> of {', '.join(CORNERS)}")
            continue
        x0, y0, x1, y1 = corners
        # VOC's corners are 1-based pixel indices, both inclusive: (1, W) spans the whole width
        found.add((x0 - 1, y0 - 1, x1, y1), 0, where)
        names.append(name)
    return str(images / filename), found, names


class VocSource(SourceConfig):
    """``path/Annotations/*.xml`` (Pascal VOC), each naming its image in ``path/JPEGImages``
    (``<filename>``, else the XML's stem ``.jpg``). Boxes are VOC's 1-based inclusive pixel
    indices, converted to pixel corners (``xmin - 1, ymin - 1, xmax, ymax``, as Detectron2
    reads them); ``difficult`` objects are kept. Class names are the sorted ``<name>``s found,
    or ``classes`` (then another name fails its sample). Images no XML names are left out and
    named."""

    type: Literal["voc"] = "voc"
    path: FilePath
    classes: ClassNames | None = None

    @property
    def detection(self) -> bool:
        return True

    def list_samples(self) -> Samples:
        """The samples, as kept from the last start where no file listed, no annotation file
        and no image changed since (:mod:`daliaug.sources.kept_samples`); where the listing
        leaves the headers to the background check, the images are held by name (what each
        holds is the check's)."""
        root = self.path.expanduser()
        xml_dir, images = folders_of(root, ("Annotations", "JPEGImages"), "Pascal VOC")
        xmls = list_images([xml_dir], root, (".xml",))
        if not xmls.all_images:
            raise DataError(f"source.path: found no .xml annotation files under {xml_dir}")
        listing = list_images([images], root)
        ignored = {**xmls.ignored, **xmls.skipped}
        return kept_samples(
            self.listing_settings(),
            [*xmls.all_images, *ignored],
            lambda: self._samples(xmls.all_images, images, listing.all_images, ignored),
            [listing.digest],
        )

    def _samples(
        self, xmls: list[str], images: Path, listed: list[str], ignored: dict[str, str]
    ) -> Samples:
        """The samples the annotation files ``xmls`` name (in ``images``, which holds the
        files ``listed``)."""
        paths, found, names, rejected = [], [], [], {}
        named_by: dict[str, str] = {}
        for xml in xmls:
            try:
                path, annotations, classes = parse_xml(xml, images)
            except DataError as e:
                rejected[xml] = str(e)
                continue
            if path in named_by:  # which of the two holds the image's boxes is anyone's guess
                raise DataError(
                    f"source.path: {named_by[path]} and {xml} both name the image {path}; "
                    "each image needs one annotation file"
                )
            named_by[path] = xml
            paths.append(path)
            found.append(annotations)
            names.append(classes)
        class_names = self.classes or sorted({n for classes in names for n in classes})
        index = {name: i for i, name in enumerate(class_names)}
        for annotations, classes in zip(found, names, strict=True):
            for i, (name, where) in enumerate(zip(classes, annotations.where, strict=True)):
                if name not in index:
                    annotations.problems.append(f"{where}: class {name!r} is not in source.classes")
                annotations.labels[i] = index.get(name, 0)
        named = set(paths)
        unnamed = [p for p in listed if p not in named]
        ignored = dict(ignored)
        ignored.update(dict.fromkeys(unnamed, "no annotation file in Annotations/ names it"))
        defer = self.defers_headers(len(paths))
        table = BoxTable.of(found, None)
        return detection_samples(
            paths, table, class_names, ignored, {}, rejected=rejected, defer=defer
        )
