"""daliaug preview's tiles: class names, or each class's label weight where batch stages mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.tools.preview import augmented_samples, caption
from tests.helpers import config_for
from tests.sources.test_detection_sources import coco  # noqa: F401  (the fixture)


def test_caption_names_the_class_or_the_mixed_weights() -> None:
    names = ["cat", "dog", "fox"]
    assert caption(np.int32(1), names) == "dog"
    assert caption(np.array([0.38, 0.62, 0.0]), names) == "dog 0.62 / cat 0.38"


@pytest.mark.parametrize("backend", ["cpu", "opencv"])
@pytest.mark.parametrize("stage", [{"type": "mixup", "alpha": 0.4}, {"type": "cutmix"}])
def test_mixed_batches_show_their_label_weights(demo_dir: Path, stage: dict, backend: str) -> None:
    config = config_for(
        demo_dir, label_mode="categorical", transforms=[stage], shuffle=True, backend=backend
    )
    images, labels, names = augmented_samples(config, 8)
    assert images.dtype == np.uint8 and labels.shape == (8, len(names))
    np.testing.assert_allclose(labels.sum(axis=1), 1.0, atol=1e-5)
    mixed = [caption(t, names) for t in labels if np.count_nonzero(t > 0.005) == 2]
    assert mixed and all(" / " in c for c in mixed)


def test_each_sample_is_shown_as_it_is_beside_its_augmented_versions(tmp_path: Path) -> None:
    """Originals are the files as Pillow decodes them, named by file, and every version is
    that file through the pipeline: here a certain horizontal flip at the file's own size."""
    from PIL import Image

    from daliaug.tools.preview import augmented_versions, preview
    from tests.helpers import structured_image, write_image_dir

    images = [structured_image(24, 32, seed=i) for i in range(6)]
    folder = write_image_dir(tmp_path / "data", {"a": images[:3], "b": images[3:]})
    flip = [{"type": "flip", "horizontal": 1.0}]
    config = config_for(folder, image_size=[24, 32], transforms=flip, shuffle=True)
    shown = augmented_versions(config, 2, 3)
    assert shown.names == ["0000.png", "0002.png"]  # the first and the last sample listed
    assert shown.class_names == ["a", "b"]
    assert np.array_equal(shown.originals[0], images[0])
    assert np.array_equal(shown.originals[1], images[5])
    assert shown.augmented.shape == (6, 24, 32, 3) and shown.targets.tolist() == [0] * 3 + [1] * 3
    for row, original in enumerate(shown.originals):
        for version in shown.augmented[3 * row : 3 * row + 3]:
            assert np.array_equal(version, original[:, ::-1])
    grid = preview(config, 2, tmp_path / "grid.png", versions=3)
    with Image.open(grid) as png:
        assert png.size[0] > png.size[1]  # rows of 1 + 3 tiles


BOXES = [np.array([[4, 6, 24, 30], [40, 20, 64, 48]], np.float32), np.zeros((0, 4), np.float32)]
"""Boxes (absolute xyxy) of two 48x64 images: two, and none."""


def test_detection_versions_carry_the_boxes_each_image_shows() -> None:
    """An arrays config given Keras' ``bounding_boxes`` dict in Python: the originals keep
    their own boxes, each version its boxes moved (a certain flip) and given back in the
    config's format, drawn as absolute corners."""
    from daliaug.boxes import from_xyxy
    from daliaug.config import load_config
    from daliaug.tools.preview import Marks, augmented_versions

    x = np.stack([np.full((48, 64, 3), 40 * i, np.uint8) for i in range(2)])
    fmt = "rel_center_xywh"
    y = {"boxes": [from_xyxy(b, fmt, (48, 64)) for b in BOXES], "labels": [[1, 0], []]}
    config = load_config(
        {
            "source": {"type": "arrays", "class_names": ["cat", "dog"]},
            "image_size": [48, 64],
            "bounding_box_format": fmt,
            "backend": "cpu",
            "transforms": [{"type": "flip", "horizontal": 1.0}],
        }
    )
    shown = augmented_versions(config, 2, 2, x=x, y=y)
    assert shown.class_names == ["cat", "dog"] and set(shown.targets) == {"boxes", "labels"}
    np.testing.assert_allclose(shown.marks[0].boxes, BOXES[0], atol=1e-4)
    assert shown.marks[0].labels.tolist() == [1, 0] and len(shown.marks[1].labels) == 0
    found = Marks.of_batch(shown.targets, fmt, (48, 64))
    flipped = np.array([[40, 6, 60, 30], [0, 20, 24, 48]], np.float32)
    for marks in found[:2]:
        np.testing.assert_allclose(marks.boxes, flipped, atol=1e-3)
        assert marks.labels.tolist() == [1, 0] and marks.keypoints is None
    assert all(len(m.labels) == 0 for m in found[2:])


def test_boxes_are_drawn_on_their_pixels_and_named() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from daliaug.tools.preview import Marks, _draw

    fig, ax = plt.subplots()
    ax.imshow(np.zeros((48, 64, 3), np.uint8))
    points = np.array([[[10, 12, 1], [0, 0, 0]], [[-1, -1, -1], [-1, -1, -1]]], np.float32)
    _draw(ax, Marks(BOXES[0], np.array([1, 0]), points), ["cat", "dog"])
    corners = [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in ax.patches]
    assert corners == [(3.5, 5.5, 20.0, 24.0), (39.5, 19.5, 24.0, 28.0)]  # pixel i at i
    assert [t.get_text() for t in ax.texts] == ["dog", "cat"]
    (dots,) = ax.collections
    np.testing.assert_allclose(dots.get_offsets(), [[9.5, 11.5]])  # the visible keypoint
    plt.close(fig)


def test_preview_draws_a_coco_sets_boxes_and_keypoints(
    coco: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``daliaug preview`` on a COCO source: each tile gets its boxes, named by category, and
    the person's keypoints; the augmented ones moved (a certain flip)."""
    import yaml

    from daliaug.cli import main as cli
    from daliaug.tools import preview as tool

    drawn: list = []
    real = tool._draw
    monkeypatch.setattr(tool, "_draw", lambda ax, m, n: drawn.append((m, n)) or real(ax, m, n))
    source = {
        "type": "coco",
        "annotations": str(coco / "instances.json"),
        "images": str(coco / "images"),
        "on_error": "skip",
    }
    config = {
        "source": source,
        "image_size": [48, 64],
        "backend": "cpu",
        "transforms": [{"type": "flip", "horizontal": 1.0}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "grid.png"
    args = ["preview", str(tmp_path / "config.yaml"), "--out", str(out), "--count", "2"]
    assert cli([*args, "--versions", "2"]) == 0 and out.is_file()
    assert len(drawn) == 6 and all(n == ["person", "car", "dog"] for _, n in drawn)
    original, first, second = (m for m, _ in drawn[:3])  # a.jpg, then its two versions
    np.testing.assert_array_equal(original.boxes, [[4, 6, 24, 36.5], [40, 20, 64, 48]])
    for version in (first, second):
        np.testing.assert_allclose(version.boxes, [[40, 6, 60, 36.5], [0, 20, 24, 48]], atol=1e-3)
        assert version.labels.tolist() == [0, 2]
        np.testing.assert_allclose(version.keypoints[0, :, :2][[0, 2]], [[54, 12], [49.5, 11]])
        assert version.keypoints[0, :, 2].tolist() == [1, 0, 1]
    assert all(len(m.labels) == 0 for m, _ in drawn[3:])  # empty.jpg


def test_arrays_with_keras_box_dict_preview_as_make_dataset_batches_them() -> None:
    """``y`` as Keras' ``bounding_boxes`` dict makes an arrays source's targets boxes in a
    preview as in ``make_dataset``: moved by the same flip, padded the same way."""
    from daliaug.config import load_config
    from daliaug.outputs.dataset import make_dataset

    x = np.zeros((2, 16, 20, 3), np.uint8)
    y = {"boxes": [[[2, 3, 10, 12]], [[0, 0, 5, 5], [8, 4, 20, 16]]], "labels": [[1], [0, 1]]}
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [16, 20],
            "batch_size": 2,
            "shuffle": False,
            "seed": 0,
            "backend": "cpu",
            "max_boxes": 3,
            "transforms": [{"type": "flip", "horizontal": 1.0}],
        }
    )
    _, targets, _ = augmented_samples(config, 2, x=x, y=y)
    _, batched = next(iter(make_dataset(config, x=x, y=y, framework="numpy")))
    np.testing.assert_allclose(targets["boxes"][0, 0], [10, 3, 18, 12])
    for key in ("boxes", "labels"):
        np.testing.assert_array_equal(targets[key], batched[key])
