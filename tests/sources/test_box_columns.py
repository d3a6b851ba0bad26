"""Boxes given in memory (Keras' ``{"boxes", "labels"}`` dict) as detection columns: formats,
padding rows, keypoints, and every bad input named."""

from __future__ import annotations

import numpy as np
import pytest

from daliaug.errors import DataError
from daliaug.sources.box_columns import box_columns

SIZES = np.array([[100, 200], [100, 200]])


def test_padded_arrays_and_ragged_lists_give_the_same_columns() -> None:
    padded = {
        "boxes": np.array([[[10, 20, 30, 40], [-1, -1, -1, -1]], [[0, 0, 5, 5], [1, 1, 9, 9]]]),
        "labels": np.array([[3, -1], [0, 1]]),
    }
    ragged = {
        "boxes": [np.array([[10, 20, 30, 40]]), np.array([[0, 0, 5, 5], [1, 1, 9, 9]])],
        "labels": [[3], [0, 1]],
    }
    for y in (padded, ragged):
        columns, names = box_columns(y, SIZES, "xyxy")
        assert names == ["0", "1", "2", "3"]
        assert [len(b) for b in columns["boxes"]] == [1, 2]
        np.testing.assert_array_equal(columns["boxes"][0], [[10, 20, 30, 40]])
        assert columns["box_labels"][1].tolist() == [0, 1]


def test_relative_formats_become_absolute_xyxy() -> None:
    y = {"boxes": [[[0.1, 0.2, 0.5, 0.4]]] * 2, "labels": [[0], [0]]}
    columns, _ = box_columns(y, SIZES, "rel_yxyx")
    np.testing.assert_allclose(columns["boxes"][0], [[40, 10, 80, 50]])
    columns, _ = box_columns(
        {"boxes": [[[0.5, 0.5, 0.2, 0.2]]] * 2, "labels": [[0]] * 2}, SIZES, "rel_center_xywh"
    )
    np.testing.assert_allclose(columns["boxes"][1], [[80, 40, 120, 60]])


def test_keypoints_get_a_visibility_and_follow_padding() -> None:
    y = {
        "boxes": [[[10, 20, 30, 40], [-1, -1, -1, -1]], [[0, 0, 5, 5], [1, 1, 9, 9]]],
        "labels": [[3, -1], [0, 1]],
        "keypoints": [np.ones((2, 3, 2)), np.zeros((2, 3, 2))],
    }
    columns, _ = box_columns(y, SIZES, "xyxy")
    assert columns["keypoints"][0].shape == (1, 3, 3)
    assert (columns["keypoints"][0][..., 2] == 1).all()


@pytest.mark.parametrize(
    ("y", "message"),
    [
        ({"boxes": [[[0, 0, 1, 1]]] * 2}, "'boxes' and 'labels'"),
        ({"boxes": [[[0, 0, 1, 1]]], "labels": [[0]]}, "2 images but 1 entries"),
        ({"boxes": [[[0, 0, 1]]] * 2, "labels": [[0]] * 2}, "image 0 has boxes of shape"),
        ({"boxes": [[[5, 5, 5, 9]]] * 2, "labels": [[0]] * 2}, "has no area"),
        ({"boxes": [[[0, 0, 250, 9]]] * 2, "labels": [[0]] * 2}, "outside the 200x100 image"),
        ({"boxes": [[[0, 0, 5, 9]]] * 2, "labels": [[-3]] * 2}, r"image 0 has labels \[-3\]; a"),
        ({"boxes": [[[0, 0, 5, 9]]] * 2, "labels": [[1.7]] * 2}, r"labels \[1.7\]; a label is a"),
        ({"boxes": [[[0, 0, 5, np.nan]]] * 2, "labels": [[0]] * 2}, "nan.*not finite numbers"),
        ({"boxes": [[list("abcd")]] * 2, "labels": [[0]] * 2}, r"y\['boxes'\]: image 0 holds <U1"),
        ({"boxes": [[[0, 0, 5, 9]]] * 2, "labels": [["a"]] * 2}, r"y\['labels'\]: image 0 holds"),
        (
            {
                "boxes": [[[0, 0, 5, 9]]] * 2,
                "labels": [[0]] * 2,
                "keypoints": [[[[np.nan, 1]]]] * 2,
            },
            r"y\['keypoints'\]: image 0 .* not finite numbers \(a missing keypoint is \(0, 0, 0\)",
        ),
    ],
)
def test_bad_targets_are_named(y: dict, message: str) -> None:
    with pytest.raises(DataError, match=message):
        box_columns(y, SIZES, "xyxy")


def test_labels_beyond_the_class_names_are_refused() -> None:
    y = {"boxes": [[[0, 0, 5, 9]]] * 2, "labels": [[2]] * 2}
    with pytest.raises(DataError, match="class 2 is out of range for 2 classes"):
        box_columns(y, SIZES, "xyxy", ["cat", "dog"])


def test_whole_float_labels_are_class_indices() -> None:
    """Keras programs often hold labels as floats: 1.0 is class 1 (1.7 is refused above)."""
    y = {"boxes": [[[0, 0, 5, 9]]] * 2, "labels": np.array([[1.0], [-1.0]])}
    columns, _ = box_columns(y, SIZES, "xyxy")
    assert columns["box_labels"][0].tolist() == [1] and len(columns["box_labels"][1]) == 0


def test_a_list_of_per_image_dicts_is_named_as_such() -> None:
    from daliaug.sources.arrays import array_samples

    images = np.zeros((2, 8, 8, 3), np.uint8)
    with pytest.raises(DataError, match="not a list of per-image dicts"):
        array_samples(images, [{"boxes": [[1, 1, 4, 4]], "labels": [1]}] * 2)
