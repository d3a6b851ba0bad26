"""Boxes given per image (Keras' ``{"boxes", "labels"}`` dict, ragged lists or padded arrays)
as the detection columns of samples: absolute ``xyxy`` per image (see :mod:`daliaug.boxes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from daliaug.boxes import PAD, to_xyxy
from daliaug.errors import DataError


def _ragged(values: object, count: int, what: str) -> list[np.ndarray]:
    """``values`` as one array per image: a padded array's rows, or a list's items."""
    try:
        items = list(values)  # type: ignore[call-overload]
    except TypeError:
        raise DataError(
            f"y[{what!r}] must hold one entry per image, not a {type(values).__name__}"
        ) from None
    if len(items) != count:
        raise DataError(f"source arrays: {count} images but {len(items)} entries in y[{what!r}]")
    arrays = [np.asarray(item) for item in items]
    for i, array in enumerate(arrays):
        finite = array.dtype.kind in "biu" or (array.dtype.kind == "f" and np.isfinite(array).all())
        if not finite:
            shown = str(array.tolist())[:100] if array.dtype.kind != "O" else "ragged lists"
            hint = " (a missing keypoint is (0, 0, 0): visibility 0)" if what == "keypoints" else ""
            raise DataError(
                f"y[{what!r}]: image {i} holds {array.dtype} values {shown}, not finite "
                f"numbers{hint}"
            )
    return arrays


def box_columns(
    y: Mapping[str, object], sizes: np.ndarray, fmt: str, names: Sequence[str] | None = None
) -> tuple[dict[str, np.ndarray], list[str]]:
    """The ``boxes``, ``box_labels`` (and ``keypoints``) columns of ``y`` (``boxes`` in Keras
    format ``fmt`` on images of ``sizes``, ``labels`` class indices; rows labelled -1 are
    padding and left out) and the class names (``names``, else ``0..max``). A box of
    non-positive size or outside its image, or a label out of range: a :class:`DataError`
    naming the image and the box."""
    unknown = set(y) - {"boxes", "labels", "keypoints"}
    if unknown or not {"boxes", "labels"} <= set(y):
        raise DataError(
            f"y: detection targets are a dict with 'boxes' and 'labels' (and optionally "
            f"'keypoints'), as Keras' bounding_boxes; got keys {sorted(y)}"
        )
    count = len(sizes)
    boxes = _ragged(y["boxes"], count, "boxes")
    labels = _ragged(y["labels"], count, "labels")
    points = _ragged(y["keypoints"], count, "keypoints") if "keypoints" in y else None
    out_boxes, out_labels, out_points = [], [], []
    for i, (b, lab) in enumerate(zip(boxes, labels, strict=True)):
        b = b.reshape(-1, 4) if b.size == 0 else b
        if b.ndim != 2 or b.shape[1] != 4 or lab.shape != b.shape[:1]:
            raise DataError(
                f"y: image {i} has boxes of shape {b.shape} and labels of shape {lab.shape}; "
                "give (n, 4) boxes and (n,) labels"
            )
        if (lab != np.round(lab)).any() or ((lab < 0) & (lab != PAD)).any():
            raise DataError(
                f"y['labels']: image {i} has labels {lab.tolist()[:10]}; a label is a class "
                f"index 0, 1, ... (or {PAD:g} for a padding row)"
            )
        real = lab != PAD
        h, w = (float(v) for v in sizes[i])
        xyxy = to_xyxy(b[real], fmt, (h, w))
        _check(xyxy, i, (h, w), fmt)
        out_boxes.append(xyxy)
        out_labels.append(lab[real].astype(np.int32))
        if points is not None:
            out_points.append(_keypoints(points[i], real, fmt, (h, w), i))
    every = np.concatenate([np.zeros(0, np.int32), *out_labels])
    limit = len(names) if names else np.iinfo(np.int32).max
    bad = every[every >= limit]  # negative ones are refused above
    if bad.size:
        raise DataError(f"y['labels']: class {bad[0]} is out of range for {limit} classes")
    names = list(names) if names else [str(k) for k in range(int(every.max(initial=0)) + 1)]
    columns = {"boxes": _objects(out_boxes), "box_labels": _objects(out_labels)}
    if points is not None:
        columns["keypoints"] = _objects(out_points)
    return columns, names


def _check(xyxy: np.ndarray, image: int, size: tuple[float, float], fmt: str) -> None:
    h, w = size
    flat = (xyxy[:, 2] <= xyxy[:, 0]) | (xyxy[:, 3] <= xyxy[:, 1])
    outside = (xyxy[:, :2] < -1).any(1) | (xyxy[:, 2] > w + 1) | (xyxy[:, 3] > h + 1)
    for k in np.flatnonzero(flat | outside)[:1]:
        why = "has no area" if flat[k] else f"lies outside the {w:g}x{h:g} image"
        raise DataError(
            f"y['boxes']: box {k} of image {image} {xyxy[k].tolist()} (xyxy from {fmt}) {why}"
        )


def _keypoints(
    points: np.ndarray, real: np.ndarray, fmt: str, size: tuple[float, float], image: int
) -> np.ndarray:
    """One image's keypoints ``(n, K, 2 or 3)`` as absolute ``(x, y, visible)``."""
    if points.ndim != 3 or points.shape[0] != len(real) or points.shape[2] not in (2, 3):
        raise DataError(
            f"y['keypoints']: image {image} has keypoints of shape {points.shape}; give "
            f"({len(real)}, K, 2 or 3) per image, (x, y[, visible])"
        )
    kp = points[real].astype(np.float32)
    if kp.shape[2] == 2:
        kp = np.concatenate([kp, np.ones((*kp.shape[:2], 1), np.float32)], axis=-1)
    if fmt.startswith("rel_"):
        kp[..., :2] *= np.array([size[1], size[0]], np.float32)
    return kp


def _objects(arrays: list[np.ndarray]) -> np.ndarray:
    """One array per sample as a NumPy column (an object array indexes like any column)."""
    out = np.empty(len(arrays), dtype=object)
    out[:] = arrays
    return out
