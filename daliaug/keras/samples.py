"""The samples of ``flow``, ``flow_from_directory`` and ``flow_from_dataframe``, listed, ordered
and split as Keras' iterators do, as daliaug :class:`~daliaug.sources.base.Samples`."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.base import Samples, check_image_files, describe_rejected

KERAS_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")
"""The extensions Keras' iterators list."""
DECODED = ("png", "jpg", "jpeg")
"""Those daliaug decodes (JPEG and PNG, on the GPU or the CPU)."""


def as_uint8(x: np.ndarray) -> np.ndarray:
    """Images on the 0..255 scale as ``uint8``: exactly when they hold whole numbers 0..255;
    other values within 0..255 are rounded to the nearest whole number (a warning says so);
    values outside 0..255, or fractions no larger than 1 (images already scaled to [0, 1]),
    are refused, since rounding them would change the images."""
    if x.dtype == np.uint8:
        return x
    if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
        raise ValueError(f"flow: x must hold numbers, got dtype {x.dtype}")
    low, high = float(x.min()), float(x.max())
    if low < 0 or high > 255:
        raise ValueError(
            f"flow: x holds values from {low} to {high}; daliaug's pipelines take images on the "
            "0..255 scale (uint8, or whole numbers 0..255 in any dtype): pass them unscaled "
            "and set rescale in ImageDataGenerator"
        )
    rounded = np.rint(x)
    if not np.array_equal(rounded, x):
        if high <= 1.0:
            raise ValueError(
                "flow: x holds fractions between 0 and 1 (images already scaled?); daliaug's "
                "pipelines take images on the 0..255 scale: pass x * 255 and set "
                "rescale=1/255 in ImageDataGenerator"
            )
        warnings.warn(
            "flow: x holds values between whole numbers; daliaug's pipelines take uint8 images, "
            "so each value is rounded to the nearest whole number (a change of at most 0.5)",
            UserWarning,
            stacklevel=3,
        )
    return rounded.astype(np.uint8)


def split_range(split: float, subset: str | None, n: int) -> slice:
    """The part of ``n`` items a ``subset`` keeps: ``validation`` the first ``int(split * n)``,
    ``training`` the rest (as Keras splits, per class folder for files)."""
    if subset is None:
        return slice(0, n)
    if subset not in ("training", "validation"):
        raise ValueError(f'Invalid subset name: {subset}; expected "training" or "validation".')
    if not split:
        raise ValueError(
            f"subset={subset!r} needs validation_split set in ImageDataGenerator (it is "
            f"{split}): the subsets are the two parts of that split"
        )
    cut = int(split * n)
    return slice(0, cut) if subset == "validation" else slice(cut, n)


@dataclass(frozen=True)
class Listing:
    """Image files with their labels (or targets) and weights, in Keras' order."""

    directory: str
    filenames: list[str]
    """Paths relative to ``directory`` (as Keras' ``filenames``)."""
    class_names: list[str]
    labels: np.ndarray | None = None
    targets: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def filepaths(self) -> list[str]:
        return [os.path.join(self.directory, name) for name in self.filenames]

    def samples(self) -> Samples:
        """The files as daliaug samples (headers checked, sizes read)."""
        paths = self.filepaths
        for path in paths:
            if not path.lower().endswith(DECODED):
                raise ValueError(
                    f"{path}: daliaug decodes JPEG and PNG files only (Keras' iterators also "
                    "list BMP, PPM and TIFF); convert it, or move it out of the folder"
                )
        columns: dict[str, np.ndarray] = {}
        if self.labels is not None:
            columns["label"] = np.asarray(self.labels, np.int32)
        if self.targets is not None:
            columns["target"] = np.asarray(self.targets, np.float32)
        sizes, rejected = check_image_files(paths)
        if rejected:
            raise DataError(describe_rejected(rejected, len(paths)))
        return Samples.of_files({"path": paths}, self.class_names, sizes, **columns)


def list_directory(
    directory: str,
    classes: list[str] | None,
    follow_links: bool,
    split: float,
    subset: str | None,
) -> Listing:
    """The images of ``directory/<class>/**`` as Keras' ``DirectoryIterator`` lists them:
    classes in sorted folder order (or as given), each class's files in sorted walk order,
    each class folder cut by the subset's part of the split."""
    names = (
        list(classes)
        if classes
        else sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
    )
    filenames: list[str] = []
    labels: list[int] = []
    for index, name in enumerate(names):
        folder = os.path.join(directory, name)
        found = [
            os.path.join(name, os.path.relpath(os.path.join(root, f), folder))
            for root, _, files in sorted(os.walk(folder, followlinks=follow_links))
            for f in sorted(files)
            if f.lower().endswith(KERAS_FORMATS)
        ]
        found = found[split_range(split, subset, len(found))]
        filenames += found
        labels += [index] * len(found)
    print(f"Found {len(filenames)} images belonging to {len(names)} classes.")
    return Listing(directory, filenames, names, labels=np.asarray(labels, np.int32))


def list_dataframe(
    dataframe: Any,
    directory: str | None,
    x_col: str,
    y_col: str,
    weight_col: str | None,
    classes: list[str] | None,
    class_mode: str | None,
    validate_filenames: bool,
    split: float,
    subset: str | None,
) -> Listing:
    """The rows of a pandas ``dataframe`` as Keras' ``DataFrameIterator`` takes them: file
    names in ``x_col``, class names (``raw``: numbers) in ``y_col``, weights in ``weight_col``;
    invalid files dropped with Keras' warning, unknown classes dropped, the subset's part
    of the rows."""
    df = dataframe.copy()
    root = directory or ""
    _check_dataframe(df, x_col, y_col, weight_col, classes, class_mode)
    if validate_filenames:
        paths = [os.path.join(root, str(f)) for f in df[x_col]]
        valid = [p.lower().endswith(KERAS_FORMATS) and os.path.isfile(p) for p in paths]
        if not all(valid):
            warnings.warn(
                f'Found {valid.count(False)} invalid image filename(s) in x_col="{x_col}". '
                "These filename(s) will be ignored.",
                UserWarning,
                stacklevel=3,
            )
            df = df[valid]
    names: list[str] = []
    if class_mode not in ("input", "raw", None):
        names = list(dict.fromkeys(classes)) if classes else sorted(set(df[y_col]))
        df = df[[label in names for label in df[y_col]]]
    df = df.iloc[split_range(split, subset, len(df))]
    labels = targets = None
    if class_mode == "raw":
        targets = np.asarray(df[y_col].tolist(), np.float32)
    elif class_mode not in ("input", None):
        index = {name: i for i, name in enumerate(names)}
        labels = np.asarray([index[label] for label in df[y_col]], np.int32)
    weights = None if weight_col is None else np.asarray(df[weight_col], np.float32)
    filenames = [str(f) for f in df[x_col]]
    what = "validated" if validate_filenames else "non-validated"
    belonging = f" belonging to {len(names)} classes" if labels is not None else ""
    print(f"Found {len(filenames)} {what} image filenames{belonging}.")
    return Listing(root, filenames, names, labels, targets, weights)


def _check_dataframe(
    df: Any,
    x_col: str,
    y_col: str,
    weight_col: str | None,
    classes: list[str] | None,
    class_mode: str | None,
) -> None:
    """Keras' checks of a dataframe's columns, with its messages."""
    if not all(isinstance(v, str) for v in df[x_col]):
        raise TypeError(f"All values in column x_col={x_col} must be strings.")
    if class_mode in ("binary", "sparse", "categorical") and not all(
        isinstance(v, str) for v in df[y_col]
    ):
        raise TypeError(
            f'If class_mode="{class_mode}", y_col="{y_col}" column values must be strings '
            "(daliaug takes one class name per row; Keras' multi-label lists are not supported)."
        )
    if class_mode == "binary":
        count = len(set(classes)) if classes else len(set(df[y_col]))
        if count != 2:
            raise ValueError(f'If class_mode="binary" there must be 2 classes. Found {count}.')
    if weight_col and not np.issubdtype(np.asarray(df[weight_col]).dtype, np.number):
        raise TypeError(f"Column weight_col={weight_col} must be numeric.")
