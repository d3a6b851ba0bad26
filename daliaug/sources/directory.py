"""A directory with one sub-folder per class, as Keras' ``image_dataset_from_directory``."""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator

from daliaug.errors import DataError, DataWarning
from daliaug.fields import ClassNames, FilePath
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import check_image_files
from daliaug.sources.listing import IMAGE_EXTENSIONS, Listing, list_images


def _folder_names(names: list[str]) -> list[str]:
    bad = [n for n in names if n in ("", ".", "..") or "/" in n or "\0" in n]
    if bad:
        raise ValueError(f"class names are folder names, without '/' and not '.' or '..': {bad}")
    return names


class DirectorySource(SourceConfig):
    """``path/<class>/**/*.{jpg,jpeg,png}``; class index = position in the sorted folder names.

    ``class_names`` restricts and orders the classes explicitly instead. Links to files are
    followed; a link to a folder only when it leads out of ``path`` (one that leads back into
    it would list images twice, or under another class) and to a folder not listed already:
    each skipped link is named in a :class:`~daliaug.errors.DataWarning`.
    """

    type: Literal["directory"] = "directory"
    path: FilePath
    class_names: Annotated[ClassNames, AfterValidator(_folder_names)] | None = None

    def listing(self) -> tuple[list[str], Listing]:
        """The class names and what listing their folders found (skipped links warned of)."""
        root = self.path.expanduser()
        if not root.is_dir():
            raise DataError(f"source.path: data directory {root} does not exist")
        names = self.class_names or sorted(d.name for d in root.iterdir() if d.is_dir())
        if not names:
            raise DataError(
                f"source.path: {root} has no class sub-folders (expected {root}/<class>/<image>)"
            )
        for name in names:
            if not (root / name).is_dir():
                raise DataError(f"source.class_names: class folder {root / name} does not exist")
        listing = list_images([root / name for name in names], root)
        if listing.skipped:
            shown = "; ".join(f"{p}: {r}" for p, r in list(listing.skipped.items())[:5])
            warnings.warn(
                f"source.path: skipped {len(listing.skipped)} folder links under {root} (they "
                f"would list images twice): {shown}",
                DataWarning,
                stacklevel=3,
            )
        return names, listing

    def list_samples(self) -> Samples:
        names, listing = self.listing()
        paths = listing.all_images
        if not paths:
            raise DataError(
                f"source.path: found no images ({', '.join(IMAGE_EXTENSIONS)}) under "
                f"{self.path.expanduser()}"
            )
        labels = np.concatenate(
            [np.full(len(found), i, np.int32) for i, found in enumerate(listing.images.values())]
        )
        sizes, rejected = check_image_files(paths)
        ignored = {**listing.ignored, **listing.skipped}
        return Samples.of_files({"path": paths}, names, sizes, rejected, ignored, label=labels)
