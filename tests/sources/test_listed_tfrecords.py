"""TFRecords listed as columns (``source.listed``, :mod:`daliaug.sources.record_listing`): the
batches of the image files the records were written from, byte for byte, on every engine that
reads column samples, batch stages included; a later start reads no record; each bad record
named by file and number, or left out; records written by TensorFlow's own writer."""

from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from daliaug import make_dataset
from daliaug.cli import main
from daliaug.config import load_config
from daliaug.errors import DataError, DataWarning
from daliaug.sources import record_listing
from tests.helpers import joined_epoch, structured_image

CHAIN = [
    {"type": "random_resized_crop"},
    {"type": "color_jitter", "brightness": 0.3, "saturation": 0.3},
    {"type": "mixup", "alpha": 0.4},
]
"""Warp, colour and a batch stage (which streamed records cannot have)."""


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))


def config(source: dict[str, Any], backend: str) -> dict[str, Any]:
    return {
        "source": source,
        "image_size": 24,
        "batch_size": 5,
        "seed": 7,
        "shuffle": True,
        "backend": backend,
        "label_mode": "categorical",
        "transforms": CHAIN,
    }


@pytest.mark.parametrize("backend", ["opencv", "cpu"])
def test_listed_records_give_the_batches_of_their_image_files(
    numbered_list: Path, numbered_records: Path, backend: str
) -> None:
    """The 23 numbered images as a file list and as 3 TFRecord files (``daliaug convert``'s)
    listed as columns: the same samples in the same order, so two epochs' batches are byte for
    byte the same, MixUp included, on OpenCV and DALI."""
    files = make_dataset(
        config({"type": "file_list", "path": str(numbered_list)}, backend), framework="numpy"
    )
    source = {"type": "tfrecord", "path": str(numbered_records), "listed": True}
    records = make_dataset(config(source, backend), framework="numpy")
    assert len(records) == len(files) == 5
    for _ in range(2):
        got, want = joined_epoch(records), joined_epoch(files)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_a_later_start_reads_no_record_and_a_changed_file_is_read_anew(
    numbered_records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing is kept per file's identity: a second start reads no file, a file touched
    since (its time changed) is read again, alone; the batches stay the same."""
    read: list[str] = []
    real = record_listing.list_file

    def counted(file: str, *args: Any, **kwargs: Any) -> Any:
        read.append(Path(file).name)
        return real(file, *args, **kwargs)

    monkeypatch.setattr(record_listing, "list_file", counted)
    folder = tmp_path / "records"
    folder.mkdir()
    for file in sorted(numbered_records.iterdir()):
        (folder / file.name).write_bytes(file.read_bytes())
    source = {"type": "tfrecord", "path": str(folder), "listed": True}
    first = joined_epoch(make_dataset(config(source, "opencv"), framework="numpy"))
    assert len(read) == 3
    again = joined_epoch(make_dataset(config(source, "opencv"), framework="numpy"))
    assert len(read) == 3
    touched = sorted(folder.glob("*.tfrecord"))[1]
    os.utime(touched, ns=(1, 1))
    last = joined_epoch(make_dataset(config(source, "opencv"), framework="numpy"))
    assert read[3:] == [touched.name]
    for batch in (again, last):
        np.testing.assert_array_equal(batch[0], first[0])


def png(seed: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(structured_image(20, 24, seed=seed)).save(out, format="PNG")
    return out.getvalue()


def example(**features: tf.train.Feature) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def image_feature(data: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))


def label_feature(value: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


@pytest.fixture
def bad_records(tmp_path: Path) -> Path:
    """Three files by TensorFlow's writer: records 0 and 5 of ``a`` good, 1 without its image,
    2 a PNG cut after its header, 3 labelled past the 4 classes, 4 no ``Example``; ``b`` one
    good record and a second cut short by hand; ``c`` one good record and a header whose
    length runs a terabyte past the file's end; a text file beside them."""
    folder = tmp_path / "bad"
    folder.mkdir()
    key, label = "image/encoded", "image/class/label"
    with tf.io.TFRecordWriter(str(folder / "a.tfrecord")) as writer:
        writer.write(example(**{key: image_feature(png(0)), label: label_feature(1)}))
        writer.write(example(**{label: label_feature(2)}))
        writer.write(example(**{key: image_feature(png(1)[:60]), label: label_feature(0)}))
        writer.write(example(**{key: image_feature(png(2)), label: label_feature(9)}))
        writer.write(b"\xff\xff not an example")
        writer.write(example(**{key: image_feature(png(3)), label: label_feature(3)}))
    with tf.io.TFRecordWriter(str(folder / "b.tfrecord")) as writer:
        writer.write(example(**{key: image_feature(png(4)), label: label_feature(2)}))
        writer.write(example(**{key: image_feature(png(5)), label: label_feature(2)}))
    cut = folder / "b.tfrecord"
    cut.write_bytes(cut.read_bytes()[:-40])
    with tf.io.TFRecordWriter(str(folder / "c.tfrecord")) as writer:
        writer.write(example(**{key: image_feature(png(6)), label: label_feature(0)}))
    with open(folder / "c.tfrecord", "ab") as f:  # a length past the file's end, by hand
        f.write(struct.pack("<Q", 1 << 40) + bytes(4) + b"no record this long")
    (folder / "notes.txt").write_text("not a record")
    return folder


def test_each_bad_record_is_named_or_left_out(bad_records: Path) -> None:
    """``on_error: raise``: a DataError naming the records by file and number, with why;
    ``skip``: the 4 good records alone; the text file named as ignored."""
    source = {"type": "tfrecord", "path": str(bad_records), "listed": True, "num_classes": 4}
    plain = config(source, "opencv") | {"transforms": [], "label_mode": "int", "shuffle": False}
    with pytest.raises(DataError, match=r"6 of 10 files") as raised:
        make_dataset(plain, framework="numpy")
    a, b, c = (bad_records / f"{name}.tfrecord" for name in "abc")
    assert f"record {a}#1: no image under 'image/encoded'" in str(raised.value)
    assert f"cannot decode the image of record {a}#2" in str(raised.value)
    skipping = plain | {"source": source | {"on_error": "skip"}}
    samples = load_config(skipping).source.samples()
    assert len(samples) == 4 and samples.labels.tolist() == [1, 3, 2, 0]
    assert set(samples.rejected) == {f"{a}#{k}" for k in (1, 2, 3, 4)} | {f"{b}#1", f"{c}#1"}
    assert "label 9 is not one of the 4 classes" in samples.rejected[f"{a}#3"]
    assert "not a tf.train.Example" in samples.rejected[f"{a}#4"]
    assert (
        "is truncated" in samples.rejected[f"{b}#1"]
        and "is truncated" in samples.rejected[f"{c}#1"]
    )
    assert list(samples.ignored) == [str(bad_records / "notes.txt")]
    with pytest.warns(DataWarning, match="left out 6 unusable files"):
        assert joined_epoch(make_dataset(skipping, framework="numpy"))[1].tolist() == [1, 3, 2, 0]


def test_a_state_over_records_since_changed_is_refused(
    numbered_records: Path, tmp_path: Path
) -> None:
    """The state's fingerprint holds each file's identity (a local file's size and time): a
    state taken mid-epoch resumes the same records, and is refused once a file is rewritten."""
    folder = tmp_path / "records"
    folder.mkdir()
    for file in sorted(numbered_records.iterdir()):
        (folder / file.name).write_bytes(file.read_bytes())
    source = {"type": "tfrecord", "path": str(folder), "listed": True}
    made = config(source, "opencv")
    whole = [np.asarray(b[0]) for b in make_dataset(made, framework="numpy")]
    state = make_dataset(made, framework="numpy").stream.state(0, 2)
    rest = [np.asarray(b[0]) for b in make_dataset(made, framework="numpy", state=state)]
    assert len(rest) == 3 and all(
        np.array_equal(a, b) for a, b in zip(rest, whole[2:], strict=True)
    )
    os.utime(sorted(folder.glob("*.tfrecord"))[2], ns=(1, 1))
    with pytest.raises(DataError, match="samples changed"):
        make_dataset(made, framework="numpy", state=state)


def test_two_splits_in_one_folder_share_its_listing_file(
    numbered_records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``daliaug check CONFIG --write-listings`` for a training and a validation split whose
    records share a folder: its listing file keeps both, and a new host's start of either
    reads no record."""
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "daliaug.json").write_bytes((numbered_records / "daliaug.json").read_bytes())
    for i, file in enumerate(sorted(numbered_records.glob("*.tfrecord"))):
        name = f"{'val' if i == 2 else 'train'}-{i}.tfrecord"
        (folder / name).write_bytes(file.read_bytes())
    configs = []
    for split in ("train", "val"):
        source = {"type": "tfrecord", "path": str(folder / f"{split}-*"), "listed": True}
        configs.append(config(source, "opencv"))
        path = tmp_path / f"{split}.json"
        path.write_text(json.dumps(configs[-1]))
        assert main(["check", str(path), "--write-listings"]) == 0
    listed = json.loads((folder / "daliaug-listing.json").read_text())["listing"]
    assert sorted(listed) == ["train-0.tfrecord", "train-1.tfrecord", "val-2.tfrecord"]
    read: list[str] = []
    real = record_listing.list_file
    monkeypatch.setattr(
        record_listing, "list_file", lambda *a, **k: read.append(a) or real(*a, **k)
    )
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "new-host"))
    sizes = [len(joined_epoch(make_dataset(c, framework="numpy"))[1]) for c in configs]
    assert read == [] and sum(sizes) == 23
