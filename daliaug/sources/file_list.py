"""A CSV or text file of ``path,label`` lines."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Literal

import numpy as np

from daliaug.config_files import read_text
from daliaug.errors import DataError
from daliaug.fields import FilePath
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import check_image_files


class FileListSource(SourceConfig):
    """Lines of ``path,label`` (``.txt`` may separate them with whitespace instead).

    Labels are integer class indices, or class names mapped to indices in sorted order. Relative
    paths are taken relative to ``root`` (default: the list file's folder). A first line
    ``path,label`` is a header and skipped.
    """

    type: Literal["file_list"] = "file_list"
    path: FilePath
    root: FilePath | None = None

    def _rows(self) -> list[tuple[int, str, str]]:
        list_file = self.path.expanduser()
        text = read_text(list_file, "source.path: cannot read file list")
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = next(csv.reader([line])) if "," in line else line.rsplit(None, 1)
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise DataError(f"{list_file}:{number}: expected 'path,label', got {line!r}")
            if number == 1 and [f.strip().lower() for f in fields] == ["path", "label"]:
                continue
            rows.append((number, fields[0].strip(), fields[1].strip()))
        if not rows:
            raise DataError(f"source.path: file list {list_file} lists no images")
        return rows

    def list_samples(self) -> Samples:
        rows = self._rows()
        root = (self.root or self.path.expanduser().parent).expanduser()
        raw = [label for _, _, label in rows]
        numeric = all(label.lstrip("-").isdigit() for label in raw)
        if numeric:
            values = [int(label) for label in raw]
            for (number, _, _), value in zip(rows, values, strict=True):
                if value < 0:
                    raise DataError(f"{self.path}:{number}: label {value} is negative")
            class_names = [str(i) for i in range(max(values) + 1)]
        else:
            class_names = sorted(set(raw))
            index = {name: i for i, name in enumerate(class_names)}
            values = [index[label] for label in raw]
        paths = [
            str(p if (p := Path(path).expanduser()).is_absolute() else root / p)
            for _, path, _ in rows
        ]
        sizes, rejected = check_image_files(paths)
        labels = np.asarray(values, dtype=np.int32)
        return Samples.of_files({"path": paths}, class_names, sizes, rejected, label=labels)
