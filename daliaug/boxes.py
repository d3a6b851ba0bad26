"""Bounding boxes and keypoints: Keras' box formats, and the targets of a batch moved by the
sample's own maps on the host (NumPy), identically for every engine.

Inside daliaug a box is absolute ``xyxy`` in pixel-corner coordinates (the whole image is
``[0, W] x [0, H]``), the coordinates the plan's warp maps; keypoints are ``(x, y, visible)``
in the same coordinates. Users give and get boxes in any of Keras' formats
(:data:`FORMATS`, ``bounding_box_format``).

Example::

    >>> import numpy as np
    >>> to_xyxy(np.array([[10.0, 20.0, 30.0, 40.0]]), "xywh", (100, 200))
    array([[10., 20., 40., 60.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

BoxFormat = Literal[
    "xyxy",
    "yxyx",
    "xywh",
    "center_xywh",
    "center_yxhw",
    "rel_xyxy",
    "rel_yxyx",
    "rel_xywh",
    "rel_center_xywh",
    "rel_center_yxhw",
]
FORMATS: tuple[str, ...] = BoxFormat.__args__  # type: ignore[attr-defined]
"""Every format Keras' ``bounding_box_format`` names, and ``rel_center_yxhw`` (which Keras 3.15's
converter leaves out)."""

PAD = -1.0
"""What pads the boxes, labels and keypoints past each image's own (Keras'
``MaxNumBoundingBoxes``)."""


def _absolute(boxes: np.ndarray, fmt: str, size: tuple[float, float], to: bool) -> np.ndarray:
    """``boxes`` in ``fmt`` scaled to absolute pixels (``to``) or from them, for ``rel_``."""
    if not fmt.startswith("rel_"):
        return boxes
    h, w = size
    y_first = fmt in ("rel_yxyx", "rel_center_yxhw")
    scale = np.array([h, w, h, w] if y_first else [w, h, w, h], np.float32)
    return boxes * scale if to else boxes / scale


def to_xyxy(boxes: np.ndarray, fmt: str, size: tuple[float, float]) -> np.ndarray:
    """``boxes`` (``(..., 4)``) given in Keras format ``fmt`` on an image of ``size`` (height,
    width) as absolute ``xyxy`` (float32)."""
    b = _absolute(np.asarray(boxes, np.float32), fmt, size, to=True)
    base = fmt.removeprefix("rel_")
    a0, a1, a2, a3 = np.moveaxis(b, -1, 0)
    if base == "xyxy":
        x0, y0, x1, y1 = a0, a1, a2, a3
    elif base == "yxyx":
        y0, x0, y1, x1 = a0, a1, a2, a3
    elif base == "xywh":
        x0, y0, x1, y1 = a0, a1, a0 + a2, a1 + a3
    elif base == "center_xywh":
        x0, y0, x1, y1 = a0 - a2 / 2, a1 - a3 / 2, a0 + a2 / 2, a1 + a3 / 2
    else:  # center_yxhw
        x0, y0, x1, y1 = a1 - a3 / 2, a0 - a2 / 2, a1 + a3 / 2, a0 + a2 / 2
    return np.stack([x0, y0, x1, y1], axis=-1).astype(np.float32)


def from_xyxy(boxes: np.ndarray, fmt: str, size: tuple[float, float]) -> np.ndarray:
    """Absolute ``xyxy`` ``boxes`` in Keras format ``fmt`` on an image of ``size``."""
    x0, y0, x1, y1 = np.moveaxis(np.asarray(boxes, np.float32), -1, 0)
    base = fmt.removeprefix("rel_")
    w, h = x1 - x0, y1 - y0
    parts = {
        "xyxy": (x0, y0, x1, y1),
        "yxyx": (y0, x0, y1, x1),
        "xywh": (x0, y0, w, h),
        "center_xywh": (x0 + w / 2, y0 + h / 2, w, h),
        "center_yxhw": (y0 + h / 2, x0 + w / 2, h, w),
    }[base]
    return _absolute(np.stack(parts, axis=-1), fmt, size, to=False).astype(np.float32)


PointMap = Callable[[np.ndarray], np.ndarray]
"""A batch's map of points: ``(B, N, 2)`` source ``(x, y)`` to output ``(x, y)``."""


@dataclass(frozen=True)
class Rules:
    """What a moved box must keep to stay (torchvision's ``SanitizeBoundingBoxes``,
    Albumentations' ``min_visibility``): ``min_area`` pixels of its visible part and
    ``min_visibility`` of its moved area; a box with no visible area always goes."""

    min_area: float = 0.0
    min_visibility: float = 0.0
    flip_indices: tuple[int, ...] | None = None
    """Keypoint ``k`` becomes keypoint ``flip_indices[k]`` where the map mirrors the image."""


@dataclass(frozen=True)
class Targets:
    """A batch's detection targets, padded to ``N`` per image with :data:`PAD`: ``boxes``
    ``(B, N, 4)`` absolute ``xyxy``, ``labels`` ``(B, N)`` int32, ``keypoints`` ``(B, N, K,
    3)`` or ``None``; ``count`` ``(B,)``: each image's real boxes (first in its rows)."""

    boxes: np.ndarray
    labels: np.ndarray
    keypoints: np.ndarray | None
    count: np.ndarray

    @staticmethod
    def of(
        boxes: list[np.ndarray],
        labels: list[np.ndarray],
        keypoints: list[np.ndarray] | None,
        keypoint_count: int = 0,
    ) -> Targets:
        """The padded targets of per-image ragged lists (``keypoint_count`` per box)."""
        count = np.array([len(b) for b in boxes], np.int64)
        n = max(int(count.max(initial=0)), 1)
        out_boxes = np.full((len(boxes), n, 4), PAD, np.float32)
        out_labels = np.full((len(boxes), n), PAD, np.int32)
        points = None
        if keypoints is not None:
            points = np.full((len(boxes), n, keypoint_count, 3), PAD, np.float32)
        for i, c in enumerate(count):
            out_boxes[i, :c] = boxes[i]
            out_labels[i, :c] = labels[i]
            if points is not None and c:
                points[i, :c] = keypoints[i]  # type: ignore[index]
        return Targets(out_boxes, out_labels, points, count)

    @property
    def real(self) -> np.ndarray:
        """``(B, N)``: whether each row is one of the image's real boxes."""
        return np.arange(self.boxes.shape[1]) < self.count[:, None]

    def moved(
        self,
        points: PointMap,
        size: tuple[int, int],
        mirrored: np.ndarray,
        rules: Rules,
        window: np.ndarray | None = None,
    ):
        """The targets through the batch's map ``points`` onto outputs of ``size`` (height,
        width): each box the enclosing box of its moved corners, clipped to the output (or to
        each image's ``window``, ``(B, 4)`` ``xyxy`` within it) and kept by ``rules`` (the kept
        ones first, in their order); keypoints moved, invisible outside the output (the
        window), swapped by ``rules.flip_indices`` where ``mirrored`` (per image)."""
        b, n = self.boxes.shape[:2]
        if window is None:
            window = np.tile(np.array([0.0, 0.0, size[1], size[0]], np.float32), (b, 1))
        start, stop = window[:, None, :2], window[:, None, 2:]
        x0, y0, x1, y1 = np.moveaxis(self.boxes, -1, 0)
        corners = np.stack(
            [np.stack([x, y], -1) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))], 2
        )
        moved = points(corners.reshape(b, n * 4, 2)).reshape(b, n, 4, 2)
        low, high = moved.min(axis=2), moved.max(axis=2)
        area = np.prod(high - low, axis=-1)
        clipped_low = np.clip(low, start, stop)
        clipped_high = np.clip(high, start, stop)
        visible = np.prod(np.maximum(clipped_high - clipped_low, 0.0), axis=-1)
        keep = self.real & (visible > 0) & (visible >= rules.min_area)
        keep &= visible >= rules.min_visibility * area
        boxes = np.concatenate([clipped_low, clipped_high], axis=-1).astype(np.float32)
        keypoints = None
        if self.keypoints is not None:
            keypoints = self._moved_keypoints(points, window, mirrored, rules)
        return self._kept(boxes, keep, keypoints)

    def _moved_keypoints(
        self, points: PointMap, window: np.ndarray, mirrored: np.ndarray, rules: Rules
    ) -> np.ndarray:
        kp = self.keypoints
        assert kp is not None
        b, n, k = kp.shape[:3]
        xy = points(kp[..., :2].reshape(b, n * k, 2)).reshape(b, n, k, 2)
        start, stop = window[:, None, None, :2], window[:, None, None, 2:]
        inside = ((xy >= start) & (xy < stop)).all(axis=-1)
        shown = np.where(inside & (kp[..., 2] > 0), 1.0, 0.0)
        out = np.concatenate([xy, shown[..., None]], axis=-1).astype(np.float32)
        if rules.flip_indices is not None and mirrored.any():
            swapped = out[:, :, list(rules.flip_indices)]
            out = np.where(mirrored[:, None, None, None], swapped, out)
        return out

    def _kept(self, boxes: np.ndarray, keep: np.ndarray, keypoints: np.ndarray | None) -> Targets:
        order = np.argsort(~keep, axis=1, kind="stable")
        count = keep.sum(axis=1)
        rows = np.arange(len(boxes))[:, None]
        real = np.arange(boxes.shape[1]) < count[:, None]
        boxes = np.where(real[..., None], boxes[rows, order], PAD)
        labels = np.where(real, self.labels[rows, order], int(PAD)).astype(np.int32)
        if keypoints is not None:
            keypoints = np.where(real[..., None, None], keypoints[rows, order], PAD)
        return Targets(boxes.astype(np.float32), labels, keypoints, count)

    def joined(self, other: Targets) -> Targets:
        """Each image's targets followed by ``other``'s at the same position (Keras' ``MixUp``
        keeps both images' boxes)."""
        per_image = [
            (
                np.concatenate([a.boxes[i, : a.count[i]] for a in (self, other)]),
                np.concatenate([a.labels[i, : a.count[i]] for a in (self, other)]),
                None
                if self.keypoints is None
                else np.concatenate([a.keypoints[i, : a.count[i]] for a in (self, other)]),
            )  # type: ignore[index]
            for i in range(len(self.count))
        ]
        boxes, labels, points = zip(*per_image, strict=True) if per_image else ((), (), ())
        if self.keypoints is None:
            return Targets.of(list(boxes), list(labels), None)
        return Targets.of(list(boxes), list(labels), list(points), self.keypoints.shape[2])

    def gather(self, index: np.ndarray) -> Targets:
        """The targets of the images at ``index``."""
        kp = None if self.keypoints is None else self.keypoints[index]
        return Targets(self.boxes[index], self.labels[index], kp, self.count[index])

    def padded(self, max_boxes: int, fmt: str, size: tuple[int, int]) -> dict[str, np.ndarray]:
        """The graph's inputs: ``boxes`` ``(B, max_boxes, 4)`` in ``fmt`` on outputs of
        ``size``, ``box_labels`` ``(B, max_boxes)``, ``keypoints`` (absolute, or relative with
        a ``rel_`` format), padded with :data:`PAD` (cut to ``max_boxes``: the caller warns)."""
        b, n = self.labels.shape
        cut = min(n, max_boxes)
        boxes = np.full((b, max_boxes, 4), PAD, np.float32)
        labels = np.full((b, max_boxes), int(PAD), np.int32)
        real = self.real[:, :cut]
        converted = from_xyxy(self.boxes[:, :cut], fmt, size)
        boxes[:, :cut] = np.where(real[..., None], converted, PAD)
        labels[:, :cut] = self.labels[:, :cut]
        out = {"boxes": boxes, "box_labels": labels}
        if self.keypoints is not None:
            k = self.keypoints.shape[2]
            points = np.full((b, max_boxes, k, 3), PAD, np.float32)
            kp = self.keypoints[:, :cut].copy()
            if fmt.startswith("rel_"):
                kp[..., :2] /= np.array([size[1], size[0]], np.float32)
            points[:, :cut] = np.where(real[..., None, None], kp, PAD)
            out["keypoints"] = points
        return out
