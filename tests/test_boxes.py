"""Box formats against Keras' own ``keras.utils.bounding_boxes.convert_format`` (every format
in and out, the ``rel_`` ones with an image's height and width), and the padding and
sanitizing of :class:`daliaug.boxes.Targets` (``min_area``, ``min_visibility``, clipping,
``flip_indices``, ``MaxNumBoundingBoxes``' -1 padding)."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daliaug.boxes import FORMATS, PAD, PointMap, Rules, Targets, from_xyxy, to_xyxy

SIZE = (48, 80)
"""Height, width: unequal, so that a ``rel_`` format mixing them up is caught."""
XYXY = np.array([[3.0, 5.0, 40.0, 30.0], [0.0, 0.0, 80.0, 48.0], [61.5, 7.25, 79.0, 47.5]])


def keras_convert(boxes: np.ndarray, source: str, target: str) -> np.ndarray:
    h, w = SIZE
    out = keras.utils.bounding_boxes.convert_format(boxes, source, target, height=h, width=w)
    return np.asarray(out, np.float64)


def test_every_keras_format_is_named() -> None:
    # Keras' own list of formats (its converter accepts these names and no others); daliaug
    # adds the one Keras leaves out, rel_center_yxhw (checked below against Keras by parts)
    from keras.src.layers.preprocessing.image_preprocessing.bounding_boxes import bounding_box

    assert set(FORMATS) == {*bounding_box.SUPPORTED_FORMATS, "rel_center_yxhw"}


KERAS_FORMATS = [f for f in FORMATS if f != "rel_center_yxhw"]


def test_rel_center_yxhw_is_center_yxhw_over_the_size() -> None:
    absolute = keras_convert(XYXY, "xyxy", "center_yxhw")
    h, w = SIZE
    expected = absolute / np.array([h, w, h, w])
    np.testing.assert_allclose(from_xyxy(XYXY, "rel_center_yxhw", SIZE), expected, atol=1e-6)
    np.testing.assert_allclose(to_xyxy(expected, "rel_center_yxhw", SIZE), XYXY, atol=1e-4)


@pytest.mark.parametrize("fmt", KERAS_FORMATS)
def test_out_of_xyxy_as_keras(fmt: str) -> None:
    ours = from_xyxy(XYXY, fmt, SIZE)
    np.testing.assert_allclose(ours, keras_convert(XYXY, "xyxy", fmt), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("fmt", KERAS_FORMATS)
def test_into_xyxy_as_keras(fmt: str) -> None:
    given = keras_convert(XYXY, "xyxy", fmt)
    ours = to_xyxy(given, fmt, SIZE)
    np.testing.assert_allclose(ours, keras_convert(given, fmt, "xyxy"), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(ours, XYXY, atol=1e-4)


@pytest.mark.parametrize(("source", "target"), list(itertools.permutations(KERAS_FORMATS, 2)))
def test_format_to_format_as_keras(source: str, target: str) -> None:
    given = keras_convert(XYXY, "xyxy", source)
    ours = from_xyxy(to_xyxy(given, source, SIZE), target, SIZE)
    np.testing.assert_allclose(ours, keras_convert(given, source, target), atol=1e-4)


def test_relative_formats_scale_by_width_and_height() -> None:
    rel = from_xyxy(np.array([[8.0, 12.0, 40.0, 24.0]]), "rel_yxyx", SIZE)
    np.testing.assert_allclose(rel, [[12 / 48, 8 / 80, 24 / 48, 40 / 80]])
    np.testing.assert_allclose(to_xyxy(rel, "rel_yxyx", SIZE), [[8.0, 12.0, 40.0, 24.0]])


def test_formats_keep_leading_axes() -> None:
    batch = np.stack([XYXY, XYXY[::-1]])
    out = from_xyxy(batch, "center_yxhw", SIZE)
    assert out.shape == batch.shape and out.dtype == np.float32
    np.testing.assert_allclose(to_xyxy(out, "center_yxhw", SIZE), batch, atol=1e-5)


identity = PointMap(lambda xy: xy.astype(np.float32))


def shifted(dx: float, dy: float) -> PointMap:
    return PointMap(lambda xy: (xy + np.array([dx, dy])).astype(np.float32))


def targets(boxes: list[list[list[float]]], keypoints: np.ndarray | None = None) -> Targets:
    labels = [np.arange(len(b)) + 10 * i for i, b in enumerate(boxes)]
    arrays = [np.asarray(b, np.float32).reshape(-1, 4) for b in boxes]
    points = None if keypoints is None else list(keypoints)
    k = 0 if keypoints is None else keypoints.shape[2]
    return Targets.of(arrays, labels, points, k)


def test_ragged_targets_pad_with_minus_one() -> None:
    t = targets([[[1, 2, 3, 4], [5, 6, 7, 8]], [], [[0, 0, 9, 9]]])
    assert t.boxes.shape == (3, 2, 4) and t.count.tolist() == [2, 0, 1]
    assert (t.boxes[1] == PAD).all() and (t.labels[1] == -1).all() and t.labels[2, 1] == -1
    out = t.padded(4, "xywh", (10, 10))
    assert out["boxes"].shape == (3, 4, 4) and out["box_labels"].shape == (3, 4)
    np.testing.assert_array_equal(out["boxes"][0, :2], [[1, 2, 2, 2], [5, 6, 2, 2]])
    assert (out["boxes"][0, 2:] == -1).all() and (out["box_labels"][0, 2:] == -1).all()
    assert (out["boxes"][1] == -1).all() and out["box_labels"][2].tolist() == [20, -1, -1, -1]


def test_padding_cuts_at_max_boxes() -> None:
    t = targets([[[0, 0, 1, 1], [1, 1, 2, 2], [2, 2, 3, 3]]])
    out = t.padded(2, "xyxy", (8, 8))
    assert out["box_labels"].tolist() == [[0, 1]]
    np.testing.assert_array_equal(out["boxes"][0], [[0, 0, 1, 1], [1, 1, 2, 2]])


def test_moved_boxes_are_clipped_to_the_output() -> None:
    t = targets([[[-5, 2, 6, 9], [30, 30, 50, 50]]]).moved(
        identity, (40, 32), np.zeros(1, bool), Rules()
    )
    np.testing.assert_array_equal(t.boxes[0], [[0, 2, 6, 9], [30, 30, 32, 40]])
    assert t.count.tolist() == [2]


def test_boxes_wholly_outside_go_and_the_rest_move_up() -> None:
    t = targets([[[0, 0, 4, 4], [10, 10, 20, 20], [2, 2, 6, 6]]]).moved(
        shifted(-8, 0), (32, 32), np.zeros(1, bool), Rules()
    )
    assert t.count.tolist() == [1] and t.labels[0].tolist() == [1, -1, -1]
    np.testing.assert_array_equal(t.boxes[0, 0], [2, 10, 12, 20])
    assert (t.boxes[0, 1:] == PAD).all()


def test_a_box_of_zero_width_is_dropped() -> None:
    t = targets([[[5, 5, 5, 9]]]).moved(identity, (16, 16), np.zeros(1, bool), Rules())
    assert t.count.tolist() == [0]


def test_min_area_counts_the_visible_pixels() -> None:
    # the first keeps 4x4 = 16 visible pixels, the second 3x4 = 12 (clipped at x = 16)
    boxes = [[[0, 0, 4, 4], [13, 0, 20, 4]]]
    kept = targets(boxes).moved(identity, (16, 16), np.zeros(1, bool), Rules(min_area=13))
    assert kept.labels[0].tolist() == [0, -1]
    kept = targets(boxes).moved(identity, (16, 16), np.zeros(1, bool), Rules(min_area=12))
    assert kept.labels[0].tolist() == [0, 1]


def test_min_visibility_is_the_visible_fraction_of_the_moved_box() -> None:
    # 10x10 boxes: 60%, 40% and 100% inside a 16x16 output
    boxes = [[[10, 0, 20, 10], [12, 5, 22, 15], [2, 2, 12, 12]]]
    kept = targets(boxes).moved(identity, (16, 16), np.zeros(1, bool), Rules(min_visibility=0.5))
    assert kept.labels[0].tolist() == [0, 2, -1]
    np.testing.assert_array_equal(kept.boxes[0, 0], [10, 0, 16, 10])


def test_keypoints_outside_become_invisible_and_flip_indices_swap() -> None:
    # one box with keypoints (left eye, right eye, nose) in each of two images
    points = np.array(
        [[[[2, 3, 1], [30, 3, 1], [8, 8, 0]]], [[[2, 3, 1], [30, 3, 1], [8, 8, 1]]]], np.float32
    )
    t = targets([[[0, 0, 12, 12]], [[0, 0, 12, 12]]], points)
    mirrored = np.array([False, True])
    moved = t.moved(identity, (16, 16), mirrored, Rules(flip_indices=(1, 0, 2)))
    kp = moved.keypoints
    assert kp is not None
    # image 0 unmirrored: the right eye is outside (x = 30 >= 16), the nose was never visible
    np.testing.assert_array_equal(kp[0, 0], [[2, 3, 1], [30, 3, 0], [8, 8, 0]])
    # image 1 mirrored: keypoint 0 takes keypoint 1's place and the other way round
    np.testing.assert_array_equal(kp[1, 0], [[30, 3, 0], [2, 3, 1], [8, 8, 1]])


def test_keypoints_follow_their_box_when_boxes_drop() -> None:
    points = np.array([[[[1, 1, 1]], [[9, 9, 1]]]], np.float32)
    t = targets([[[-8, -8, -2, -2], [8, 8, 12, 12]]], points)
    moved = t.moved(identity, (16, 16), np.zeros(1, bool), Rules())
    assert moved.count.tolist() == [1] and moved.labels[0].tolist() == [1, -1]
    assert moved.keypoints is not None
    np.testing.assert_array_equal(moved.keypoints[0, 0], [[9, 9, 1]])
    assert (moved.keypoints[0, 1] == PAD).all()


def test_relative_keypoints_with_a_rel_format() -> None:
    points = np.array([[[[8, 4, 1]]]], np.float32)
    out = targets([[[0, 0, 8, 8]]], points).padded(2, "rel_xyxy", (16, 32))
    np.testing.assert_allclose(out["keypoints"][0, 0], [[0.25, 0.25, 1]])
    assert (out["keypoints"][0, 1] == -1).all()


def test_joined_keeps_both_images_boxes() -> None:
    a = targets([[[0, 0, 1, 1]], []])
    b = targets([[[2, 2, 3, 3], [4, 4, 5, 5]], [[6, 6, 7, 7]]])
    joined = a.joined(b)
    assert joined.count.tolist() == [3, 1]
    assert joined.labels.tolist() == [[0, 0, 1], [10, -1, -1]]
    np.testing.assert_array_equal(joined.boxes[1, 0], [6, 6, 7, 7])


def test_joined_keeps_both_images_keypoints() -> None:
    points = np.arange(2 * 1 * 2 * 3, dtype=np.float32).reshape(2, 1, 2, 3)
    a = targets([[[0, 0, 1, 1]], []], points)
    b = targets([[[2, 2, 3, 3]], [[6, 6, 7, 7]]], points + 100)
    joined = a.joined(b)
    assert joined.keypoints is not None and joined.keypoints.shape == (2, 2, 2, 3)
    np.testing.assert_array_equal(joined.keypoints[0], [points[0, 0], points[0, 0] + 100])
    np.testing.assert_array_equal(joined.keypoints[1, 0], points[1, 0] + 100)
    assert (joined.keypoints[1, 1] == PAD).all()


QUARTERS = st.integers(-80, 320).map(lambda q: q / 4)
"""Coordinates on a quarter-pixel grid, so that boxes often meet a window's edge exactly."""
OUT = (60, 60)
FACTORS = st.sampled_from([-2.0, -1.0, -0.75, 0.5, 1.0, 1.25, 3.0])
TURN = PointMap(lambda xy: (xy @ np.array([[1.0, -0.25], [0.5, 1.0]]) + 3.0).astype(np.float32))
"""A sheared map, ``x' = x + 0.5 y + 3``, ``y' = y - 0.25 x + 3``: the outline's path."""


def axis_map(coefficients: np.ndarray, axis_aligned: bool) -> PointMap:
    """Per image ``(sx, sy, tx, ty)``: ``x' = sx x + tx``, ``y' = sy y + ty`` (in float64, as
    the plan's warp), flagged ``axis_aligned`` or not (then it takes the outline's path)."""
    scale, shift = coefficients[:, None, :2], coefficients[:, None, 2:]
    return PointMap(lambda xy: (xy * scale + shift).astype(np.float32), axis_aligned)


@st.composite
def axis_aligned_cases(draw: st.DrawFn) -> tuple[Targets, list[np.ndarray], np.ndarray, Rules]:
    """Ragged boxes (some inverted or of no width) with two keypoints each on a few images, two
    axis-aligned maps (per-image scales, flips among them, and shifts), a window per image
    within the output (some of no width) and rules."""
    images = draw(st.integers(1, 3))
    quads = st.tuples(QUARTERS, QUARTERS, QUARTERS, QUARTERS)
    boxes = [draw(st.lists(quads, max_size=4)) for _ in range(images)]
    count = max(len(b) for b in boxes)
    xy = draw(st.lists(QUARTERS, min_size=images * count * 4, max_size=images * count * 4))
    seen = np.arange(images * count * 2) % 3 > 0  # some keypoints invisible from the start
    points = np.concatenate([np.reshape(xy, (-1, 2)), seen[:, None]], -1)
    points = points.reshape(images, count, 2, 3)
    case = Targets.of(
        [np.reshape(b, (-1, 4)) for b in boxes],
        [np.arange(len(b)) for b in boxes],
        [points[i, : len(b)] for i, b in enumerate(boxes)],
        2,
    )
    maps = [
        np.array(
            draw(
                st.lists(
                    st.tuples(FACTORS, FACTORS, QUARTERS, QUARTERS),
                    min_size=images,
                    max_size=images,
                )
            )
        )
        for _ in range(2)
    ]
    ends = np.clip(np.array(draw(st.lists(quads, min_size=images, max_size=images))), 0, 60)
    window = np.concatenate(
        [np.minimum(ends[:, :2], ends[:, 2:]), np.maximum(ends[:, :2], ends[:, 2:])], -1
    )
    rules = Rules(
        draw(st.sampled_from([0.0, 4.0, 30.0])), draw(st.sampled_from([0.0, 0.3, 0.7])), (1, 0)
    )
    return case, maps, window.astype(np.float32), rules


def assert_same(a: Targets, b: Targets) -> None:
    for name in ("boxes", "labels", "keypoints", "count", "shown"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(axis_aligned_cases())
def test_axis_aligned_maps_move_boxes_as_their_outlines_do(
    case: tuple[Targets, list[np.ndarray], np.ndarray, Rules],
) -> None:
    # Two corners moved, clipped and kept over a flat layout (the fast path) against the
    # outline's four corners moved and cut (the polygon path): the same boxes, shares, rules'
    # decisions and keypoints, through a window, a second map and then a turn (which cuts the
    # fast path's rectangle as the polygon path cuts its outline).
    start, maps, window, rules = case
    mirrored = maps[0][:, 0] < 0
    fast = slow = start
    for k, coefficients in enumerate(maps):
        at = window if k == 0 else None
        flips = mirrored if k == 0 else np.zeros_like(mirrored)
        fast = fast.moved(axis_map(coefficients, True), OUT, flips, rules, at)
        slow = slow.moved(axis_map(coefficients, False), OUT, flips, rules, at)
        assert_same(fast, slow)
        assert fast.outline is None and slow.outline is not None
        real = fast.real
        envelope = np.concatenate([slow.outline.min(axis=2), slow.outline.max(axis=2)], -1)
        np.testing.assert_array_equal(envelope[real], fast.boxes[real])
    turned = np.zeros_like(mirrored)
    assert_same(fast.moved(TURN, OUT, turned, rules), slow.moved(TURN, OUT, turned, rules))
