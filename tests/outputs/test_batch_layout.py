"""The one batch layout: every output's batches come from :class:`BatchLayout`, so its names and
nesting are checked here once for each kind of target (the outputs' own tests check the
batches they deliver)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import daliaug.batch_layout
from daliaug.batch_layout import BatchLayout, target_of
from daliaug.sources.base import Samples


def test_docstring_examples_run() -> None:
    assert doctest.testmod(daliaug.batch_layout).failed == 0


def _samples(**columns: np.ndarray) -> Samples:
    paths = np.array(["a.jpg", "b.jpg"])
    return Samples({"path": paths, "label": np.zeros(2), **columns}, ["a"], np.ones((2, 2)))


@pytest.mark.parametrize(
    ("label_mode", "weights", "names"),
    [
        ("int", False, ("images", "targets")),
        ("none", False, ("images",)),
        ("categorical", True, ("images", "targets", "weights")),
        ("none", True, ("images", "weights")),
    ],
)
def test_labels_and_weights_follow_the_images(
    label_mode: str, weights: bool, names: tuple[str, ...]
) -> None:
    layout = BatchLayout.of(_samples(), label_mode, 8, weights)
    assert layout.names == names
    batch = tuple(range(len(names)))
    assert layout.nest(batch) == batch  # no boxes: handed over as the graph yields it


def test_boxes_become_keras_dict_and_keep_the_rest_in_order() -> None:
    boxes, labels, points = (np.empty(2, dtype=object) for _ in range(3))
    points[:] = [np.zeros((1, 5, 3)), np.zeros((0, 5, 3))]
    layout = BatchLayout.of(_samples(boxes=boxes, box_labels=labels, keypoints=points), "int", 8)
    assert layout.names == ("images", "boxes", "box_labels", "keypoints")
    assert layout.boxes == {"boxes": (8, 4), "box_labels": (8,), "keypoints": (8, 5, 3)}
    images, targets, weights, params = layout.nest(("i", "b", "l", "k", "w", "p"))
    assert (images, weights, params) == ("i", "w", "p")
    assert targets == {"boxes": "b", "labels": "l", "keypoints": "k"}


@pytest.mark.parametrize(
    ("columns", "label_mode", "target"),
    [
        (("path", "label"), "int", "labels"),
        (("path", "target"), "raw", "labels"),
        (("path",), "input", "images"),
        (("path",), "none", "none"),
        (("path", "mask_path"), "categorical", "masks"),
        (("encoded", "mask_encoded"), "int", "masks"),
        (("path", "boxes", "box_labels"), "int", "boxes"),
    ],
)
def test_the_target_is_decided_from_the_columns_then_the_label_mode(
    columns: tuple[str, ...], label_mode: str, target: str
) -> None:
    assert target_of(columns, label_mode) == target


def test_flat_orders_a_batch_given_by_name_and_leaves_out_what_the_layout_lacks() -> None:
    layout = BatchLayout("labels", weights=True)
    named = {"weights": "w", "targets": "t", "images": "i", "boxes": "unused"}
    assert layout.flat(named) == ("i", "t", "w")
    assert BatchLayout("none").flat(named) == ("i",)
    with pytest.raises(KeyError, match="targets"):
        layout.flat({"images": "i", "weights": "w"})
