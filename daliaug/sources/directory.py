"""A directory with one sub-folder per class, as Keras' ``image_dataset_from_directory``."""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, Field, model_validator

from daliaug.errors import ConfigError, DataError, DataWarning, user_stacklevel
from daliaug.fields import ClassNames, FilePath
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import image_headers
from daliaug.sources.kept_listing import list_images
from daliaug.sources.listing import IMAGE_EXTENSIONS, Listing


def _folder_names(names: list[str]) -> list[str]:
    bad = [n for n in names if n in ("", ".", "..") or "/" in n or "\0" in n]
    if bad:
        raise ValueError(f"class names are folder names, without '/' and not '.' or '..': {bad}")
    return names


class DirectorySource(SourceConfig):
    """``path/<class>/**/*.{jpg,jpeg,png}``; class index = position in the sorted folder names.

    ``class_names`` restricts and orders the classes explicitly instead. ``validation_split``
    and ``subset`` (``training``, ``validation``, or ``both``: ``make_dataset`` then returns
    the two datasets) hold a part of the folder out, as Keras' ``image_dataset_from_directory``
    does (see :meth:`Samples.holdout`), split by the config's ``seed``. Links to files are
    followed; a link to a folder only when it leads out of ``path`` (one that leads back into
    it would list images twice, or under another class) and to a folder not listed already:
    each skipped link is named in a :class:`~daliaug.errors.DataWarning`.
    """

    type: Literal["directory"] = "directory"
    path: FilePath
    class_names: Annotated[ClassNames, AfterValidator(_folder_names)] | None = None
    validation_split: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None
    subset: Literal["training", "validation", "both"] | None = None

    @model_validator(mode="after")
    def _split_and_subset(self) -> DirectorySource:
        if (self.validation_split is None) != (self.subset is None):
            raise ValueError(
                "validation_split and subset go together: the fraction held out for validation "
                "and which part this source reads (training, validation or both)"
            )
        return self

    @property
    def both(self) -> bool:
        return self.subset == "both"

    def part(self, samples: Samples, seed: int | None) -> Samples:
        if self.validation_split is None:
            return samples
        if self.subset == "both":
            raise ConfigError(
                "source.subset: both makes two datasets, which make_dataset returns as "
                "(training, validation); elsewhere give subset: training or validation"
            )
        if seed is None:
            raise ConfigError(
                "seed: source.validation_split splits the folder at random, so it needs the "
                "config's seed (the same in the training and the validation config)"
            )
        training, validation = samples.holdout(self.validation_split, seed)
        return training if self.subset == "training" else validation

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
                stacklevel=user_stacklevel(),
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
        ignored = {**listing.ignored, **listing.skipped}
        if self.defers_headers(len(paths)):
            return Samples.of_files({"path": paths}, names, None, ignored=ignored, label=labels)
        headers = image_headers(paths)
        return Samples.of_files(
            {"path": paths},
            names,
            headers.sizes,
            headers.rejected,
            ignored,
            listed=headers.key_of(paths),
            label=labels,
        )
