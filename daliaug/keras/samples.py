"""The samples of ``flow``, ``flow_from_directory`` and ``flow_from_dataframe``, listed, ordered
and split as Keras' iterators do, as daliaug :class:`~daliaug.sources.base.Samples`, with the
targets of each ``class_mode``."""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daliaug.errors import DataError
from daliaug.sources.base import Samples, encode_paths
from daliaug.sources.checks import check_image_files, describe_rejected, image_header

KERAS_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")
"""The extensions Keras' iterators list."""
DECODED = ("png", "jpg", "jpeg")
"""Those daliaug decodes (JPEG and PNG, on the GPU or the CPU)."""


@dataclass(frozen=True)
class Levels:
    """How in-memory images map onto the pipelines' 256 levels: ``value = low + step * level``
    (``uint8`` and whole numbers 0..255: ``low`` 0, ``step`` 1)."""

    low: float = 0.0
    step: float = 1.0

    def level(self, value: float) -> float:
        """A value of the input (a fill, a shift) on the level scale."""
        return (value - self.low) / self.step


UNIT = Levels()
"""The levels of ``uint8`` images: the values themselves."""


def to_levels(x: np.ndarray) -> tuple[np.ndarray, Levels]:
    """Images of any numeric range as ``uint8`` levels and the map back to their values.

    ``uint8`` and whole numbers within 0..255 are their own levels. Other values within 0..255
    are rounded to whole numbers; values within [0, 1] (images already divided by 255) are
    scaled by 255 first; anything else maps its range, ``x.min()`` to ``x.max()``, onto 0..255.
    A warning gives the largest change where rounding to the 256 levels changed a value (none
    for ``uint8 / 255``)."""
    if x.dtype == np.uint8:
        return x, UNIT
    if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
        raise ValueError(f"flow: x must hold numbers, got dtype {x.dtype}")
    values = np.asarray(x, np.float64)
    if values.size == 0:
        return values.astype(np.uint8), UNIT
    low, high = float(values.min()), float(values.max())
    if not np.isfinite(low) or not np.isfinite(high):
        raise ValueError("flow: x holds NaN or infinite values")
    levels = UNIT
    if low >= 0 and high <= 1 and not np.array_equal(values, np.rint(values)):
        levels = Levels(0.0, 1 / 255)
    elif low < 0 or high > 255:
        levels = Levels(low, (high - low) / 255 or 1.0)
    scaled = np.rint((values - levels.low) / levels.step)
    error = float(np.abs(scaled * levels.step + levels.low - values).max())
    if error > 1e-6 * max(1.0, abs(low), abs(high)):
        warnings.warn(
            f"flow: x holds values {low:g} to {high:g} that fall between the 256 levels daliaug's "
            f"pipelines compute on (uint8: one level is {levels.step:g}); each is rounded to "
            f"the nearest level, a change of at most {error:.3g}",
            UserWarning,
            stacklevel=3,
        )
    return np.clip(scaled, 0, 255).astype(np.uint8), levels


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


class HeaderSizes:
    """Each file's ``(height, width)``, read from its header the first time a batch needs it
    (``validate_filenames=False``: nothing is opened when the flow is made). Indexes like the
    ``(N, 2)`` array it stands for; a missing or unreadable file raises a
    :class:`~daliaug.errors.DataError` naming it when its batch is fed."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.known = np.full((len(paths), 2), -1, np.int32)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: Any) -> np.ndarray:
        rows = np.arange(len(self.paths))[index]
        with self._lock:
            for i in np.unique(rows[self.known[rows, 0] < 0]):
                _, h, w = image_header(self.paths[i])
                self.known[i] = (h, w)
            return self.known[rows]


@dataclass(frozen=True)
class Targets:
    """What follows the images in each batch, per sample: class indices (``labels``, for the
    pipeline's one-hot or float targets), or a ``float32`` table passed through (``table``:
    multi-hot rows, ``raw`` values, or ``multi_output``'s outputs side by side, cut back into
    ``outputs`` shapes after the pipeline)."""

    label_mode: str
    """daliaug's ``label_mode``: ``categorical``, ``float``, ``raw``, ``input`` or ``none``."""
    labels: np.ndarray | None = None
    table: np.ndarray | None = None
    outputs: tuple[tuple[int, ...], ...] | None = None
    num_classes: int = 0

    def columns(self) -> dict[str, np.ndarray]:
        """The sample columns the pipeline reads the targets from."""
        if self.labels is not None:
            return {"label": np.asarray(self.labels, np.int32)}
        if self.table is not None:
            return {"target": np.asarray(self.table, np.float32)}
        return {}

    def rows(self) -> np.ndarray | None:
        """Every sample's target as the pipeline yields it (``float32``; ``None`` for
        ``input`` and ``none``)."""
        if self.labels is None:
            return self.table
        labels = np.asarray(self.labels, np.int64)
        if self.label_mode == "categorical":
            return np.eye(self.num_classes, dtype=np.float32)[labels]
        return labels.astype(np.float32)


@dataclass(frozen=True)
class Listing:
    """Image files with their targets and weights, in Keras' order, and the attributes Keras'
    iterators give them."""

    directory: str
    filenames: list[str]
    """Paths relative to ``directory`` (as Keras' ``filenames``)."""
    class_names: list[str]
    targets: Targets
    classes: Any = None
    """Keras' ``classes``: each file's class index (a list of them for multi-label rows)."""
    labels: Any = None
    """Keras' ``labels``: ``classes``, or the ``raw`` and ``multi_output`` targets."""
    weights: np.ndarray | None = None
    validated: bool = True
    """Whether the files are checked now (else their headers are read when first needed)."""
    rejected: dict[str, str] = field(default_factory=dict)

    @property
    def filepaths(self) -> list[str]:
        return [os.path.join(self.directory, name) for name in self.filenames]

    def samples(self, indexed: bool = False) -> Samples:
        """The files as daliaug samples (validated: extensions and headers checked, sizes
        read now; else read per batch, see :class:`HeaderSizes`); their targets, or with
        ``indexed`` their own indices (float32) as ``raw`` targets."""
        paths = self.filepaths
        index = {"target": np.arange(len(paths), dtype=np.float32)}
        columns = index if indexed else self.targets.columns()
        if not self.validated:
            files = {"path": encode_paths(paths), **columns}
            return Samples(files, self.class_names, HeaderSizes(paths), {"path": paths})  # type: ignore[arg-type]
        for path in paths:
            if not path.lower().endswith(DECODED):
                raise ValueError(
                    f"{path}: daliaug decodes JPEG and PNG files only (Keras' iterators also "
                    "list BMP, PPM and TIFF); convert it, or move it out of the folder"
                )
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
    class_mode: str | None,
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
    classes_ = np.asarray(labels, np.int32)
    targets = _class_targets(class_mode, classes_, len(names))
    return Listing(directory, filenames, names, targets, classes_, classes_)


def _class_targets(class_mode: str | None, labels: Any, num_classes: int) -> Targets:
    """The targets of a class-based ``class_mode`` (or ``input``, ``None``) for ``labels``
    (one class index per sample, or a list of them: multi-hot rows)."""
    if class_mode is None:
        return Targets("none")
    if class_mode == "input":
        return Targets("input")
    if any(isinstance(label, list) for label in labels):
        table = np.zeros((len(labels), num_classes), np.float32)
        for row, label in zip(table, labels, strict=True):
            row[label] = 1.0
        return Targets("raw", table=table, num_classes=num_classes)
    mode = "categorical" if class_mode == "categorical" else "float"
    return Targets(mode, labels=np.asarray(labels, np.int32), num_classes=num_classes)


def list_dataframe(
    dataframe: Any,
    directory: str | None,
    x_col: str,
    y_col: Any,
    weight_col: str | None,
    classes: list[str] | None,
    class_mode: str | None,
    validate_filenames: bool,
    split: float,
    subset: str | None,
) -> Listing:
    """The rows of a pandas ``dataframe`` as Keras' ``DataFrameIterator`` takes them: file
    names in ``x_col``; in ``y_col`` class names (a list of them per row: multi-label), or
    numbers (``raw``, one or a list of columns; ``multi_output``, a list of columns, one output
    each); weights in ``weight_col``; invalid files dropped with Keras' warning (unless
    ``validate_filenames`` is off), unknown classes dropped, the subset's part of the rows."""
    df = dataframe.copy()
    root = directory or ""
    _check_dataframe(df, x_col, y_col, weight_col, classes, class_mode)
    if validate_filenames:
        paths = [os.path.join(root, str(f)) for f in df[x_col]]
        valid = np.array(
            [p.lower().endswith(KERAS_FORMATS) and os.path.isfile(p) for p in paths], bool
        )
        if not valid.all():
            warnings.warn(
                f'Found {int((~valid).sum())} invalid image filename(s) in x_col="{x_col}". '
                "These filename(s) will be ignored.",
                UserWarning,
                stacklevel=3,
            )
            df = df[valid]
    with_classes = class_mode not in ("input", "multi_output", "raw", None)
    names: list[str] = []
    if with_classes:
        df, names = _filter_classes(df, y_col, classes)
    df = df.iloc[split_range(split, subset, len(df))]
    filenames = [str(f) for f in df[x_col]]
    weights = None if weight_col is None else np.asarray(df[weight_col], np.float32)
    what = "validated" if validate_filenames else "non-validated"
    belonging = f" belonging to {len(names)} classes" if with_classes else ""
    print(f"Found {len(filenames)} {what} image filenames{belonging}.")
    keras_classes: Any = None
    if class_mode == "raw":
        labels: Any = df[y_col].values
        table = np.asarray(df[y_col].values.tolist(), np.float32).reshape(len(df), -1)
        if np.ndim(labels) == 1 and table.shape[1] == 1:
            table = table[:, 0]
        targets = Targets("raw", table=table)
    elif class_mode == "multi_output":
        labels = [np.array(df[col].tolist()) for col in y_col]
        parts = [np.asarray(v, np.float32).reshape(len(df), -1) for v in labels]
        table = np.concatenate(parts, axis=1) if parts else np.zeros((len(df), 0), np.float32)
        shapes = tuple(tuple(v.shape[1:]) for v in labels)
        targets = Targets("raw", table=table, outputs=shapes)
    else:
        if with_classes:
            index = {name: i for i, name in enumerate(names)}
            keras_classes = [
                [index[c] for c in label] if isinstance(label, (list, tuple)) else index[label]
                for label in df[y_col]
            ]
        labels = keras_classes
        targets = _class_targets(class_mode, keras_classes or [], len(names))
    return Listing(
        root, filenames, names, targets, keras_classes, labels, weights, validate_filenames
    )


def _filter_classes(df: Any, y_col: str, classes: list[str] | None) -> tuple[Any, list[str]]:
    """Rows whose class (or, multi-label, any class) is among ``classes`` (the other classes
    of a multi-label row dropped), and the class names: ``classes`` as given, else the sorted
    names found."""
    if not classes:
        found: set[str] = set()
        for label in df[y_col]:
            found.update(label if isinstance(label, (list, tuple)) else [label])
        return df, sorted(found)
    names = list(dict.fromkeys(classes))

    def kept(label: Any) -> Any:
        if isinstance(label, (list, tuple)):
            return [c for c in label if c in names] or None
        return label if label in names else None

    df = df.copy()
    df[y_col] = df[y_col].apply(kept)
    return df.dropna(subset=[y_col]), names


def _check_dataframe(
    df: Any,
    x_col: str,
    y_col: Any,
    weight_col: str | None,
    classes: list[str] | None,
    class_mode: str | None,
) -> None:
    """Keras' checks of a dataframe's columns, with its messages."""
    if class_mode == "multi_output" and not isinstance(y_col, list):
        raise TypeError(
            f'If class_mode="{class_mode}", y_col must be a list. Received {type(y_col).__name__}.'
        )
    if not all(isinstance(v, str) for v in df[x_col]):
        raise TypeError(f"All values in column x_col={x_col} must be strings.")
    if class_mode in ("binary", "sparse") and not all(isinstance(v, str) for v in df[y_col]):
        raise TypeError(
            f'If class_mode="{class_mode}", y_col="{y_col}" column values must be strings.'
        )
    if class_mode == "binary":
        count = len(set(classes)) if classes else df[y_col].nunique()
        if count != 2:
            raise ValueError(f'If class_mode="binary" there must be 2 classes. Found {count}.')
    if class_mode == "categorical" and not all(
        isinstance(v, (str, list, tuple)) for v in df[y_col]
    ):
        raise TypeError(
            f'If class_mode="{class_mode}", y_col="{y_col}" column values must be type '
            "string, list or tuple."
        )
    if classes and class_mode in ("input", "multi_output", "raw", None):
        warnings.warn(
            f'`classes` will be ignored given the class_mode="{class_mode}"', stacklevel=4
        )
    if weight_col and not np.issubdtype(np.asarray(df[weight_col]).dtype, np.number):
        raise TypeError(f"Column weight_col={weight_col} must be numeric.")
