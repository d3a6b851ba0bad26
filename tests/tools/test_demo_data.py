"""Tests for the procedural demo datasets in :mod:`daliaug.tools.demo_data`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from daliaug.cache import default_cache_dir
from daliaug.tools import demo_data
from daliaug.tools.demo_data import (
    CLASS_NAMES,
    render_sample,
    write_classification_dataset,
    write_segmentation_dataset,
)

PER_CLASS = 8  # with png_fraction 0.25: two PNGs per class
SIZE = (64, 64)


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _edge_contrast(image: np.ndarray, mask: np.ndarray) -> float:
    """Distance between the mean colours inside ``mask`` and in a 3-pixel ring around it."""
    inside = mask > 0
    grown = inside
    for _ in range(3):
        p = np.pad(grown, 1)
        grown = p[1:-1, 1:-1] | p[:-2, 1:-1] | p[2:, 1:-1] | p[1:-1, :-2] | p[1:-1, 2:]
    ring = grown & ~inside
    return float(np.linalg.norm(image[inside].mean(axis=0) - image[ring].mean(axis=0)))


@pytest.fixture(scope="module")
def classification(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data") / "classification"
    return write_classification_dataset(root, per_class=PER_CLASS, size=SIZE, seed=3)


@pytest.fixture(scope="module")
def segmentation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data") / "segmentation"
    return write_segmentation_dataset(root, count=12, size=SIZE, seed=3)


def test_class_names_are_sorted_so_indices_match_sorted_folders() -> None:
    assert list(CLASS_NAMES) == sorted(CLASS_NAMES)
    assert len(set(CLASS_NAMES)) == len(CLASS_NAMES) >= 4


def test_classification_layout(classification: Path) -> None:
    folders = sorted(p.name for p in classification.iterdir() if p.is_dir())
    assert folders == list(CLASS_NAMES)
    for name in CLASS_NAMES:
        files = sorted((classification / name).iterdir())
        assert [f.stem for f in files] == [f"{name}_{i:05d}" for i in range(PER_CLASS)]
        suffixes = [f.suffix for f in files]
        assert suffixes.count(".png") == 2
        assert suffixes.count(".jpg") == PER_CLASS - 2
        for f in files:
            with Image.open(f) as image:
                assert image.format == ("PNG" if f.suffix == ".png" else "JPEG")
                assert (image.mode, image.size) == ("RGB", SIZE[::-1])
    assert (classification / ".daliaug-demo.json").is_file()
    assert not list(classification.parent.glob(".*tmp*")), "temporary folder left behind"


def test_segmentation_layout(segmentation: Path) -> None:
    stems = {f.stem for f in (segmentation / "images").iterdir()}
    assert len(stems) == 12
    assert {f.stem for f in (segmentation / "masks").iterdir()} == stems
    assert {f.stem for f in (segmentation / "masks_rgb").iterdir()} == stems
    suffixes = {f.suffix for f in (segmentation / "images").iterdir()}
    assert suffixes == {".jpg", ".png"}

    lines = (segmentation / "classes.csv").read_text().splitlines()
    assert lines[0] == "name,r,g,b"
    rows = [line.split(",") for line in lines[1:]]
    assert [row[0] for row in rows] == ["background", *CLASS_NAMES]
    palette = np.array([[int(c) for c in row[1:]] for row in rows], dtype=np.uint8)
    assert len(np.unique(palette, axis=0)) == len(palette)

    seen: set[int] = set()
    for stem in stems:
        with Image.open(segmentation / "masks" / f"{stem}.png") as image:
            assert image.mode == "L"
            mask = np.asarray(image)
        assert mask.shape == SIZE
        assert 0 < mask.max() <= len(CLASS_NAMES)
        seen |= set(np.unique(mask).tolist())
        np.testing.assert_array_equal(
            _pixels(segmentation / "masks_rgb" / f"{stem}.png"), palette[mask]
        )
    assert seen == set(range(len(CLASS_NAMES) + 1))


def test_render_sample_mask_and_visibility() -> None:
    rng = np.random.default_rng(0)
    for label in range(len(CLASS_NAMES)):
        for _ in range(5):
            image, mask = render_sample(rng, (80, 96), label)
            assert image.shape == (80, 96, 3) and image.dtype == np.uint8
            assert mask.shape == (80, 96) and mask.dtype == np.uint8
            assert set(np.unique(mask).tolist()) == {0, label + 1}
            assert _edge_contrast(image.astype(float), mask) > 40, "shape not visible"
            assert 0.02 < (mask > 0).mean() < 0.6


def test_segmentation_masks_follow_the_shapes(segmentation: Path) -> None:
    """Colours change sharply at the mask outlines, not at the outlines of a shifted mask."""
    true, shifted = [], []
    for mask_path in (segmentation / "masks").iterdir():
        image_path = next((segmentation / "images").glob(f"{mask_path.stem}.*"))
        image, mask = _pixels(image_path).astype(float), _pixels(mask_path)
        true.append(_edge_contrast(image, mask))
        shifted.append(_edge_contrast(image, np.roll(mask, (SIZE[0] // 2, SIZE[1] // 2), (0, 1))))
    assert np.median(true) > 50
    assert (np.array(true) > np.array(shifted)).mean() >= 0.9


@pytest.mark.parametrize("size", [(64, 64), (375, 500)])
def test_images_are_textured_everywhere(size: tuple[int, int]) -> None:
    rng = np.random.default_rng(1)
    for label in range(len(CLASS_NAMES)):
        image, _ = render_sample(rng, size, label)
        h, w = size[0] // 8 * 8, size[1] // 8 * 8
        blocks = image[:h, :w].astype(float).reshape(h // 8, 8, w // 8, 8, 3)
        flat = blocks.std(axis=(1, 3)).max(axis=-1) < 1.0
        assert flat.mean() < 0.01


def test_written_jpegs_are_textured(classification: Path) -> None:
    for path in classification.rglob("*.jpg"):
        gray = _pixels(path).astype(float).mean(axis=-1)
        blocks = gray.reshape(SIZE[0] // 8, 8, SIZE[1] // 8, 8)
        assert (blocks.std(axis=(1, 3)) < 1.0).mean() < 0.02


def test_same_seed_same_data(classification: Path, tmp_path: Path) -> None:
    again = write_classification_dataset(tmp_path / "again", per_class=PER_CLASS, size=SIZE, seed=3)
    for a, b in zip(_files(classification), _files(again), strict=True):
        assert a.relative_to(classification) == b.relative_to(again)
        if a.suffix == ".png":
            np.testing.assert_array_equal(_pixels(a), _pixels(b))
    image_a, mask_a = render_sample(np.random.default_rng(5), SIZE, 2)
    image_b, mask_b = render_sample(np.random.default_rng(5), SIZE, 2)
    np.testing.assert_array_equal(mask_a, mask_b)
    np.testing.assert_array_equal(image_a, image_b)
    _, mask_c = render_sample(np.random.default_rng(6), SIZE, 2)
    assert not np.array_equal(mask_a, mask_c)


def test_segmentation_same_seed_same_masks(segmentation: Path, tmp_path: Path) -> None:
    again = write_segmentation_dataset(tmp_path / "again", count=12, size=SIZE, seed=3)
    for a in (segmentation / "masks").iterdir():
        np.testing.assert_array_equal(_pixels(a), _pixels(again / "masks" / a.name))


def test_idempotent_and_rewrites_when_parameters_change(tmp_path: Path) -> None:
    root = tmp_path / "data"
    write_classification_dataset(root, per_class=4, size=(32, 32))
    before = {p: p.stat().st_mtime_ns for p in _files(root)}
    assert write_classification_dataset(root, per_class=4, size=(32, 32)) == root
    assert {p: p.stat().st_mtime_ns for p in _files(root)} == before

    write_classification_dataset(root, per_class=5, size=(32, 32))
    assert len(list(root.rglob("*_*.*"))) == 5 * len(CLASS_NAMES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_refuses_to_overwrite_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        write_segmentation_dataset(tmp_path / "mine", count=2, size=(32, 32))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def failing_save(*args: object, **kwargs: object) -> None:
        calls.append(args)
        if len(calls) > 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(demo_data, "_save", failing_save)
    with pytest.raises(KeyboardInterrupt):
        write_classification_dataset(tmp_path / "data", per_class=4, size=(32, 32))
    assert list(tmp_path.iterdir()) == []


def test_varying_sizes_stay_in_range(tmp_path: Path) -> None:
    root = write_classification_dataset(
        tmp_path / "data", per_class=4, size=((40, 60), (50, 80)), seed=1
    )
    sizes = set()
    for path in _files(root):
        if path.suffix in (".jpg", ".png"):
            with Image.open(path) as image:
                w, h = image.size
            assert 40 <= h <= 60 and 50 <= w <= 80
            sizes.add((h, w))
    assert len(sizes) > 8


def test_bad_size_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="size"):
        write_classification_dataset(tmp_path / "data", per_class=1, size=(1, 2, 3))  # type: ignore[arg-type]


@pytest.mark.parametrize("label", [-1, len(CLASS_NAMES)])
def test_bad_label_is_rejected(label: int) -> None:
    with pytest.raises(ValueError, match="labels"):
        render_sample(np.random.default_rng(0), SIZE, label)


def _shape_features(mask: np.ndarray) -> np.ndarray:
    """Rotation- and scale-invariant outline features: radial histogram and fill ratio."""
    ys, xs = np.nonzero(mask)
    r = np.hypot(ys - ys.mean(), xs - xs.mean())
    histogram, _ = np.histogram(r / r.max(), bins=8, range=(0, 1))
    return np.append(histogram / len(r), len(r) / (np.pi * r.max() ** 2))


def test_classes_are_separable_by_shape() -> None:
    """A nearest-centroid classifier on invariant mask features tells the classes apart."""
    rng = np.random.default_rng(2)
    labels = np.tile(np.arange(len(CLASS_NAMES)), 40)
    features = np.stack([_shape_features(render_sample(rng, SIZE, int(k))[1]) for k in labels])
    train, test = slice(0, 80), slice(80, None)
    centroids = np.stack([features[train][labels[train] == k].mean(0) for k in range(4)])
    distances = np.linalg.norm(features[test, None] - centroids[None], axis=-1)
    accuracy = (distances.argmin(axis=1) == labels[test]).mean()
    assert accuracy > 0.85


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("DALIAUG_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "daliaug"
