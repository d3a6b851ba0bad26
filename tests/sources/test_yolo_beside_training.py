"""YOLO folders checked beside training (``source.check: background``): the listing reads no
image header and, where a class file names the classes, no label file either. The check reads
each image's label file with its header, as the batch that holds it comes, and holds its boxes
to the image's size. Without a class file the listing reads every label file (the class count
comes from them) and keeps the boxes as fractions. Either way every batch, message and sample
left out is the one a listing that read every file gives."""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import daliaug
import daliaug.sources.background as background
import daliaug.sources.kept_samples as kept
import daliaug.sources.yolo as yolo
import daliaug.sources.yolo_labels as yolo_labels
from daliaug.errors import ConfigError, DataError, DataWarning
from daliaug.resume import source_fingerprint
from daliaug.sources.yolo_labels import LabelColumn
from tests.helpers import config_for, prepared, structured_image

NAMED = [True, False]
"""With a class file (``data.yaml``: the label files read by the check), and without (read
by the listing)."""
LINE = "0 0.5 0.5 0.6 0.7 0.4 0.4 2 0.6 0.6 2\n"
"""A label line of a box and its two keypoints, inside any image."""


def yolo_set(root: Path, widths: list[int], line: str, named: bool = True) -> Path:
    """A YOLO set of images ``widths`` wide and 40 high, image ``i`` labelled ``line`` and a
    box of its own: with ``named``, a pose set (two keypoints a box) whose ``data.yaml``
    names two classes; else the boxes alone, with no class file."""
    (root / "labels").mkdir(parents=True)
    (root / "images").mkdir()
    for i, width in enumerate(widths):
        pixels = structured_image(40, width, seed=i)
        Image.fromarray(pixels).save(root / "images" / f"{i:02d}.jpg", quality=90)
        own = f"1 0.{3 + i % 5} 0.5 0.2 0.3 0.{2 + i % 6} 0.4 2 0.35 0.6 1\n"
        lines = (line + own).splitlines()
        if not named:
            lines = [" ".join(text.split()[:5]) for text in lines]
        (root / "labels" / f"{i:02d}.txt").write_text("\n".join(lines) + "\n")
    if named:
        data = {"names": ["a", "b"], "kpt_shape": [2, 3], "flip_idx": [1, 0]}
        (root / "data.yaml").write_text(json.dumps(data))
    return root


def yolo_config(
    root: Path, check: str, on_error: str = "raise", backend: str = "opencv"
) -> daliaug.Config:
    chain = [{"type": "random_resized_crop", "scale": [0.5, 1.0]}, {"type": "flip"}]
    source = {"type": "yolo", "path": str(root), "check": check, "on_error": on_error}
    return config_for(
        None, source=source, backend=backend, transforms=chain, image_size=24, batch_size=3
    )


def epoch(made: daliaug.Config, samples: Any = None, framework: str = "numpy") -> list[Any]:
    return list(daliaug.make_dataset(made, samples=samples, framework=framework))


@pytest.fixture
def label_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The label files read, by the listing or the check, as they are read."""
    read: list[str] = []
    for module in (yolo, yolo_labels):
        real = module.read_text
        monkeypatch.setattr(module, "read_text", lambda p, *a, r=real: read.append(p) or r(p, *a))
    return read


@pytest.fixture
def headers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The image headers the check reads."""
    opened: list[str] = []
    real = background.header_and_key
    monkeypatch.setattr(
        background, "header_and_key", lambda p, keyed: opened.append(p) or real(p, keyed)
    )
    return opened


def assert_same_batches(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for (images, targets), (want_images, want_targets) in zip(got, want, strict=True):
        np.testing.assert_array_equal(images, want_images)
        assert targets.keys() == want_targets.keys()
        for name in want_targets:
            np.testing.assert_array_equal(targets[name], want_targets[name])


@pytest.mark.parametrize("named", NAMED)
def test_the_boxes_of_a_batch_are_read_as_it_comes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    label_reads: list[str],
    headers: list[str],
    named: bool,
) -> None:
    """The listing reads no header, and with a class file no label file; the check reads
    each as its batch comes. Every batch (pixels, boxes, keypoints, labels; an image with an
    empty label file, one with none) is the one a listing that read every file gives, through
    a crop and a flip, and ``daliaug preview`` draws each original's boxes where that listing
    places them."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    widths = [40, 64, 90, 33, 120, 57, 71]
    root = yolo_set(tmp_path / "yolo", widths, LINE, named)
    (root / "labels" / "03.txt").write_text("")  # (no box)
    (root / "labels" / "05.txt").unlink()  # (no label file: no box)
    labels = sorted(str(p) for p in (root / "labels").glob("*.txt"))
    full = epoch(yolo_config(root, "full"))
    label_reads.clear()
    made = yolo_config(root, "background")
    samples = prepared(made).samples
    assert samples.normalised and not samples.sized and headers == []
    assert isinstance(samples.columns["boxes"], LabelColumn) == named
    assert sorted(label_reads) == ([] if named else labels)
    beside = epoch(made, samples)
    assert set(headers) == set(samples.paths)  # (read by the check, each as its batch came)
    assert sorted(set(label_reads)) == labels
    assert len(beside) == 3
    assert_same_batches(beside, full)
    from daliaug.tools.preview import augmented_versions  # (its originals' own boxes)

    drawn = [augmented_versions(yolo_config(root, c), 4, 1).marks for c in ("full", "background")]
    for shown, want_shown in zip(*drawn, strict=True):
        assert shown is not None and want_shown is not None
        np.testing.assert_array_equal(shown.boxes, want_shown.boxes)
        np.testing.assert_array_equal(shown.keypoints, want_shown.keypoints)


@pytest.mark.parametrize(("backend", "framework"), [("cpu", "tensorflow"), ("tf", "tensorflow")])
def test_label_files_read_late_feed_every_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, framework: str
) -> None:
    """DALI on the CPU and TensorFlow's ops, through tf.data, get the boxes the check read as
    each batch came: those of a listing that read every file."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = yolo_set(tmp_path / "yolo", [40, 64, 90, 33, 120], LINE)
    late = yolo_config(root, "background", backend=backend)
    assert isinstance(prepared(late).samples.columns["boxes"], LabelColumn)
    got = epoch(late, framework=framework)
    want = epoch(yolo_config(root, "full", backend=backend), framework=framework)
    assert len(got) == len(want) == 2
    for (_, targets), (_, want_targets) in zip(got, want, strict=True):
        for name in ("boxes", "labels", "keypoints"):
            np.testing.assert_array_equal(np.asarray(targets[name]), want_targets[name])


@pytest.mark.parametrize("named", NAMED)
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_box_its_image_cannot_hold_is_named_before_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_error: str, named: bool
) -> None:
    """A box 2% of its image's width past the left edge: within the 1-pixel tolerance of a
    40-pixel image, 4 pixels out of a 200-pixel one. A listing that read no header cannot
    tell; the check holds each image's boxes to its size, and names the wide image (and, where
    it read the label file, its line) before a batch holds it (``raise``), or leaves it out
    with every other sample given once (``skip``), as a listing that read the headers does."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    line = "0 0.28 0.5 0.6 0.5 0.3 0.5 2 0.5 0.5 2\n"
    root = yolo_set(tmp_path / "yolo", [40, 200, 40, 40, 40], line, named)
    wide = root / "images" / "01.jpg"
    made = yolo_config(root, "background", on_error)
    samples = prepared(made).samples
    assert samples.normalised and len(samples) == 5 and not samples.rejected
    where = f"{wide}: {root / 'labels' / '01.txt'}:1" if named else f"{wide}, box 1"
    said = f"{where}: box xyxy \\[-4, 10, 116, 30\\] lies outside the 200x40 image"
    if on_error == "raise":
        with pytest.raises(DataError, match=said):
            epoch(made, samples)
        return
    with pytest.warns(DataWarning, match=f"left out {wide}"):
        got = epoch(made, samples)
    with pytest.warns(DataWarning, match="left out 1 unusable files"):
        want = epoch(yolo_config(root, "full", on_error))
    with pytest.warns(DataWarning, match="left out 1 unusable files"):
        rejected = prepared(yolo_config(root, "full", "skip")).samples.rejected
    assert "lies outside the 200x40 image" in rejected[str(wide)]
    assert sum(len(batch[0]) for batch in got) == 4 == sum(len(batch[0]) for batch in want)
    assert boxes_of(got) == boxes_of(want)


def boxes_of(batches: list[Any]) -> list[bytes]:
    """Every sample's boxes, in an order of their own (a sample left out moves the rest)."""
    return sorted(np.asarray(b).tobytes() for batch in batches for b in batch[1]["boxes"])


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_bad_label_line_is_named_by_its_file_and_line_before_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_error: str
) -> None:
    """Label files the listing did not read, one with a line that is no object, one with a
    class the class file does not name: each named by its file and line before a batch holds
    its image (``raise``), or left out, every other sample given, with the boxes of a listing
    that read every label file and left both out (``skip``; the epoch keeps the batch count
    its listing gave, the last batch taking samples seen earlier)."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = yolo_set(tmp_path / "yolo", [40, 64, 90, 33, 120, 57, 71], LINE)
    typo, beyond = root / "labels" / "02.txt", root / "labels" / "05.txt"
    typo.write_text(LINE + "1 0.5 0.5 O.2 0.3 0.5 0.5 2 0.5 0.5 2\n")
    beyond.write_text(LINE.replace("0 ", "7 ", 1))
    made = yolo_config(root, "background", on_error)
    samples = prepared(made).samples
    assert len(samples) == 7 and not samples.rejected
    if on_error == "raise":
        with pytest.raises(DataError, match=f"{typo}:2: expected finite numbers, got '1 0.5"):
            epoch(made, samples)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = epoch(made, samples)
    said = [str(w.message) for w in caught if "left out" in str(w.message)]
    left = {m.group(1) for text in said if (m := re.search(r"left out (\S+) and", text))}
    assert left == {str(root / "images" / "02.jpg"), str(root / "images" / "05.jpg")}
    assert any(f"{beyond}:1: class 7 is not among the 2 classes of" in text for text in said)
    with pytest.warns(DataWarning, match="left out 2 unusable files"):
        want = epoch(yolo_config(root, "full", on_error))

    from daliaug.tools.preview import augmented_versions

    with pytest.warns(DataWarning, match="left out"):  # (the bad ones drawn without boxes)
        drawn = augmented_versions(made, 7, 1).marks
    assert [len(m.boxes) for m in drawn if m is not None] == [2, 2, 0, 2, 2, 0, 2]

    def in_order(batches: list[Any]) -> list[bytes]:
        return [np.asarray(b).tobytes() for batch in batches for b in batch[1]["boxes"]]

    assert len(got) == 3 and sum(len(batch[0]) for batch in want) == 5
    assert in_order(got)[:5] == in_order(want)  # (then two seen again, to keep 3 batches)


def test_shards_are_not_written_from_boxes_whose_images_sizes_were_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WebDataset shards hold boxes in pixels of each image: a YOLO listing that left the
    headers to the background check is refused by name (``daliaug convert`` lists with
    ``check: full``)."""
    from daliaug.tools.convert import write_webdataset

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    for named in NAMED:
        root = yolo_set(tmp_path / f"yolo-{named}", [40, 50], LINE, named)
        samples = yolo_config(root, "background").source.samples()
        assert samples.normalised
        with pytest.raises(ConfigError, match=r"listed without their sizes.*check: full"):
            write_webdataset(samples, tmp_path / "shards")


@pytest.mark.parametrize("named", NAMED)
def test_a_box_is_held_to_the_size_the_cache_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool, headers: list[str]
) -> None:
    """A later start takes each image's size from the check's cache, reading no header: a
    label file rewritten since so that a box leaves its 200-pixel image is still named before
    a batch holds it."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    line = "0 0.5 0.5 0.6 0.5 0.3 0.5 2 0.5 0.5 2\n"
    root = yolo_set(tmp_path / "yolo", [40, 200, 40], line, named)
    made = yolo_config(root, "background")
    samples = prepared(made).samples
    assert samples.background is not None
    epoch(made, samples)
    samples.background.begin()
    assert samples.background.done.wait(60) and not samples.background.bad
    label = root / "labels" / "01.txt"
    label.write_text(label.read_text().replace("0 0.5 0.5 0.6", "0 0.28 0.5 0.6"))
    headers.clear()
    again = prepared(made).samples
    wide = root / "images" / "01.jpg"
    with pytest.raises(DataError, match=f"{wide}(, box 1|: {label}:1): .* lies outside the 200x40"):
        epoch(made, again)
    assert headers == []


def test_a_later_start_reads_and_stats_no_label_file_and_trains_on_what_they_hold_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label_reads: list[str]
) -> None:
    """A later start takes the samples kept at the first, asking the file system about no
    label file and no image (a label file rewritten in place changes no folder: the check
    reads it as its batch comes). A label file rewritten since gives its new boxes, those of a
    listing that reads every file now; the samples' fingerprint (which a resumed run is held
    to) tells the two apart."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = yolo_set(tmp_path / "yolo", [40, 64, 90, 33, 120], LINE)
    made = yolo_config(root, "background")
    first = prepared(made).samples
    epoch(made, first)
    before = source_fingerprint(first)
    assert source_fingerprint(prepared(made).samples) == before
    label = root / "labels" / "03.txt"
    label.write_text(LINE.replace("0.5 0.5 0.6", "0.4 0.5 0.5"))
    os.utime(label, ns=(label.stat().st_atime_ns, label.stat().st_mtime_ns + 10**9))
    asked: list[str] = []
    real = kept.stat_keys
    monkeypatch.setattr(kept, "stat_keys", lambda paths: asked.extend(paths) or real(paths))
    label_reads.clear()
    later = prepared(made).samples
    assert asked == [str(root / "data.yaml")] and label_reads == []
    assert source_fingerprint(later) != before
    assert_same_batches(epoch(made, later), epoch(yolo_config(root, "full")))


def test_flip_indices_are_held_to_the_keypoints_the_data_declares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config's ``flip_indices`` that does not name the data's two keypoints is refused by
    name before any batch, whether the listing read the label files or the check reads them."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = yolo_set(tmp_path / "yolo", [40, 64], LINE)
    for check in ("full", "background"):
        made = yolo_config(root, check).model_copy(update={"flip_indices": [2, 1, 0]})
        with pytest.raises(ConfigError, match=r"flip_indices: \[2, 1, 0\] for 2 keypoints"):
            epoch(made)


def test_a_label_file_gone_after_the_listing_is_named_before_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A label file removed between the listing and its batch is named by the check, not
    trained on as an image without boxes."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = yolo_set(tmp_path / "yolo", [40, 64, 90, 33], LINE)
    made = yolo_config(root, "background")
    samples = prepared(made).samples
    gone = root / "labels" / "02.txt"
    gone.unlink()
    with pytest.raises(DataError, match=f"cannot read label file {gone}: No such file"):
        epoch(made, samples)
