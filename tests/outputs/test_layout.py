"""The one batch layout: every output's batches come from :class:`Layout`, so its names and
nesting are checked here once for each kind of target (the outputs' own tests check the
batches they deliver)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import daliaug.outputs.layout
from daliaug.config import load_config
from daliaug.outputs.layout import Layout
from daliaug.sources.base import Samples


def test_docstring_examples_run() -> None:
    assert doctest.testmod(daliaug.outputs.layout).failed == 0


def _config(**fields: object):
    return load_config(
        {"source": {"type": "directory", "path": "photos"}, "image_size": [8, 8], **fields}
    )


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
def test_labels_and_weights_follow_the_images(label_mode: str, weights: bool, names) -> None:
    config = _config(label_mode=label_mode)
    layout = Layout.of(config, _samples(), weights)
    assert layout.names == names
    batch = tuple(range(len(names)))
    assert layout.nest(batch) == batch  # no boxes: handed over as the graph yields it


def test_boxes_become_keras_dict_and_keep_the_rest_in_order() -> None:
    ragged = np.empty(2, dtype=object)
    boxes = _samples(boxes=ragged, box_labels=ragged, keypoints=ragged)
    layout = Layout.of(_config(), boxes, weights=True)
    assert layout.names == ("images", "boxes", "box_labels", "keypoints", "weights")
    images, targets, weights, params = layout.nest(("i", "b", "l", "k", "w", "p"))
    assert (images, weights, params) == ("i", "w", "p")
    assert targets == {"boxes": "b", "labels": "l", "keypoints": "k"}
