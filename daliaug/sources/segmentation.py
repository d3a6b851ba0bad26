"""Semantic segmentation: images with masks matched by file stem, or listed in pairs."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import model_validator

from daliaug.config_files import read_text
from daliaug.errors import DataError
from daliaug.fields import ClassNames, FilePath, MaskClassCount, MaskValue
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import check_each, check_image_files, image_header
from daliaug.sources.kept_listing import list_images
from daliaug.sources.listing import IMAGE_EXTENSIONS

if TYPE_CHECKING:
    from PIL import Image


@dataclass(frozen=True)
class ClassTable:
    """Class names and the RGB colour of each class in colour-coded masks."""

    names: list[str]
    colours: list[tuple[int, int, int]]

    @property
    def keys(self) -> list[int]:
        """Each colour as one number, ``65536 R + 256 G + B`` (exact in float32)."""
        return [r * 65536 + g * 256 + b for r, g, b in self.colours]

    def unused_grey(self) -> int:
        """A grey level ``v`` whose colour ``(v, v, v)`` is no class's."""
        return next(v for v in range(256) if (v, v, v) not in self.colours)

    @staticmethod
    def read(path: Path) -> ClassTable:
        """Parse a ``name,r,g,b`` CSV (a header line is optional)."""
        text = read_text(path, "source.classes: cannot read class table")
        rows = list(csv.reader(text.splitlines()))
        names, colours = [], []
        for number, row in enumerate(rows, start=1):
            if not row or (number == 1 and row[0].strip().lower() == "name"):
                continue
            try:
                name, r, g, b = (v.strip() for v in row)
                colour = (int(r), int(g), int(b))
            except ValueError:
                raise DataError(
                    f"{path}:{number}: expected 'name,r,g,b', got {','.join(row)!r}"
                ) from None
            if not all(0 <= c <= 255 for c in colour) or colour in colours:
                raise DataError(f"{path}:{number}: colour {colour} is out of range or repeated")
            names.append(name)
            colours.append(colour)
        if not names:
            raise DataError(f"source.classes: class table {path} lists no classes")
        return ClassTable(names, colours)


@functools.lru_cache(maxsize=16)
def _read_class_table(path: Path, version: tuple[int, int] | None) -> ClassTable:
    return ClassTable.read(path)


def _stem_map(folder: Path, extensions: tuple[str, ...], ignored: dict[str, str]) -> dict[str, str]:
    """The files with ``extensions`` under ``folder`` by stem; what else it holds goes into
    ``ignored``."""
    listing = list_images([folder], folder, extensions)
    ignored.update({**listing.ignored, **listing.skipped})
    return {str(Path(p).relative_to(folder).with_suffix("")): p for p in listing.all_images}


class MaskTargets(SourceConfig):
    """What a source of images with masks says of its masks (``segmentation``, ``webdataset``
    with ``targets: masks``).

    Masks are PNGs. With ``classes`` (a ``name,r,g,b`` CSV) they are colour-coded and each
    colour maps to its row's index; otherwise they are greyscale index masks with values below
    ``num_classes`` (named by ``class_names``). ``ignore_index`` fills areas a geometric
    transform reveals and may also appear in masks. Masks come out as class indices
    (``mask_dtype``) or one-hot float32 (``mask_output: one_hot``; ignored pixels all zeros).
    """

    classes: FilePath | None = None
    num_classes: MaskClassCount | None = None
    class_names: ClassNames | None = None
    ignore_index: MaskValue = 255
    mask_output: Literal["index", "one_hot"] = "index"
    mask_dtype: Literal["uint8", "int32"] = "uint8"
    check_masks: bool = True

    @model_validator(mode="after")
    def _classes_given(self) -> MaskTargets:
        if self.segmentation and (self.classes is None) == (self.num_classes is None):
            raise ValueError("give 'classes' (colour-coded masks) or 'num_classes' (index masks)")
        counted = self.num_classes is not None or self.segmentation
        if counted and self.class_names is not None and len(self.class_names) != self.num_classes:
            raise ValueError(
                f"class_names lists {len(self.class_names)} names for "
                f"num_classes {self.num_classes}"
            )
        return self

    @property
    def segmentation(self) -> bool:
        return True

    @property
    def colour_coded(self) -> bool:
        return self.classes is not None

    def class_table(self) -> ClassTable | None:
        """The class table of colour-coded masks (read once while the file is unchanged)."""
        if self.classes is None:
            return None
        path = self.classes.expanduser()
        try:
            stat = path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            version = None  # read_text names the file and the reason
        return _read_class_table(path, version)

    @property
    def mask_fill(self) -> int:
        """What warped masks get where no mask pixel maps: ``ignore_index`` for index masks,
        for colour masks a grey that is no class colour (it then maps to ``ignore_index``)."""
        table = self.class_table()
        return table.unused_grey() if table is not None else self.ignore_index

    def mask_classes(self) -> list[str]:
        table = self.class_table()
        if table is not None:
            return table.names
        return self.class_names or [str(i) for i in range(self.num_classes or 0)]

    def check_mask(self, m: Image.Image, mask: str, table: ClassTable | None) -> None:
        """Mask ``m`` (named ``mask``) holds only known class values (or ``ignore_index``),
        or known colours; a :class:`DataError` naming it and what it holds otherwise."""
        if table is None and m.mode != "L":
            raise DataError(
                f"mask {mask} is a {m.mode} image, not an 8-bit greyscale index mask "
                "(for colour or palette masks give 'classes' with their colours)"
            )
        try:
            values = np.asarray(m.convert("RGB") if table else m)
        except (OSError, SyntaxError, ValueError) as e:  # what Pillow raises for bad data
            raise DataError(f"mask {mask} cannot be decoded: {type(e).__name__}: {e}") from e
        if table is not None:
            found = np.unique(values.reshape(-1, 3), axis=0)
            unknown = [
                tuple(int(c) for c in v) for v in found if tuple(v) not in set(table.colours)
            ]
            if unknown:
                raise DataError(
                    f"mask {mask} has colours not in the class table {self.classes}: {unknown[:5]}"
                )
            return
        found = np.unique(values)
        bad = [int(v) for v in found if v >= (self.num_classes or 0) and v != self.ignore_index]
        if bad:
            raise DataError(
                f"mask {mask} has class values {bad[:5]} outside 0..{(self.num_classes or 0) - 1} "
                f"(and ignore_index {self.ignore_index})"
            )


class SegmentationSource(MaskTargets):
    """Images and their masks (see :class:`MaskTargets`): ``images`` and ``masks`` folders
    matched by file stem (relative path without extension), or a ``pairs`` CSV of
    ``image,mask`` lines."""

    type: Literal["segmentation"] = "segmentation"
    images: FilePath | None = None
    masks: FilePath | None = None
    pairs: FilePath | None = None

    @model_validator(mode="after")
    def _one_layout(self) -> SegmentationSource:
        if (self.pairs is None) == (self.images is None or self.masks is None):
            raise ValueError("give either 'images' and 'masks' folders, or a 'pairs' CSV")
        return self

    def with_path(self, path: Path | str) -> SegmentationSource:
        """``path/images`` and ``path/masks`` (and ``path/classes.csv`` for colour masks)."""
        path = Path(path)
        update = {"images": path / "images", "masks": path / "masks", "pairs": None}
        if self.classes is not None:
            update["classes"] = path / "classes.csv"
        return self.model_validate({**self.model_dump(), **update})

    def _pairs(self, ignored: dict[str, str]) -> list[tuple[str, str]]:
        """The image and mask files, in pairs; what the folders hold besides them goes into
        ``ignored``."""
        if self.pairs is not None:
            base = self.pairs.expanduser().parent
            lines = read_text(self.pairs, "source.pairs: cannot read").splitlines()
            rows = [r for r in csv.reader(lines) if r and r[0].strip().lower() != "image"]
            if any(len(r) != 2 for r in rows):
                raise DataError(f"source.pairs: {self.pairs} must hold 'image,mask' lines")
            return [(str(base / i.strip()), str(base / m.strip())) for i, m in rows]
        assert self.images is not None and self.masks is not None
        for name, folder in (("images", self.images), ("masks", self.masks)):
            if not folder.expanduser().is_dir():
                raise DataError(f"source.{name}: folder {folder} does not exist")
        images = _stem_map(self.images.expanduser(), IMAGE_EXTENSIONS, ignored)
        masks = _stem_map(self.masks.expanduser(), (".png",), ignored)
        if not images:
            raise DataError(f"source.images: found no images under {self.images}")
        lonely_images = sorted(images.keys() - masks.keys())
        lonely_masks = sorted(masks.keys() - images.keys())
        if lonely_images or lonely_masks:
            raise DataError(
                f"images and masks do not match by name: {len(lonely_images)} images without a "
                f"mask (first: {lonely_images[:5]}), {len(lonely_masks)} masks without an image "
                f"(first: {lonely_masks[:5]})"
            )
        return [(images[stem], masks[stem]) for stem in sorted(images)]

    def list_samples(self) -> Samples:
        ignored: dict[str, str] = {}
        pairs = self._pairs(ignored)
        if not pairs:
            raise DataError("source: the segmentation source lists no image/mask pairs")
        images, masks = [i for i, _ in pairs], [m for _, m in pairs]
        sizes, rejected = check_image_files(images)
        headers, failed = check_each(image_header, masks, "reading mask headers")
        rejected.update(failed)
        for image, mask, (h, w), header in zip(images, masks, sizes, headers, strict=True):
            if header is None or image in rejected:
                continue
            kind, mh, mw = header
            if kind != "PNG":
                rejected[mask] = f"mask {mask} is a {kind}; masks must be lossless PNGs"
            elif (mh, mw) != (h, w):
                rejected[mask] = f"mask {mask} is {mw}x{mh} but its image {image} is {w}x{h}"
        if self.check_masks:
            table = self.class_table()
            usable = [m for m in masks if m not in rejected]
            _, failed = check_each(lambda m: self._check_mask(m, table), usable, "checking masks")
            rejected.update(failed)
        files = {"path": images, "mask_path": masks}
        return Samples.of_files(files, self.mask_classes(), sizes, rejected, ignored)

    def _check_mask(self, mask: str, table: ClassTable | None) -> None:
        from PIL import Image

        with Image.open(mask) as m:
            self.check_mask(m, mask, table)
