"""In-memory image arrays (uint8, or floats in [0, 1]) with integer or one-hot labels (what
``ImageDataGenerator.flow`` and keras-io's programs take)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import model_validator

from daliaug.errors import DataError, DataWarning, user_stacklevel
from daliaug.fields import ClassCount, ClassNames, FilePath
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.box_columns import box_columns


def array_samples(
    x: object,
    y: object,
    class_names: list[str] | None = None,
    raw: bool = False,
    box_format: str = "xyxy",
) -> Samples:
    """Check ``x`` (N, H, W, C) or (N, H, W) images (see :func:`image_levels`) and ``y``:
    (N,) or (N, 1) integer labels, or (N, K) one-hot rows (the class of each row's 1, of K
    classes); with ``raw``, any numbers (N, ...), passed through as float32 targets; a dict of
    ``boxes`` (in ``box_format``) and ``labels`` per image (detection, see
    :func:`~daliaug.sources.box_columns.box_columns`); or ``None``."""
    images = image_levels(x)
    sizes = np.tile(np.array(images.shape[1:3], dtype=np.int32), (len(images), 1))
    if isinstance(y, (list, tuple)) and y and all(isinstance(item, Mapping) for item in y):
        raise DataError(
            "y: detection targets are one dict of per-image lists, {'boxes': [...], 'labels': "
            "[...]} (Keras' bounding_boxes), not a list of per-image dicts"
        )
    if isinstance(y, Mapping):
        columns, names = box_columns(y, sizes, box_format, class_names)
        return Samples({"image": images, **columns}, names, sizes)
    if y is None or raw:
        return Samples({"image": images, **_targets(y, len(images))}, class_names or [], sizes)
    labels, width = class_indices(y)
    if len(labels) != len(images):
        raise DataError(f"source arrays: {len(images)} images but {len(labels)} labels")
    if width is not None and class_names and len(class_names) != width:
        raise DataError(
            f"source arrays: one-hot labels of {width} classes, but the config names "
            f"{len(class_names)} classes"
        )
    limit = len(class_names) if class_names else np.iinfo(np.int64).max
    bad = np.flatnonzero((labels < 0) | (labels >= limit))
    if bad.size:
        raise DataError(
            f"source arrays: label {labels[bad[0]]} of sample {bad[0]} is out of range"
            + (f" for {len(class_names)} classes" if class_names else "")
        )
    count = width or int(labels.max()) + 1
    names = class_names or [str(i) for i in range(count)]
    return Samples({"image": images, "label": labels.astype(np.int32)}, names, sizes)


def image_levels(x: object) -> np.ndarray:
    """``x`` as ``(N, H, W, C)`` uint8, the pipelines' 256 levels: uint8 as it is, whole
    numbers 0..255 of any dtype as they are, and floats within [0, 1] (images divided by 255,
    as Keras programs hold them) times 255, rounded (exact for ``uint8 / 255``; a warning gives
    the largest change where a value lies between two levels). Anything else is refused,
    naming the range found and the fix."""
    if not isinstance(x, np.ndarray) or x.ndim not in (3, 4) or x.dtype.kind not in "uif":
        shape = getattr(x, "shape", None)
        raise DataError(
            f"source arrays: images must be a NumPy array of numbers of shape (N, H, W, C) or "
            f"(N, H, W); got {type(x).__name__} {getattr(x, 'dtype', '')} {shape}"
        )
    if len(x) == 0:
        raise DataError("source arrays: the arrays hold no samples")
    images = x if x.ndim == 4 else x[..., None]
    if x.dtype == np.uint8:
        return np.ascontiguousarray(images)
    low, high = float(x.min()), float(x.max())
    whole = low >= 0 and high <= 255 and np.array_equal(x, np.rint(x))
    if whole and not (x.dtype.kind == "f" and high <= 1):
        return np.ascontiguousarray(images, dtype=np.uint8)
    if not (x.dtype.kind == "f" and low >= 0 and high <= 1):
        raise DataError(
            f"source arrays: images hold {x.dtype} values {low:g}..{high:g}; daliaug takes uint8 "
            "(0..255) or floats in [0, 1] (images / 255): for -1..1 pass "
            "((x + 1) * 127.5).round().astype('uint8')"
        )
    scaled = images.astype(np.float64) * 255
    levels = np.rint(scaled)
    change = float(np.abs(levels - scaled).max()) / 255
    if change > 1e-6:
        warnings.warn(
            f"source arrays: image values fall between the 256 levels daliaug computes on; each "
            f"is rounded to the nearest level of 1/255, a change of at most {change:.3g}",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    return np.ascontiguousarray(levels, dtype=np.uint8)


def class_indices(y: object) -> tuple[np.ndarray, int | None]:
    """``y``'s class indices, and the number of classes where ``y`` is one-hot ``(N, K)``."""
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 2 and np.issubdtype(labels.dtype, np.number):
        hot = labels == 1
        if np.all(hot | (labels == 0)) and np.all(hot.sum(1) == 1):
            return hot.argmax(1), labels.shape[1]
        raise DataError(
            f"source arrays: labels of shape {labels.shape} are not one-hot rows (one 1, the "
            "rest 0); soft targets go through label_mode: raw"
        )
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"source arrays: labels must be integers of shape (N,) or (N, 1), or one-hot rows "
            f"(N, K); got {labels.dtype} {labels.shape}"
        )
    return labels, None


def _targets(y: object, count: int) -> dict[str, np.ndarray]:
    """``y`` as a float32 ``target`` column of ``count`` rows (none for ``None``)."""
    if y is None:
        return {}
    target = np.asarray(y)
    if not np.issubdtype(target.dtype, np.number) or target.ndim not in (1, 2):
        raise DataError(
            f"source arrays: targets must be numbers of shape (N,) or (N, K); got "
            f"{target.dtype} {target.shape}"
        )
    if len(target) != count:
        raise DataError(f"source arrays: {count} images but {len(target)} targets")
    return {"target": np.ascontiguousarray(target, dtype=np.float32)}


class ArraysSource(SourceConfig):
    """Images ``(N, H, W, C)`` held in memory, uint8 or floats in [0, 1] (the pipelines
    compute on 0..255 either way: the output's normalization, such as ``rescale: 1/255``, gives
    what leaves), and integer labels or one-hot rows.

    From Python: ``make_dataset(config, x=images, y=labels)`` (or ``DaliLoader``); in a config
    file: ``path`` to an ``.npz`` holding them under ``images_key`` and ``labels_key`` (and,
    optionally, the class names under ``class_names``). DALI
    receives whole batches gathered with NumPy/TensorFlow indexing: no per-sample Python loop.

    The classes are ``class_names``, else ``num_classes`` numbered ones, else those the
    ``.npz`` names, else ``0..max(y)``. Fix them (``num_classes`` or ``class_names``) wherever
    two array sets must agree, such as training and validation: the one-hot width of
    ``label_mode: categorical`` is the number of classes, and a validation set without the
    last class would otherwise get a narrower one. A label outside the classes is an error.
    """

    type: Literal["arrays"] = "arrays"
    path: FilePath | None = None
    images_key: str = "x"
    labels_key: str = "y"
    class_names: ClassNames | None = None
    num_classes: ClassCount | None = None
    boxes: bool = False
    """The targets are boxes: ``y`` is Keras' ``{"boxes", "labels"}`` dict (set by
    ``make_dataset`` when given one)."""

    @property
    def detection(self) -> bool:
        return self.boxes

    @model_validator(mode="after")
    def _names_fit_count(self) -> ArraysSource:
        if self.class_names and self.num_classes and len(self.class_names) != self.num_classes:
            raise ValueError(
                f"class_names lists {len(self.class_names)} names for num_classes "
                f"{self.num_classes}"
            )
        return self

    @property
    def classes(self) -> list[str] | None:
        """The class names the config fixes: ``class_names``, else ``num_classes`` numbered
        ones, else none (the arrays' labels decide)."""
        if self.class_names:
            return list(self.class_names)
        return [str(i) for i in range(self.num_classes)] if self.num_classes else None

    def list_samples(self) -> Samples:
        if self.path is None:
            raise DataError(
                "source.path: an arrays source needs an .npz file here; from Python pass the "
                "arrays instead: make_dataset(config, x=images, y=labels)"
            )
        try:
            with np.load(self.path.expanduser()) as data:
                missing = {self.images_key, self.labels_key} - set(data.files)
                if missing:
                    raise DataError(
                        f"source.path: {self.path} has no {sorted(missing)} (it holds {data.files})"
                    )
                x, y = data[self.images_key], data[self.labels_key]
                stored = [str(n) for n in data["class_names"]] if "class_names" in data else None
        except (OSError, ValueError) as e:
            raise DataError(f"source.path: cannot read arrays from {self.path}: {e}") from e
        if not self.class_names and stored and self.num_classes and len(stored) != self.num_classes:
            raise DataError(
                f"source.num_classes: {self.num_classes}, but {self.path} names {len(stored)} "
                "classes"
            )
        return array_samples(x, y, self.class_names or stored or self.classes)
