"""Detection sources: COCO JSON, YOLO txt and Pascal VOC XML written by hand here, their boxes
as absolute pixel xyxy, every bad annotation named (on_error raise or skip), sharding, the
procedural detection set in all three forms, and ``daliaug check`` naming what it finds."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import daliaug.sources.checks as checks
from daliaug.config import load_config
from daliaug.errors import ConfigError, DataError
from daliaug.sources.annotations import ImageAnnotations, box_problem, checked_targets
from daliaug.sources.base import Samples
from daliaug.sources.coco import CocoSource
from daliaug.sources.voc import CORNERS, VocSource
from daliaug.sources.yolo import YoloSource
from daliaug.tools.demo_data import CLASS_NAMES, write_detection_dataset
from tests.tools.test_every_command import daliaug as run_cli


def write_image(path: Path, width: int, height: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (width, height), (90, 120, 150)).save(path)
    return str(path)


def by_file(samples: Samples, column: str) -> dict[str, np.ndarray]:
    return {Path(p).name: v for p, v in zip(samples.paths, samples.columns[column], strict=True)}


# ---------------------------------------------------------------- boxes against their image

coordinate = st.floats(-3, 25) | st.sampled_from(
    [-1.0, 0.0, 10.0, 11.0, 20.0, 21.0, np.nan, np.inf]
)


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.lists(st.tuples(coordinate, coordinate, coordinate, coordinate), max_size=4))
def test_boxes_within_a_pixel_are_clipped_the_rest_refused(boxes: list) -> None:
    """An image 20 wide and 10 high: a box is clipped when it reaches at most 1 pixel out and
    keeps an area, else its sample fails naming each bad box."""
    found = ImageAnnotations()
    for i, box in enumerate(boxes):
        found.add(box, i, f"box {i}")
    reasons = [box_problem(box, 10, 20, f"box {i}") for i, box in enumerate(boxes)]
    for box, reason in zip(boxes, reasons, strict=True):
        x0, y0, x1, y1 = box
        near = min(x0, y0) >= -1 and x1 <= 21 and y1 <= 11
        keeps_area = min(x1, 20) > max(x0, 0) and min(y1, 10) > max(y0, 0)
        assert (reason is None) == (near and x0 < x1 and y0 < y1 and keeps_area)
    if any(reasons):
        with pytest.raises(DataError) as raised:
            checked_targets(found, 10, 20, None)
        assert all(r in str(raised.value) for r in reasons[:3] if r)
        return
    clipped, labels, _ = checked_targets(found, 10, 20, None)
    expected = np.clip(np.array(boxes).reshape(-1, 4), 0, [20, 10, 20, 10])
    np.testing.assert_array_equal(clipped, expected.astype(np.float32))
    np.testing.assert_array_equal(labels, range(len(boxes)))


# ---------------------------------------------------------------- COCO

PERSON_KEYPOINTS = ["nose", "left_eye", "right_eye"]


def coco_json() -> dict:
    """Categories out of id order (one with keypoints), an iscrowd region, an unknown category
    id, a box far outside its image, one just outside (clipped), an image without
    annotations and one whose declared size is not its file's."""
    return {
        "info": {"description": "written by hand"},
        "images": [
            {"id": 10, "file_name": "a.jpg", "width": 64, "height": 48},
            {"id": 11, "file_name": "sub/b.jpg", "width": 40, "height": 30},
            {"id": 12, "file_name": "empty.jpg", "width": 32, "height": 32},
            {"id": 13, "file_name": "unknown.jpg", "width": 32, "height": 32},
            {"id": 14, "file_name": "outside.jpg", "width": 32, "height": 32},
            {"id": 15, "file_name": "liar.jpg", "width": 99, "height": 32},
        ],
        "categories": [
            {"id": 18, "name": "dog", "supercategory": "animal"},
            {"id": 1, "name": "person", "keypoints": PERSON_KEYPOINTS, "skeleton": [[1, 2]]},
            {"id": 3, "name": "car"},
        ],
        "annotations": [
            {
                "id": 100,
                "image_id": 10,
                "category_id": 1,
                "bbox": [4, 6, 20, 30.5],
                "iscrowd": 0,
                "keypoints": [10, 12, 2, 0, 0, 0, 14.5, 11, 1],
                "num_keypoints": 2,
            },
            {"id": 101, "image_id": 10, "category_id": 18, "bbox": [40, 20, 24, 28], "iscrowd": 0},
            {"id": 102, "image_id": 10, "category_id": 3, "bbox": [0, 0, 64, 48], "iscrowd": 1},
            {"id": 103, "image_id": 11, "category_id": 3, "bbox": [-0.5, 2, 41, 10]},
            {"id": 104, "image_id": 13, "category_id": 7, "bbox": [1, 1, 5, 5]},
            {"id": 105, "image_id": 14, "category_id": 3, "bbox": [20, 20, 30, 5]},
            {"id": 106, "image_id": 14, "category_id": 3, "bbox": [2, 2, 0, 5]},
        ],
    }


@pytest.fixture
def coco(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    for name, (w, h) in {
        "a.jpg": (64, 48),
        "sub/b.jpg": (40, 30),
        "empty.jpg": (32, 32),
        "unknown.jpg": (32, 32),
        "outside.jpg": (32, 32),
        "liar.jpg": (32, 32),
    }.items():
        write_image(images / name, w, h)
    (tmp_path / "instances.json").write_text(json.dumps(coco_json(), indent=1))
    return tmp_path


def coco_source(root: Path, **fields) -> CocoSource:
    return CocoSource(annotations=root / "instances.json", images=root / "images", **fields)


def test_coco_boxes_labels_and_keypoints(coco: Path) -> None:
    samples = coco_source(coco, on_error="skip").samples()
    assert samples.has_boxes and coco_source(coco).detection
    assert samples.class_names == ["person", "car", "dog"]  # ascending category id 1, 3, 18
    assert [Path(p).name for p in samples.paths] == ["a.jpg", "b.jpg", "empty.jpg"]
    assert "label" not in samples.columns
    boxes, labels = by_file(samples, "boxes"), by_file(samples, "box_labels")
    np.testing.assert_array_equal(boxes["a.jpg"], [[4, 6, 24, 36.5], [40, 20, 64, 48]])
    np.testing.assert_array_equal(labels["a.jpg"], [0, 2])
    np.testing.assert_array_equal(boxes["b.jpg"], [[0, 2, 40, 12]])  # clipped: 0.5 px outside
    assert boxes["empty.jpg"].shape == (0, 4) and labels["empty.jpg"].shape == (0,)
    assert all(b.dtype == np.float32 for b in boxes.values())
    assert all(lab.dtype == np.int32 for lab in labels.values())
    keypoints = by_file(samples, "keypoints")
    np.testing.assert_array_equal(
        keypoints["a.jpg"][0], [[10, 12, 1], [0, 0, 0], [14.5, 11, 1]]
    )  # COCO's v: 0 -> 0, 1 and 2 -> 1
    np.testing.assert_array_equal(keypoints["a.jpg"][1], np.zeros((3, 3)))  # a dog: none
    assert keypoints["empty.jpg"].shape == (0, 3, 3)
    np.testing.assert_array_equal(samples.sizes, [[48, 64], [30, 40], [32, 32]])
    no_points = coco_source(coco, on_error="skip", keypoints=False).samples()
    assert "keypoints" not in no_points.columns


def test_a_later_coco_start_reads_no_header_and_a_file_changed_is_still_named(
    coco: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each image's header is kept for the next start with the file's key (one ``stat`` at a
    later start, no header read), and the samples hand the keys on: a file broken in place
    since is read again and refused at the next start, and one broken after the listing is
    named when a batch reads it."""
    monkeypatch.setenv("DALIAUG_CACHE", str(coco / "cache"))
    first = coco_source(coco, on_error="skip").samples()
    read: list[str] = []
    real = checks.image_header

    def image_header(path: str, *args: Any) -> Any:
        read.append(path)
        return real(path, *args)

    monkeypatch.setattr(checks, "image_header", image_header)
    again = coco_source(coco, on_error="skip").samples()
    assert read == [] and again.paths == first.paths
    np.testing.assert_array_equal(again.sizes, first.sizes)
    broken = coco / "images" / "a.jpg"
    with broken.open("r+b") as f:  # in place: its folder's status is as it was
        f.write(b"broken")
    refused = coco_source(coco, on_error="skip").samples()
    assert read == [str(broken)] and str(broken) in refused.rejected
    later = coco / "images" / "sub" / "b.jpg"
    with later.open("r+b") as f:
        f.write(b"broken")
    with pytest.raises(DataError, match=r"b\.jpg changed after daliaug checked it"):
        refused.read("path", np.arange(len(refused)))


def test_coco_problems_are_each_named(coco: Path) -> None:
    samples = coco_source(coco, on_error="skip").samples()
    annotations = str(coco / "instances.json")
    rejected = {Path(p).name: reason for p, reason in samples.rejected.items()}
    assert set(rejected) == {"unknown.jpg", "outside.jpg", "liar.jpg"}
    assert annotations in rejected["unknown.jpg"] and "annotation 104" in rejected["unknown.jpg"]
    assert "category_id 7" in rejected["unknown.jpg"]
    assert "annotation 105" in rejected["outside.jpg"] and "outside" in rejected["outside.jpg"]
    assert "annotation 106" in rejected["outside.jpg"] and "non-positive" in rejected["outside.jpg"]
    assert "99x32" in rejected["liar.jpg"] and "32x32" in rejected["liar.jpg"]
    notes = samples.notes
    assert "no annotations" in notes[str(coco / "images" / "empty.jpg")]
    assert "1 iscrowd" in notes[annotations]
    with pytest.raises(DataError, match="annotation 104") as raised:
        coco_source(coco).samples()
    assert annotations in str(raised.value) and "on_error: skip" in str(raised.value)


@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda root: (root / "instances.json").unlink(), ConfigError, "cannot read"),
        (lambda root: (root / "instances.json").write_text("{"), DataError, "not valid JSON"),
        (lambda root: (root / "instances.json").write_text("[]"), DataError, "'images' list"),
        (
            lambda root: (root / "instances.json").write_text(
                json.dumps({**coco_json(), "categories": [{"id": "x"}]})
            ),
            DataError,
            r"categories\[0\]",
        ),
    ],
)
def test_coco_unusable_annotation_files_are_named(coco: Path, change, error, message) -> None:
    change(coco)
    with pytest.raises(error, match=message) as raised:
        coco_source(coco, on_error="skip").samples()
    assert str(coco / "instances.json") in str(raised.value)


def with_annotations(*annotations: object) -> dict:
    return {**coco_json(), "annotations": [*coco_json()["annotations"], *annotations]}


@pytest.mark.parametrize(
    "data, message",
    [  # an annotation no image takes would be lost, or be another image's box
        (
            with_annotations({"id": 7, "image_id": "10", "category_id": 3, "bbox": [1, 1, 4, 4]}),
            r"annotation 7 \(image_id '10'\): its image_id is not the id of an entry of 'images'",
        ),
        (
            with_annotations({"id": 8, "image_id": 99, "category_id": 3, "bbox": [1, 1, 4, 4]}),
            r"annotation 8 \(image_id 99\): its image_id is not the id",
        ),
        (
            with_annotations([10, 3, [1, 1, 4, 4]]),
            r"annotations\[7\] must be a mapping, got list \[10",
        ),
        ({**coco_json(), "images": []}, "'images' is empty: no image to train on"),
    ],
)
def test_coco_annotations_no_image_takes_are_refused(coco: Path, data: dict, message) -> None:
    (coco / "instances.json").write_text(json.dumps(data))
    for on_error in ("raise", "skip"):
        with pytest.raises(DataError, match=message) as raised:
            coco_source(coco, on_error=on_error).samples()
        assert str(coco / "instances.json") in str(raised.value)


def test_coco_image_missing_names_the_annotation_file(coco: Path) -> None:
    (coco / "images" / "sub" / "b.jpg").unlink()
    samples = coco_source(coco, on_error="skip").samples()
    reason = samples.rejected[str(coco / "images" / "sub" / "b.jpg")]
    assert "image id 11" in reason and str(coco / "instances.json") in reason


# ---------------------------------------------------------------- YOLO


@pytest.fixture
def yolo(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    for name, (w, h) in {
        "a.jpg": (100, 50),
        "train/b.png": (40, 40),
        "bare.jpg": (20, 20),
        "bad.jpg": (20, 20),
        "far.jpg": (20, 20),
    }.items():
        write_image(root / "images" / name, w, h)
    labels = root / "labels"
    (labels / "train").mkdir(parents=True)
    (labels / "a.txt").write_text("0 0.5 0.5 0.2 0.4\n2 0.1 0.2 0.2 0.4\n\n")
    (labels / "train" / "b.txt").write_text("1 0.5 0.5 1.0 1.0\n")
    (labels / "bad.txt").write_text("0 0.5 0.5 0.2\n0 0.5 0.5 0.1 0.1\n")
    (labels / "far.txt").write_text("1 0.9 0.5 0.5 0.5\n3 0.5 0.5 0.1 0.1\n")
    (labels / "orphan.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"names": {0: "cat", 1: "dog", 2: "ox"}}))
    return root


def test_yolo_boxes_in_absolute_pixels(yolo: Path) -> None:
    samples = YoloSource(path=yolo, on_error="skip").samples()
    assert samples.class_names == ["cat", "dog", "ox"]  # from the parent's data.yaml
    assert sorted(Path(p).name for p in samples.paths) == ["a.jpg", "b.png", "bare.jpg"]
    boxes, labels = by_file(samples, "boxes"), by_file(samples, "box_labels")
    np.testing.assert_allclose(boxes["a.jpg"], [[40, 15, 60, 35], [0, 0, 20, 20]], atol=1e-4)
    np.testing.assert_array_equal(labels["a.jpg"], [0, 2])
    np.testing.assert_allclose(boxes["b.png"], [[0, 0, 40, 40]])
    assert boxes["bare.jpg"].shape == (0, 4)
    assert "no label file" in samples.notes[str(yolo / "images" / "bare.jpg")]
    assert "without an image" in samples.ignored[str(yolo / "labels" / "orphan.txt")]
    rejected = {Path(p).name: reason for p, reason in samples.rejected.items()}
    assert set(rejected) == {"bad.jpg", "far.jpg"}
    assert f"{yolo / 'labels' / 'bad.txt'}:1" in rejected["bad.jpg"]
    assert f"{yolo / 'labels' / 'far.txt'}:1" in rejected["far.jpg"]  # 0.65..1.15 of the width
    assert f"{yolo / 'labels' / 'far.txt'}:2: class 3" in rejected["far.jpg"]
    with pytest.raises(DataError, match=r"bad\.txt:1"):
        YoloSource(path=yolo).samples()


def test_yolo_class_names_from_classes_txt_or_the_largest_index(yolo: Path) -> None:
    (yolo.parent / "data.yaml").unlink()
    for name in ("bad", "far"):
        (yolo / "labels" / f"{name}.txt").unlink()
    assert YoloSource(path=yolo).samples().class_names == ["0", "1", "2"]
    (yolo / "labels" / "classes.txt").write_text("red\ngreen\nblue\nwhite\n")
    samples = YoloSource(path=yolo).samples()
    assert samples.class_names == ["red", "green", "blue", "white"]
    assert str(yolo / "labels" / "classes.txt") not in samples.ignored
    (yolo / "data.yaml").write_text("names: [only]\n")
    with pytest.raises(DataError, match="class 2 is not among the 1 classes"):
        YoloSource(path=yolo).samples()
    (yolo / "data.yaml").write_text("names: 3\n")
    with pytest.raises(DataError, match="'names' must be"):
        YoloSource(path=yolo).samples()


def test_yolo_label_files_with_a_byte_order_mark_read_alike(yolo: Path) -> None:
    """Notepad starts UTF-8 files with a byte order mark."""
    for name in ("bad", "far"):
        (yolo / "labels" / f"{name}.txt").unlink()
    plain = YoloSource(path=yolo).samples()
    (yolo / "labels" / "a.txt").write_text("\ufeff0 0.5 0.5 0.2 0.4\n2 0.1 0.2 0.2 0.4\n")
    marked = YoloSource(path=yolo).samples()
    for column in ("boxes", "box_labels"):
        for a, b in zip(plain.columns[column], marked.columns[column], strict=True):
            np.testing.assert_array_equal(a, b)


def test_yolo_without_class_names_bounds_the_class_index(yolo: Path) -> None:
    """A class index of 1e8 and no class file: refused by name, not 10^8 class names."""
    (yolo.parent / "data.yaml").unlink()
    (yolo / "labels" / "bad.txt").write_text("100000000 0.5 0.5 0.2 0.2\n")
    with pytest.raises(DataError, match=r"bad\.txt:1: class 100000000 is not among the 4096"):
        YoloSource(path=yolo).samples()
    samples = YoloSource(path=yolo, on_error="skip").samples()
    assert samples.class_names == ["0", "1", "2", "3"]  # far.txt's 3 the largest left
    assert str(yolo / "images" / "bad.jpg") in samples.rejected


def test_yolo_needs_images_and_labels(tmp_path: Path) -> None:
    write_image(tmp_path / "images" / "a.jpg", 8, 8)
    with pytest.raises(DataError, match="no labels/ folder"):
        YoloSource(path=tmp_path).samples()


def yolo_set(root: Path, labels: dict[str, str], data: dict) -> Path:
    """A YOLO set under ``root`` of 100x50 images, one per label file ``labels`` (name ->
    text), and ``data`` as its ``data.yaml``."""
    for name, text in labels.items():
        write_image(root / "images" / f"{name}.jpg", 100, 50)
        (root / "labels").mkdir(parents=True, exist_ok=True)
        (root / "labels" / f"{name}.txt").write_text(text)
    (root / "data.yaml").write_text(yaml.safe_dump(data))
    return root


def test_yolo_pose_labels_carry_keypoints(tmp_path: Path) -> None:
    labels = {
        "a": "0 0.5 0.5 0.2 0.4 0.5 0.5 2 0.1 0.2 0\n1 0.2 0.5 0.2 0.2 0.25 0.5 1 0 0 0\n",
        "short": "0 0.5 0.5 0.2 0.4 0.5 0.5 2\n",
        "letters": "0 0.5 0.5 0.2 0.4 0.5 0.5 2 x 0.2 0\n",
    }
    root = yolo_set(tmp_path, labels, {"names": ["person", "dog"], "kpt_shape": [2, 3]})
    samples = YoloSource(path=root, on_error="skip").samples()
    np.testing.assert_allclose(
        by_file(samples, "boxes")["a.jpg"], [[40, 15, 60, 35], [10, 20, 30, 30]]
    )
    keypoints = by_file(samples, "keypoints")["a.jpg"]  # v 2 and 1 -> visible, 0 -> not
    np.testing.assert_allclose(keypoints, [[[50, 25, 1], [10, 10, 0]], [[25, 25, 1], [0, 0, 0]]])
    rejected = {Path(p).name: reason for p, reason in samples.rejected.items()}
    assert set(rejected) == {"short.jpg", "letters.jpg"}
    assert (
        f"{root / 'labels' / 'short.txt'}:1: expected 'class cx cy w h' and 2 keypoints"
        in (rejected["short.jpg"])
    )
    assert "11 numbers, kpt_shape [2, 3]" in rejected["short.jpg"]
    assert (
        f"{root / 'labels' / 'letters.txt'}:1: expected finite numbers" in rejected["letters.jpg"]
    )


def test_yolo_pose_without_visibility_and_bad_kpt_shape(tmp_path: Path) -> None:
    root = yolo_set(
        tmp_path, {"a": "0 0.5 0.5 0.2 0.4 0.5 0.4\n"}, {"names": ["p"], "kpt_shape": [1, 2]}
    )
    samples = YoloSource(path=root).samples()
    np.testing.assert_allclose(by_file(samples, "keypoints")["a.jpg"], [[[50, 20, 1]]])
    for shape in ([1, 4], [0, 3], "17,3"):
        (root / "data.yaml").write_text(yaml.safe_dump({"names": ["p"], "kpt_shape": shape}))
        with pytest.raises(
            DataError, match=r"data\.yaml: 'kpt_shape' must be \[keypoints, 2 or 3\]"
        ):
            YoloSource(path=root).samples()


def mirrored_keypoints(root: Path, **fields: object) -> np.ndarray:
    """The keypoints of the first image of the YOLO set at ``root`` through a sure
    horizontal flip (``fields`` into the config)."""
    from daliaug import make_dataset

    config = {
        "source": {"type": "yolo", "path": str(root)},
        "image_size": [50, 100],
        "batch_size": 1,
        "backend": "cpu",
        "transforms": [{"type": "flip", "horizontal": 1.0}],
        **fields,
    }
    _, targets = next(iter(make_dataset(load_config(config), framework="numpy")))
    return np.asarray(targets["keypoints"])[0, 0]


def test_yolo_pose_flip_idx_swaps_mirrored_keypoints(tmp_path: Path) -> None:
    """A pose ``data.yaml``'s ``flip_idx`` swaps left and right keypoints where a flip mirrors
    the image, as Ultralytics does (keypoint k becomes keypoint flip_idx[k]); the config's
    ``flip_indices`` goes first; a ``flip_idx`` that is no permutation is named."""
    line = "0 0.5 0.5 0.6 0.6 0.3 0.5 2 0.7 0.5 2 0.5 0.4 2\n"  # left eye, right eye, nose
    data = {"names": ["p"], "kpt_shape": [3, 3], "flip_idx": [1, 0, 2]}
    root = yolo_set(tmp_path, {"a": line}, data)
    swapped = [[30, 25, 1], [70, 25, 1], [50, 20, 1]]  # the left eye still on the left
    np.testing.assert_allclose(mirrored_keypoints(root), swapped)
    kept = mirrored_keypoints(root, flip_indices=[0, 1, 2])
    np.testing.assert_allclose(kept, [[70, 25, 1], [30, 25, 1], [50, 20, 1]])
    for flip in ([0, 0, 1], [1, 0], "1,0,2"):
        (root / "data.yaml").write_text(yaml.safe_dump({**data, "flip_idx": flip}))
        with pytest.raises(DataError, match=r"data\.yaml: 'flip_idx' must list each of the 3"):
            YoloSource(path=root).samples()


def test_yolo_segment_polygons_give_their_box(tmp_path: Path) -> None:
    labels = {
        "a": "0 0.1 0.2 0.5 0.1 0.4 0.8 0.2 0.6\n1 0.5 0.5 0.2 0.4\n",
        "odd": "0 0.1 0.2 0.5 0.1 0.4\n",
    }
    root = yolo_set(tmp_path, labels, {"names": ["a", "b"]})
    samples = YoloSource(path=root, on_error="skip").samples()
    np.testing.assert_allclose(
        by_file(samples, "boxes")["a.jpg"], [[10, 5, 50, 40], [40, 15, 60, 35]]
    )
    np.testing.assert_array_equal(by_file(samples, "box_labels")["a.jpg"], [0, 1])
    assert "keypoints" not in samples.columns
    reason = samples.rejected[str(root / "images" / "odd.jpg")]
    assert (
        f"{root / 'labels' / 'odd.txt'}:1: expected 'class cx cy w h' (5 numbers) or a segment"
        in reason
    )


# ---------------------------------------------------------------- Pascal VOC


def voc_xml(filename: str | None, objects: list[tuple[str, tuple]], size=(30, 20)) -> str:
    named = f"<filename>{filename}</filename>" if filename else ""
    parts = "".join(
        f"<object><name>{name}</name><difficult>0</difficult><bndbox>"
        + "".join(f"<{k}>{v}</{k}>" for k, v in zip(CORNERS, box, strict=True))
        + "</bndbox><part><name>hand</name></part></object>"
        for name, box in objects
    )
    w, h = size
    return (
        f'<?xml version="1.0"?>\n<annotation><folder>VOC2012</folder>{named}'
        f"<size><width>{w}</width><height>{h}</height><depth>3</depth></size>{parts}"
        "</annotation>"
    )


@pytest.fixture
def voc(tmp_path: Path) -> Path:
    for name in ("2007_000001.jpg", "other.jpg", "stray.jpg", "broken.jpg", "odd.jpg"):
        write_image(tmp_path / "JPEGImages" / name, 30, 20)
    xml = tmp_path / "Annotations"
    xml.mkdir()
    (xml / "2007_000001.xml").write_text(
        voc_xml("2007_000001.jpg", [("person", (1, 1, 30, 20)), ("bird", (5, 6, 10.5, 12))])
    )
    (xml / "second.xml").write_text(voc_xml("other.jpg", []))
    (xml / "broken.xml").write_text("<annotation><object>")
    (xml / "odd.xml").write_text(voc_xml(None, [("bird", (20, 5, 40, 10))]))
    (xml / "ghost.xml").write_text(voc_xml("ghost.jpg", [("bird", (2, 2, 5, 5))]))
    return tmp_path


def test_voc_boxes_from_one_based_corners(voc: Path) -> None:
    samples = VocSource(path=voc, on_error="skip").samples()
    assert samples.class_names == ["bird", "person"]
    assert [Path(p).name for p in samples.paths] == ["2007_000001.jpg", "other.jpg"]
    boxes, labels = by_file(samples, "boxes"), by_file(samples, "box_labels")
    # (1, 1, 30, 20) are 1-based inclusive pixels: the whole 30x20 image
    np.testing.assert_array_equal(boxes["2007_000001.jpg"], [[0, 0, 30, 20], [4, 5, 10.5, 12]])
    np.testing.assert_array_equal(labels["2007_000001.jpg"], [1, 0])
    assert boxes["other.jpg"].shape == (0, 4)
    assert "names it" in samples.ignored[str(voc / "JPEGImages" / "stray.jpg")]
    rejected = samples.rejected
    assert "not valid XML" in rejected[str(voc / "Annotations" / "broken.xml")]
    odd = rejected[str(voc / "JPEGImages" / "odd.jpg")]  # named by the XML's stem
    assert str(voc / "Annotations" / "odd.xml") in odd and "object 1 (bird)" in odd
    assert "outside the 30x20 image" in odd
    ghost = rejected[str(voc / "JPEGImages" / "ghost.jpg")]
    assert str(voc / "Annotations" / "ghost.xml") in ghost and "cannot read image file" in ghost
    assert "has no annotations" in samples.notes[str(voc / "JPEGImages" / "other.jpg")]


def test_voc_two_files_naming_one_image_are_refused(voc: Path) -> None:
    """Which file's boxes the image has would be a guess; the other image would never train."""
    (voc / "Annotations" / "twin.xml").write_text(voc_xml("other.jpg", [("bird", (2, 2, 5, 5))]))
    for on_error in ("raise", "skip"):
        with pytest.raises(DataError, match="both name the image") as raised:
            VocSource(path=voc, on_error=on_error).samples()
        named = str(raised.value)
        assert all(
            str(voc / f) in named for f in ("Annotations/second.xml", "Annotations/twin.xml")
        )


def test_voc_classes_given(voc: Path) -> None:
    for name in ("broken", "odd", "ghost"):
        (voc / "Annotations" / f"{name}.xml").unlink()
    samples = VocSource(path=voc, classes=["person", "bird", "cat"]).samples()
    assert samples.class_names == ["person", "bird", "cat"]
    np.testing.assert_array_equal(by_file(samples, "box_labels")["2007_000001.jpg"], [0, 1])
    with pytest.raises(DataError, match=r"object 2 \(bird\): class 'bird' is not in"):
        VocSource(path=voc, classes=["person"]).samples()


# ---------------------------------------------------------------- all three


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_detection_dataset(tmp_path_factory.mktemp("det") / "d", count=12, seed=4)


def demo_sources(root: Path, **fields) -> list:
    return [
        CocoSource(annotations=root / "annotations.json", images=root / "images", **fields),
        YoloSource(path=root, **fields),
        VocSource(path=root, **fields),
    ]


def test_the_demo_set_reads_alike_in_every_form(demo: Path) -> None:
    coco, *others = (source.samples() for source in demo_sources(demo))
    assert coco.class_names == list(CLASS_NAMES) and len(coco) == 12
    assert not coco.rejected and not coco.notes
    assert sum(len(b) for b in coco.columns["boxes"]) >= 12
    for other in others:
        assert other.class_names == coco.class_names and not other.rejected
        assert [Path(p).name for p in other.paths] == [Path(p).name for p in coco.paths]
        for a, b in zip(coco.columns["boxes"], other.columns["boxes"], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-3)
        for a, b in zip(coco.columns["box_labels"], other.columns["box_labels"], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("num_shards", [2, 3, 5])
def test_shards_of_each_box_source_partition_it(demo: Path, num_shards: int) -> None:
    for source in demo_sources(demo):
        whole = source.samples()
        expected = dict(zip(whole.paths, whole.columns["boxes"], strict=True))
        seen: list[str] = []
        for shard_id in range(num_shards):
            part = source.model_copy(update={"shard_id": shard_id, "num_shards": num_shards})
            shard = part.samples()
            seen += shard.paths
            for path, boxes in zip(shard.paths, shard.columns["boxes"], strict=True):
                np.testing.assert_array_equal(boxes, expected[path])  # boxes follow samples
        assert sorted(seen) == sorted(whole.paths) and len(seen) == len(set(seen))


def test_configs_take_the_box_sources(demo: Path) -> None:
    for source in demo_sources(demo):
        config = load_config({"source": source.model_dump(mode="json"), "image_size": 32})
        assert config.source.type == source.type and config.source.detection
        moved = source.with_path(demo)  # the CLI's --data: the demo set's layout
        assert moved.samples().paths == source.samples().paths


# ---------------------------------------------------------------- daliaug check


@pytest.mark.slow
def test_check_names_each_bad_annotation(coco: Path, yolo: Path, tmp_path: Path) -> None:
    daliaug = partial(run_cli, cache=tmp_path / "cache")
    config = coco / "coco.yaml"
    source = {"type": "coco", "annotations": str(coco / "instances.json")}
    source["images"] = str(coco / "images")
    config.write_text(yaml.safe_dump({"source": source, "image_size": 32}))
    result = daliaug("check", config)
    assert result.returncode == 3, result.stderr
    out = " ".join((result.stdout + result.stderr).split())
    annotations = str(coco / "instances.json")
    assert f"{annotations}: annotation 104 (image_id 13): category_id 7" in out
    assert "annotation 105" in out and "annotation 106" in out and "99x32" in out
    assert f"{coco / 'images' / 'empty.jpg'}: {annotations}: image id 12 has no annotations" in out
    assert "1 iscrowd annotations left out" in out and "Traceback" not in result.stderr
    config = yolo / "yolo.yaml"
    source = {"type": "yolo", "path": str(yolo)}
    config.write_text(yaml.safe_dump({"source": source, "image_size": 32}))
    result = daliaug("check", config)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 3 and f"{yolo / 'labels' / 'bad.txt'}:1" in out
    assert f"{yolo / 'images' / 'bare.jpg'}: no label file" in out
    assert f"{yolo / 'labels' / 'orphan.txt'}: a label file without an image" in out
    pose = yolo_set(
        tmp_path / "pose", {"a": "0 0.5 0.5 0.2 0.4 0.5\n"}, {"names": ["p"], "kpt_shape": [1, 3]}
    )
    (pose / "pose.yaml").write_text(
        yaml.safe_dump({"source": {"type": "yolo", "path": str(pose)}, "image_size": 32})
    )
    result = daliaug("check", pose / "pose.yaml")
    out = " ".join((result.stdout + result.stderr).split())
    assert (
        result.returncode == 3
        and f"{pose / 'labels' / 'a.txt'}:1: expected 'class cx cy w h' and 1 keypoints" in out
    )


@pytest.mark.parametrize("check", ["full", "background"])
def test_numbers_beyond_any_image_fail_their_sample(tmp_path: Path, check: str) -> None:
    """A declared size or class index too large for any column (or a negative size) fails
    its own sample, named, whether the listing reads the headers or leaves them to the
    background check; the other samples are listed."""
    root = write_detection_dataset(tmp_path / "d", count=4, seed=6)
    coco = json.loads((root / "annotations.json").read_text())
    coco["images"][1]["height"] = 3_000_000_000
    coco["images"][2]["width"] = -5
    (root / "annotations.json").write_text(json.dumps(coco))
    source = CocoSource(
        annotations=root / "annotations.json", images=root / "images", on_error="skip"
    )
    samples = source.model_copy(update={"check": check}).list_samples()
    assert len(samples) == 2 and samples.declared == (check == "background")
    names = [str(root / "images" / coco["images"][k]["file_name"]) for k in (1, 2)]
    assert sorted(samples.rejected) == sorted(names)
    assert "3000000000" in samples.rejected[names[0]] and "-5" in samples.rejected[names[1]]
    yolo = yolo_set(
        tmp_path / "y",
        {"a": "3000000000 0.5 0.5 0.2 0.2\n", "b": "0 0.5 0.5 0.2 0.2\n"},
        {"names": ["x"]},
    )
    listed = YoloSource(path=yolo, on_error="skip").list_samples()
    assert len(listed) == 1 and "3000000000" in listed.rejected[str(yolo / "images" / "a.jpg")]


def test_a_voc_set_whose_every_file_fails_is_named(tmp_path: Path) -> None:
    """No XML that parses: no sample listed, and ``samples`` names the files."""
    root = write_detection_dataset(tmp_path / "d", count=2, seed=7)
    for xml in (root / "Annotations").glob("*.xml"):
        xml.write_text("<annotation><object>")
    source = VocSource(path=root)
    assert len(source.list_samples()) == 0
    with pytest.raises(DataError, match="is not valid XML"):
        source.samples()
