"""In-memory uint8 image arrays with integer labels (what ``ImageDataGenerator.flow`` took)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import model_validator

from daliaug.errors import DataError
from daliaug.fields import ClassCount, ClassNames, FilePath
from daliaug.sources.base import Samples, SourceConfig


def array_samples(
    x: object, y: object, class_names: list[str] | None = None, raw: bool = False
) -> Samples:
    """Check ``x`` (N, H, W, C) or (N, H, W) uint8 and ``y``: (N,) or (N, 1) integer labels;
    with ``raw``, any numbers (N, ...), passed through as float32 targets; or ``None``."""
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim not in (3, 4):
        shape = getattr(x, "shape", None)
        raise DataError(
            f"source arrays: images must be a uint8 NumPy array of shape (N, H, W, C) or "
            f"(N, H, W); got {type(x).__name__} {getattr(x, 'dtype', '')} {shape}"
        )
    images = np.ascontiguousarray(x if x.ndim == 4 else x[..., None])
    if len(images) == 0:
        raise DataError("source arrays: the arrays hold no samples")
    sizes = np.tile(np.array(images.shape[1:3], dtype=np.int32), (len(images), 1))
    if y is None or raw:
        return Samples({"image": images, **_targets(y, len(images))}, class_names or [], sizes)
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"source arrays: labels must be integers of shape (N,) or (N, 1); got "
            f"{labels.dtype} {labels.shape} (one-hot labels: pass labels.argmax(1))"
        )
    if len(labels) != len(images):
        raise DataError(f"source arrays: {len(images)} images but {len(labels)} labels")
    limit = len(class_names) if class_names else np.iinfo(np.int64).max
    bad = np.flatnonzero((labels < 0) | (labels >= limit))
    if bad.size:
        raise DataError(
            f"source arrays: label {labels[bad[0]]} of sample {bad[0]} is out of range"
            + (f" for {len(class_names)} classes" if class_names else "")
        )
    names = class_names or [str(i) for i in range(int(labels.max()) + 1)]
    return Samples({"image": images, "label": labels.astype(np.int32)}, names, sizes)


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
    """uint8 images ``(N, H, W, C)`` and integer labels held in memory.

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
