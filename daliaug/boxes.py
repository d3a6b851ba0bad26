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
from functools import reduce
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


def corners(boxes: np.ndarray) -> np.ndarray:
    """The four corners ``(..., 4, 2)`` of ``xyxy`` ``boxes``, in order round the box."""
    x0, y0, x1, y1 = np.moveaxis(boxes, -1, 0)
    return np.stack([np.stack([x, y], -1) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))], -2)


def clip_outline(outline: np.ndarray, axis: int, bound: np.ndarray, above: bool) -> np.ndarray:
    """Convex outlines ``(..., V, 2)`` (vertices in order; repeats allowed) cut to the side
    of the line ``x[axis] = bound`` (``bound`` broadcasts to ``(...)``) where ``x[axis] >=
    bound`` (``above``) or ``<=``: Sutherland and Hodgman's clip, one more vertex at most,
    ``(..., V + 1, 2)``; an outline wholly on the other side becomes NaN."""
    v = outline[..., axis]
    inside = v >= bound if above else v <= bound
    after = np.roll(outline, -1, axis=-2)
    inside_after = np.roll(inside, -1, axis=-1)
    step = after[..., axis] - v
    t = np.divide(bound - v, step, out=np.zeros_like(v), where=step != 0)
    crossing = outline + t[..., None] * (after - outline)
    crossing[..., axis] = bound
    emitted = np.stack([np.where(inside[..., None], outline, crossing), crossing], -2)
    valid = np.stack([inside | inside_after, inside & ~inside_after], -1)
    count = outline.shape[-2] + 1
    emitted = emitted.reshape(*outline.shape[:-2], 2 * outline.shape[-2], 2)
    valid = valid.reshape(*valid.shape[:-2], -1)
    order = np.argsort(~valid, axis=-1, kind="stable")[..., :count]
    emitted = np.take_along_axis(emitted, order[..., None], axis=-2)
    kept = valid.sum(axis=-1, keepdims=True)
    last = np.minimum(np.arange(count), np.maximum(kept - 1, 0))  # repeat the last vertex
    out = np.take_along_axis(emitted, last[..., None], axis=-2)
    return np.where(kept[..., None] > 0, out, np.nan)


def _area(sides: np.ndarray) -> np.ndarray:
    """Width times height of ``(..., 2)`` sides."""
    return sides[..., 0] * sides[..., 1]


@dataclass(frozen=True)
class PointMap:
    """A batch's map of points, ``move``: ``(B, N, 2)`` source ``(x, y)`` to output ``(x, y)``
    (``float32``). ``axis_aligned``: each output ``x`` depends on the source ``x`` alone and each
    ``y`` on the source ``y`` alone (a scale, flip or shift per image), so that a box stays a
    rectangle and its two corners say where it lands (:meth:`Targets.moved`)."""

    move: Callable[[np.ndarray], np.ndarray]
    axis_aligned: bool = False

    def __call__(self, xy: np.ndarray) -> np.ndarray:
        return self.move(xy)


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
    shown: np.ndarray | None = None
    """``(B, N)``: the share of each box's area still shown after the boundaries it has
    crossed (:meth:`moved`); ``None``: all of it."""
    outline: np.ndarray | None = None
    """``(B, N, V, 2)``: each box's object as the convex outline it has become (its moved
    corners, cut by each boundary), which the next map moves, so that a box stays its
    object's extent however many boundaries it crosses; ``None``: the boxes' own corners."""

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
    ) -> Targets:
        """The targets through the batch's map ``points`` onto outputs of ``size`` (height,
        width): each box the enclosing box of its moved :attr:`outline`, clipped to the output
        (or to each image's ``window``, ``(B, 4)`` ``xyxy`` within it), as Keras and
        torchvision clip, and kept by ``rules`` while some of its outline is inside (the kept
        ones first, in their order; the outline cut to the window for the next map);
        keypoints moved, invisible outside the output (the window), swapped by
        ``rules.flip_indices`` where ``mirrored`` (per image).

        Where the boxes are their own outlines and ``points`` is axis-aligned, each box moves
        as its two corners and stays a rectangle, its clipped box the outline it becomes: the
        same boxes, decisions and keypoints as the outline's four corners moved and cut
        (``tests/test_boxes.py``), without cutting them."""
        b, n = self.boxes.shape[:2]
        if window is None:
            window = np.tile(np.array([0.0, 0.0, size[1], size[0]], np.float32), (b, 1))
        rectangles = self.outline is None and points.axis_aligned
        if rectangles:  # its two corners say where a box lands
            outline = self.boxes.reshape(b, n, 2, 2)
        else:
            outline = corners(self.boxes) if self.outline is None else self.outline
        v = outline.shape[2]
        moved = points(outline.reshape(b, n * v, 2)).reshape(b, n, v, 2)
        vertices = [moved[:, :, k] for k in range(v)]  # NumPy reduces a short axis slowly
        low, high = reduce(np.minimum, vertices), reduce(np.maximum, vertices)
        area = _area(high - low)
        start, stop = window[:, None, :2], window[:, None, 2:]
        low, high = np.clip(low, start, stop), np.clip(high, start, stop)
        visible = _area(np.maximum(high - low, 0.0))
        shown = visible if self.shown is None else visible * self.shown
        keep = self.real & (visible > 0) & (visible >= rules.min_area)
        keep &= shown >= rules.min_visibility * area
        cut = None  # a kept rectangle has area inside: its clipped box is its outline now
        if not rectangles:
            cut = self._cut(moved, window)
            keep &= np.isfinite(cut[:, :, 0, 0])  # some of the object is inside
        boxes = np.concatenate([low, high], axis=-1).astype(np.float32)
        keypoints = None
        if self.keypoints is not None:
            keypoints = self._moved_keypoints(points, window, mirrored, rules)
        share = np.divide(shown, area, out=np.zeros_like(area), where=area > 0)
        return self._kept(boxes, keep, keypoints, share, cut)

    @staticmethod
    def _cut(outline: np.ndarray, window: np.ndarray) -> np.ndarray:
        """Moved outlines ``(B, N, V, 2)`` cut by each side of each image's ``window`` in
        turn (NaN where wholly outside)."""
        for axis in (0, 1):
            outline = clip_outline(outline, axis, window[:, None, None, axis], above=True)
            outline = clip_outline(outline, axis, window[:, None, None, 2 + axis], above=False)
        return outline

    def through(
        self, maps: list[PointMap], size: tuple[int, int], mirrored: np.ndarray, rules: Rules
    ) -> Targets:
        """The targets through each of ``maps`` in turn (:meth:`moved`), each a stage
        boundary: what leaves the output after one is gone for the next (its box clipped,
        its keypoints invisible); ``mirrored`` is the first map's (the fused warp's)."""
        targets = self
        for k, points in enumerate(maps):
            turned = mirrored if k == 0 else np.zeros_like(mirrored)
            targets = targets.moved(points, size, turned, rules)
        return targets

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

    def _kept(
        self,
        boxes: np.ndarray,
        keep: np.ndarray,
        keypoints: np.ndarray | None,
        shown: np.ndarray,
        outline: np.ndarray | None,
    ) -> Targets:
        i, j = np.nonzero(keep)
        slot = (np.cumsum(keep, axis=1) - 1)[i, j]  # the kept rows first, in their order

        def packed(values: np.ndarray, pad: float) -> np.ndarray:
            out = np.full_like(values, pad)
            out[i, slot] = values[i, j]
            return out

        return Targets(
            packed(boxes, PAD),
            packed(self.labels, PAD),
            None if keypoints is None else packed(keypoints, PAD),
            keep.sum(axis=1),
            packed(shown, 0.0),
            None if outline is None else packed(outline, np.nan),
        )

    def joined(self, other: Targets) -> Targets:
        """Each image's targets followed by ``other``'s at the same position (Keras' ``MixUp``
        keeps both images' boxes)."""
        count = self.count + other.count
        width = max(int(count.max(initial=0)), 1)
        i, j = np.nonzero(self.real)
        k, m = np.nonzero(other.real)

        def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            out = np.full((len(count), width, *a.shape[2:]), PAD, a.dtype)
            out[i, j] = a[i, j]
            out[k, self.count[k] + m] = b[k, m]  # after the image's own rows
            return out

        points = None
        if self.keypoints is not None and other.keypoints is not None:
            points = join(self.keypoints, other.keypoints)
        return Targets(
            join(self.boxes, other.boxes), join(self.labels, other.labels), points, count
        )

    def gather(self, index: np.ndarray) -> Targets:
        """The targets of the images at ``index``."""
        kp = None if self.keypoints is None else self.keypoints[index]
        shown = None if self.shown is None else self.shown[index]
        outline = None if self.outline is None else self.outline[index]
        return Targets(self.boxes[index], self.labels[index], kp, self.count[index], shown, outline)

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
