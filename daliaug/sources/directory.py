"""A directory with one sub-folder per class, as Keras' ``image_dataset_from_directory``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.base import IMAGE_EXTENSIONS, Samples, SourceConfig, check_image_files


class DirectorySource(SourceConfig):
    """``path/<class>/**/*.{jpg,jpeg,png}``; class index = position in the sorted folder names.

    ``class_names`` restricts and orders the classes explicitly instead.
    """

    type: Literal["directory"] = "directory"
    path: Path
    class_names: list[str] | None = None

    def list_samples(self) -> Samples:
        root = self.path.expanduser()
        if not root.is_dir():
            raise DataError(f"source.path: data directory {root} does not exist")
        names = self.class_names or sorted(d.name for d in root.iterdir() if d.is_dir())
        if not names:
            raise DataError(
                f"source.path: {root} has no class sub-folders (expected {root}/<class>/<image>)"
            )
        paths: list[str] = []
        labels: list[int] = []
        for index, name in enumerate(names):
            folder = root / name
            if not folder.is_dir():
                raise DataError(f"source.class_names: class folder {folder} does not exist")
            found = sorted(
                os.path.join(dirpath, f)
                for dirpath, _, files in os.walk(folder, followlinks=True)
                for f in files
                if f.lower().endswith(IMAGE_EXTENSIONS)
            )
            paths += found
            labels += [index] * len(found)
        if not paths:
            raise DataError(
                f"source.path: found no images ({', '.join(IMAGE_EXTENSIONS)}) under {root}"
            )
        sizes, rejected = check_image_files(paths)
        labels_ = np.asarray(labels, dtype=np.int32)
        return Samples.of_files({"path": paths}, names, sizes, rejected, label=labels_)
