"""The ``webdataset`` source: tar shards written here by hand (``tarfile``) or by ``daliaug
convert``, read locally and from a real S3 server (:mod:`tests.s3_server`), on both engines,
with the failures named."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from daliaug import make_dataset
from daliaug.config import load_config
from daliaug.errors import ConfigError, DataError, DataWarning
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.prepare import prepare_samples
from daliaug.sources import storage, webdataset
from tests.helpers import BACKENDS, joined_epoch, prepared, shards_config, structured_image
from tests.s3_server import Server, serving

COUNT = 14
"""Samples in the test shards: three shards of 5, 5 and 4, JPEG and PNG in turn."""


def encode(k: int) -> tuple[str, bytes]:
    """Image ``k`` of the test set: ``(extension, bytes)``."""
    out = io.BytesIO()
    fmt = "JPEG" if k % 2 else "PNG"
    Image.fromarray(structured_image(40 + k, 48 + 2 * k, seed=k)).save(out, format=fmt)
    return ("jpg" if k % 2 else "png"), out.getvalue()


def write_tar(path: Path, samples: dict[str, dict[str, bytes] | list[tuple[str, bytes]]]) -> Path:
    """A tar of ``key.ext`` members, in order (a list of ``(ext, data)`` may give an ``ext``
    twice)."""
    with tarfile.open(path, "w") as tar:
        for key, members in samples.items():
            for ext, data in members.items() if isinstance(members, dict) else members:
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def sample(k: int, **extra: bytes) -> dict[str, bytes]:
    ext, data = encode(k)
    return {ext: data, "cls": str(k).encode(), **extra}


def write_shards(root: Path) -> Path:
    """The test set as three shards in ``root`` (sample ``k``'s class is ``k``), and the
    same images as files listed in ``root/list.csv`` for comparison."""
    root.mkdir(parents=True, exist_ok=True)
    for s, (start, stop) in enumerate([(0, 5), (5, 10), (10, COUNT)]):
        write_tar(root / f"part-{s}.tar", {f"{k:06d}": sample(k) for k in range(start, stop)})
    files = root / "files"
    files.mkdir()
    lines = []
    for k in range(COUNT):
        ext, data = encode(k)
        (files / f"{k}.{ext}").write_bytes(data)
        lines.append(f"files/{k}.{ext},{k}")
    (root / "list.csv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_shards(tmp_path_factory.mktemp("wds"))


def wds_config(path: str | Path, tmp_path: Path, **fields):
    return shards_config("webdataset", path, tmp_path, **{"backend": "cpu", **fields})


@pytest.mark.parametrize("backend", BACKENDS)
def test_shards_give_the_batches_of_the_same_files(
    shards: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same images, in the same order, as shards and as listed files: the same batches
    (each sample's parameters depend on its position, not on where its bytes come from); a
    host that reads the shards writes their indexes."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))  # (a new host)
    config = wds_config(shards, tmp_path, backend=backend)
    files = load_config(
        {**config.model_dump(), "source": {"type": "file_list", "path": str(shards / "list.csv")}}
    )
    got_images, got_labels = joined_epoch(make_dataset(config))
    want_images, want_labels = joined_epoch(make_dataset(files))
    assert sorted(got_labels.tolist()) == list(range(COUNT))
    np.testing.assert_array_equal(got_labels, want_labels)
    np.testing.assert_array_equal(got_images, want_images)
    assert len(list((tmp_path / "idx").glob("part-*.idx"))) == 3


def test_every_sample_once_per_epoch_reshuffled(shards: Path, tmp_path: Path) -> None:
    loader = DaliLoader(wds_config(shards, tmp_path))
    orders = [joined_epoch(loader)[1].tolist() for _ in range(3)]
    assert all(sorted(order) == list(range(COUNT)) for order in orders)
    assert len({tuple(order) for order in orders}) == 3


def test_shards_split_each_sample_to_one_process(shards: Path, tmp_path: Path) -> None:
    seen = []
    for shard in range(3):
        source = {"shard_id": shard, "num_shards": 3}
        seen += joined_epoch(DaliLoader(wds_config(shards, tmp_path, source=source)))[1].tolist()
    assert sorted(seen) == list(range(COUNT))


def test_index_is_dalis(shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index a host that reads a shard writes is what DALI's own ``wds2idx`` writes, and
    DALI's WebDataset reader reads the images with it."""
    from nvidia.dali import fn, pipeline_def

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))  # (a new host)
    prepare_samples(wds_config(shards, tmp_path))
    (kept,) = (tmp_path / "idx").glob("part-0.tar.*.idx")
    theirs = tmp_path / "theirs.idx"
    wds2idx = Path(sys.executable).parent / "wds2idx"
    subprocess.run([str(wds2idx), str(shards / "part-0.tar"), str(theirs)], check=True, timeout=600)
    assert kept.read_text().split() == theirs.read_text().split()

    @pipeline_def(batch_size=5, num_threads=1, device_id=None)
    def read():
        return tuple(
            fn.readers.webdataset(
                paths=[str(shards / "part-0.tar")],
                index_paths=[str(kept)],
                ext=["jpg;png", "cls"],
                missing_component_behavior="error",
            )
        )

    pipe = read()
    pipe.build()
    images, classes = pipe.run()
    for k in range(5):
        assert bytes(np.asarray(images[k])) == encode(k)[1]
        assert bytes(np.asarray(classes[k])) == str(k).encode()


def test_listings_are_kept_until_a_shard_changes(
    shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied = tmp_path / "copied"
    shutil.copytree(shards, copied, ignore=shutil.ignore_patterns("files"))
    config = wds_config(copied, tmp_path)
    first = prepare_samples(config)
    real = webdataset.open_stream
    read = []
    monkeypatch.setattr(
        webdataset, "open_stream", lambda shard, **kw: read.append(shard) or real(shard, **kw)
    )
    again = prepare_samples(config)
    assert read == [] and again.labels.tolist() == first.labels.tolist()
    np.testing.assert_array_equal(again.sizes, first.sizes)
    write_tar(copied / "part-1.tar", {"a": sample(5), "b": sample(6)})
    assert sorted(prepare_samples(config).labels.tolist()) == [0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13]
    assert read == [str(copied / "part-1.tar")]


def test_json_labels_and_class_names(tmp_path: Path) -> None:
    names = ["cat", "dog"]
    write_tar(
        tmp_path / "a.tar",
        {
            f"{k}": {
                encode(k)[0]: encode(k)[1],
                "json": json.dumps({"class": names[k % 2]}).encode(),
            }
            for k in range(6)
        },
    )
    source = {"label_member": "json", "json_field": "class"}
    samples = prepare_samples(wds_config(tmp_path / "a.tar", tmp_path, source=source))
    assert samples.class_names == names
    assert samples.labels.tolist() == [0, 1, 0, 1, 0, 1]
    source["class_names"] = ["dog", "cat"]
    samples = prepare_samples(wds_config(tmp_path / "a.tar", tmp_path, source=source))
    assert samples.labels.tolist() == [1, 0, 1, 0, 1, 0]
    source["class_names"] = ["dog", "bird"]
    with pytest.raises(DataError, match=r"label 'cat' is not one of the 2 classes"):
        prepare_samples(wds_config(tmp_path / "a.tar", tmp_path, source=source))


def test_a_class_index_past_int32_is_named(tmp_path: Path) -> None:
    """Labels are int32: a larger index is named (never an overflow, nor a list of that many
    class names)."""
    huge = str(2**64).encode()
    write_tar(tmp_path / "a.tar", {"0": sample(0), "1": sample(1, cls=huge)})
    with pytest.raises(DataError, match=r"sample .*a\.tar#1: its cls member '18446.* is no class"):
        prepare_samples(wds_config(tmp_path / "a.tar", tmp_path))
    json_labels = {"label_member": "json", "on_error": "skip"}
    write_tar(
        tmp_path / "b.tar",
        {
            "0": sample(0, json=b'{"label": 0}'),
            "1": sample(1, json=b'{"label": 18446744073709551616}'),
        },
    )
    with pytest.warns(DataWarning):
        samples = prepared(wds_config(tmp_path / "b.tar", tmp_path, source=json_labels)).samples
    assert len(samples) == 1


def test_convert_writes_shards_with_dalis_index_that_train(tmp_path: Path) -> None:
    classes = tmp_path / "classes"
    for k in range(7):
        ext, data = encode(k)
        (classes / f"c{k % 3}").mkdir(parents=True, exist_ok=True)
        (classes / f"c{k % 3}" / f"{k}.{ext}").write_bytes(data)
    out = tmp_path / "shards"
    command = [sys.executable, "-m", "daliaug.cli", "convert", str(classes), str(out)]
    result = subprocess.run(
        [*command, "--format", "webdataset", "--shard-size", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 7 samples of 3 classes to 3 files" in result.stderr
    tars = sorted(out.glob("*.tar"))
    assert [t.name for t in tars] == [f"data-0000{i}-of-00003.tar" for i in range(3)]
    wds2idx = Path(sys.executable).parent / "wds2idx"
    for tar in tars:
        subprocess.run(
            [str(wds2idx), str(tar), str(tmp_path / "theirs.idx")], check=True, timeout=600
        )
        assert tar.with_suffix(".idx").read_text().split() == (
            (tmp_path / "theirs.idx").read_text().split()
        )
    config = wds_config(out, tmp_path)
    samples = prepare_samples(config)
    assert samples.class_names == ["c0", "c1", "c2"]
    assert sorted(samples.labels.tolist()) == [0, 0, 0, 1, 1, 2, 2]
    assert sorted(joined_epoch(DaliLoader(config))[1].tolist()) == [0, 0, 0, 1, 1, 2, 2]


def test_bad_shards_are_named_or_skipped(shards: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    whole = (shards / "part-0.tar").read_bytes()
    (bad / "cut.tar").write_bytes(whole[: whole.index(b"000002.cls") + 700])  # in its data
    (bad / "ends.tar").write_bytes(whole[: whole.index(b"000003.jpg")])  # between members
    ext, data = encode(9)
    broken = {ext: data[: len(data) // 2], "cls": b"9"}  # its header whole
    write_tar(
        bad / "odd.tar",
        {"x": {"cls": b"1"}, "y": sample(7), "z": sample(8, cls=b"c"), "w": broken},
    )
    with pytest.raises(DataError, match=r"cut\.tar is not a whole tar file"):
        prepare_samples(wds_config(bad, tmp_path))
    with pytest.raises(DataError, match=r"odd\.tar#x has no image member .* it holds cls"):
        prepare_samples(wds_config(bad / "odd.tar", tmp_path))
    skip = {"on_error": "skip"}
    with pytest.raises(DataError, match=r"ends\.tar is not a whole tar file \(it ends after"):
        prepare_samples(wds_config(bad / "ends.tar", tmp_path))
    with pytest.raises(DataError, match=r"cannot decode image .*odd\.tar#w\.jpg: OSError"):
        prepare_samples(wds_config(bad / "odd.tar", tmp_path))
    write_tar(tmp_path / "w.tar", {"y": sample(7), "w": broken})
    headers = {"check": "headers"}
    samples = prepare_samples(wds_config(tmp_path / "w.tar", tmp_path, source=headers))
    assert sorted(samples.labels.tolist()) == [7, 9]  # no decode check: w is kept
    with pytest.warns(DataWarning, match=r"left out 5 unusable files"):
        samples = prepared(wds_config(bad, tmp_path, source=skip)).samples
    # the whole samples before each cut, and y
    assert sorted(samples.labels.tolist()) == [0, 0, 1, 1, 7]
    with pytest.raises(DataError, match=r"found no \.tar files at .*nothing"):
        prepare_samples(wds_config(tmp_path / "nothing", tmp_path))


def test_no_index_needed_and_an_unwritable_one_named(
    shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))  # (a new host)
    config = wds_config(shards, tmp_path)
    prepare_samples(config)
    shutil.rmtree(tmp_path / "idx")
    assert len(joined_epoch(DaliLoader(config))[1]) == COUNT
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache-2"))  # (another new host)
    with pytest.raises(ConfigError, match=r"source\.index_dir: cannot write the WebDataset"):
        prepare_samples(wds_config(shards, tmp_path, source={"index_dir": str(tmp_path / "file")}))


def test_a_shard_gone_between_epochs_is_named(shards: Path, tmp_path: Path) -> None:
    copied = tmp_path / "copied"
    shutil.copytree(shards, copied, ignore=shutil.ignore_patterns("files"))
    for dataset in (DaliLoader, make_dataset):
        shutil.copy(shards / "part-1.tar", copied)
        data = dataset(wds_config(copied, tmp_path, backend="cpu"))
        joined_epoch(data)
        (copied / "part-1.tar").unlink()
        with pytest.raises(DataError, match=r"cannot read shard .*part-1\.tar"):
            joined_epoch(data)


# ---------------------------------------------------------------- boxes from json members

DETECTION = ("coco", "yolo", "voc")


def detection_source(root: Path, kind: str) -> dict:
    """The box source ``kind`` over the dataset ``write_detection_dataset`` wrote at ``root``."""
    if kind == "coco":
        return {
            "type": kind,
            "annotations": str(root / "annotations.json"),
            "images": str(root / "images"),
        }
    return {"type": kind, "path": str(root)}


@pytest.fixture(scope="module")
def detection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from daliaug.tools.demo_data import write_detection_dataset

    return write_detection_dataset(tmp_path_factory.mktemp("det") / "d", count=6, size=(48, 64))


def reading(config, source: dict):
    """``config`` reading ``source`` instead."""
    return load_config({**config.model_dump(), "source": source})


def as_shards(config, out: Path, tmp_path: Path, **source):
    """``config`` reading the shards at ``out`` (boxes from json members) instead."""
    shards = {"type": "webdataset", "path": str(out), "index_dir": str(tmp_path / "idx")}
    return reading(config, {**shards, **source})


def test_box_sources_round_trip_through_shards(detection: Path, tmp_path: Path) -> None:
    """COCO, YOLO and VOC written as shards (boxes in the config's format, here relative
    centres) read back as the same samples: images, sizes, classes, boxes and labels."""
    from daliaug.tools.convert import write_webdataset

    for kind in DETECTION:
        config = reading(
            wds_config(detection, tmp_path, bounding_box_format="rel_center_xywh"),
            detection_source(detection, kind),
        )
        original = prepare_samples(config)
        out = tmp_path / kind
        write_webdataset(original, out, 4, box_format=config.bounding_box_format)
        shards = as_shards(config, out, tmp_path, targets="boxes")
        assert shards.source.bounding_box_format == "rel_center_xywh"
        read = prepare_samples(shards)
        assert read.class_names == original.class_names and len(read) == len(original) == 6
        np.testing.assert_array_equal(read.sizes, original.sizes)
        for column in ("boxes", "box_labels"):
            for got, want in zip(read.columns[column], original.columns[column], strict=True):
                np.testing.assert_allclose(got, want, atol=1e-3)
        images = np.asarray(read.columns["encoded"])
        for row, path in zip(images, original.paths, strict=True):
            data = Path(path).read_bytes()
            assert bytes(row[: len(data)]) == data


def test_shards_with_boxes_train_as_coco_does(detection: Path, tmp_path: Path) -> None:
    """The same batches, boxes included, from COCO and from its shards (the boxes are moved
    on the host, the same for every engine)."""
    from daliaug.tools.convert import write_webdataset

    coco = reading(wds_config(detection, tmp_path), detection_source(detection, "coco"))
    write_webdataset(prepare_samples(coco), tmp_path / "coco", 4)
    shards = as_shards(coco, tmp_path / "coco", tmp_path, targets="boxes")
    for want, got in zip(DaliLoader(coco), DaliLoader(shards), strict=True):
        assert len(want) == len(got) == 3  # images, boxes, their labels
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(a, b)


def test_keypoints_and_bad_box_members_named(tmp_path: Path) -> None:
    """Keypoints with the boxes (relative for a ``rel_`` format, visible unless given), and
    each bad json member named by its shard and key, or skipped."""

    def boxes(**fields: object) -> bytes:
        return json.dumps(fields).encode()

    image = encode(0)  # 40 high, 48 wide (PNG)
    good = boxes(boxes=[[0.25, 0.5, 0.5, 0.25]], labels=[1], keypoints=[[[0.5, 0.5], [0, 1]]])
    write_tar(
        tmp_path / "k.tar",
        {
            "good": {image[0]: image[1], "json": good},
            "none": {image[0]: image[1], "json": boxes(boxes=[], labels=[])},
            "out": {image[0]: image[1], "json": boxes(boxes=[[0.9, 0, 0.5, 0.5]], labels=[0])},
            "count": {image[0]: image[1], "json": boxes(boxes=[[0, 0, 1, 1]], labels=[0, 1])},
            "text": {image[0]: image[1], "json": b"{boxes"},
            "bare": {image[0]: image[1]},
        },
    )
    source = {"targets": "boxes", "on_error": "skip"}
    config = wds_config(tmp_path / "k.tar", tmp_path, source=source, bounding_box_format="rel_xywh")
    with pytest.warns(DataWarning, match=r"left out 4 unusable files"):
        samples = prepared(config).samples
    rejected = {key.rsplit("#", 1)[1]: why for key, why in samples.rejected.items()}
    assert rejected["out"].startswith(f"{tmp_path / 'k.tar'}#out.json: box 0 (rel_xywh [0.9")
    assert "lies outside the 48x40 image" in rejected["out"]
    assert "'labels' must list one class index (0, 1, ...) per box" in rejected["count"]
    assert "its json member is not JSON" in rejected["text"]
    assert "has no json member (source.targets: boxes)" in rejected["bare"]
    np.testing.assert_allclose(samples.columns["boxes"][0], [[12, 20, 36, 30]])
    np.testing.assert_allclose(samples.columns["keypoints"][0], [[[24, 20, 1], [0, 40, 1]]])
    assert samples.columns["keypoints"][1].shape == (0, 2, 3)
    assert samples.class_names == ["0", "1"]
    assert list(samples.notes) == [f"{tmp_path / 'k.tar'}#none"]
    one = boxes(boxes=[[0, 0, 0.5, 0.5]], labels=[0], keypoints=[[[0.5, 0.5]]])
    write_tar(
        tmp_path / "k2.tar",
        {"a": {image[0]: image[1], "json": good}, "b": {image[0]: image[1], "json": one}},
    )
    config = wds_config(
        tmp_path / "k2.tar", tmp_path, source=source, bounding_box_format="rel_xywh"
    )
    with pytest.raises(
        DataError,
        match=r"different numbers of keypoints \(2 in .*k2\.tar#a, 1 in .*k2\.tar#b\)",
    ):
        prepare_samples(config)


@pytest.mark.slow
def test_convert_writes_any_source_a_config_reads(tmp_path: Path) -> None:
    """``daliaug convert CONFIG OUT --format webdataset``: arrays (as PNG members) here; the
    box sources above."""
    images = np.stack([structured_image(16, 20, seed=k) for k in range(5)])
    np.savez(tmp_path / "a.npz", x=images, y=[0, 1, 2, 1, 0])
    (tmp_path / "c.yaml").write_text(
        json.dumps(
            {"source": {"type": "arrays", "path": str(tmp_path / "a.npz")}, "image_size": 16}
        )
    )
    out = tmp_path / "shards"
    command = [sys.executable, "-m", "daliaug.cli", "convert", str(tmp_path / "c.yaml"), str(out)]
    result = subprocess.run(
        [*command, "--format", "webdataset"], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 5 samples of 3 classes to 1 files" in result.stderr
    read = prepare_samples(wds_config(out, tmp_path))
    assert read.labels.tolist() == [0, 1, 2, 1, 0]
    for row, want in zip(np.asarray(read.columns["encoded"]), images, strict=True):
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(row.tobytes()))), want)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode != 0 and "TFRecords are written from image files" in result.stderr


def test_convert_holds_declared_sizes_to_the_images(tmp_path: Path) -> None:
    """A COCO config whose listing would leave the headers to the background check (``check:
    background``) is converted from its images' headers: an image unlike the size its
    annotations declare is named, its boxes never written."""
    from daliaug.tools.demo_data import write_detection_dataset

    root = write_detection_dataset(tmp_path / "det", count=4, seed=3)
    image = sorted((root / "images").glob("*.jpg"))[2]
    Image.new("RGB", (50, 40)).save(image)
    source = {"type": "coco", "annotations": str(root / "annotations.json")}
    source.update(images=str(root / "images"), check="background")
    (tmp_path / "c.yaml").write_text(json.dumps({"source": source, "image_size": 16}))
    out = tmp_path / "shards"
    command = [sys.executable, "-m", "daliaug.cli", "convert", str(tmp_path / "c.yaml"), str(out)]
    result = subprocess.run(
        [*command, "--format", "webdataset"], capture_output=True, text=True, timeout=600
    )
    said = " ".join(result.stderr.split())
    assert result.returncode == 3 and f"{image}" in said and "but its file is 50x40" in said


# ---------------------------------------------------------------- masks from png members


@pytest.mark.parametrize("backend", ["cpu", pytest.param("tf", marks=pytest.mark.slow)])
def test_segmentation_trains_the_same_from_shards(tmp_path: Path, backend: str) -> None:
    """Masks written as ``mask.png`` members give the batches of the segmentation source they
    came from: colour-coded masks on DALI, index ones on TensorFlow."""
    from daliaug.tools.convert import write_webdataset
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=5, size=(40, 48))
    index = backend == "tf"
    masks, classes = (
        ("masks", {"num_classes": 5})
        if index
        else ("masks_rgb", {"classes": str(root / "classes.csv")})
    )
    transforms = [{"type": "rotation", "angle": 10}, {"type": "flip"}]
    paired = {"type": "segmentation", "images": str(root / "images"), "masks": str(root / masks)}
    config = reading(
        wds_config(root, tmp_path, backend=backend, transforms=transforms), {**paired, **classes}
    )
    write_webdataset(prepare_samples(config), tmp_path / masks, 2)
    shards = as_shards(config, tmp_path / masks, tmp_path, targets="masks", **classes)
    batches = make_dataset if index else DaliLoader
    for want, got in zip(joined_epoch(batches(config)), joined_epoch(batches(shards)), strict=True):
        np.testing.assert_array_equal(want, got)


def test_bad_mask_members_are_named(tmp_path: Path) -> None:
    image = encode(0)
    masks = []
    for value in (0, 9):
        mask = io.BytesIO()
        Image.fromarray(np.full((40, 48), value, np.uint8)).save(mask, "PNG")
        masks.append(mask.getvalue())
    write_tar(
        tmp_path / "bad.tar",
        {
            "a": {image[0]: image[1], "mask.png": masks[1]},
            "b": {image[0]: image[1]},
            "c": {image[0]: image[1], "mask.png": masks[0]},
            "d": {image[0]: image[1], "mask.png": image[1][:60]},
        },
    )
    source = {"targets": "masks", "num_classes": 5, "on_error": "skip"}
    with pytest.warns(DataWarning, match="left out 3 unusable files"):
        samples = prepared(wds_config(tmp_path / "bad.tar", tmp_path, source=source)).samples
    rejected = {key.rsplit("#", 1)[1]: why for key, why in samples.rejected.items()}
    assert "bad.tar#a.mask.png has class values [9] outside 0..4" in rejected["a"]
    assert "has no mask.png member (source.mask_member); it holds png" in rejected["b"]
    assert "bad.tar#d.mask.png" in rejected["d"]
    assert len(samples) == 1 and samples.class_names == ["0", "1", "2", "3", "4"]


# ---------------------------------------------------------------- a real S3 server


def fill_bucket(root: Path, shards: Path) -> Path:
    """The test ``shards`` in bucket ``data`` under ``train/``, and the same images with their
    list under ``list/``, in the server's ``root``."""
    (root / "data" / "train").mkdir(parents=True)
    for tar in shards.glob("*.tar"):
        shutil.copy(tar, root / "data" / "train")
    shutil.copytree(shards / "files", root / "data" / "list" / "files")
    shutil.copy(shards / "list.csv", root / "data" / "list")
    return root


@pytest.fixture(scope="module")
def bucket(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    return fill_bucket(tmp_path_factory.mktemp("s3"), shards)


@pytest.fixture
def server(bucket: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(bucket, monkeypatch) as running:
        yield running


@pytest.mark.slow
def test_s3_shards_give_the_batches_of_local_ones(
    server: Server, shards: Path, tmp_path: Path
) -> None:
    for backend in ("cpu", "tf"):
        config = wds_config("s3://data/train", tmp_path, backend=backend)
        remote = joined_epoch(make_dataset(config))
        local = joined_epoch(make_dataset(wds_config(shards, tmp_path, backend=backend)))
        np.testing.assert_array_equal(remote[1], local[1])
        np.testing.assert_array_equal(remote[0], local[0])
    one = prepare_samples(wds_config("s3://data/train/part-2.tar", tmp_path))
    assert sorted(one.labels.tolist()) == list(range(10, COUNT))


def test_s3_file_lists_give_the_batches_of_local_ones(
    server: Server, shards: Path, tmp_path: Path
) -> None:
    """A file list on S3 (or a local one whose root is on S3) gives the batches of the same
    list read locally; a missing object is named by its bucket and key, or skipped."""
    config = wds_config(shards, tmp_path)
    local = joined_epoch(
        DaliLoader(reading(config, {"type": "file_list", "path": str(shards / "list.csv")}))
    )
    remote = {"type": "file_list", "path": "s3://data/list/list.csv"}
    for source in (remote, {**remote, "path": str(shards / "list.csv"), "root": "s3://data/list"}):
        got = joined_epoch(DaliLoader(reading(config, source)))
        np.testing.assert_array_equal(got[1], local[1])
        np.testing.assert_array_equal(got[0], local[0])
    (tmp_path / "gone.csv").write_text("files/0.png,0\nfiles/nothing.png,1\n")
    gone = {"type": "file_list", "path": str(tmp_path / "gone.csv"), "root": "s3://data/list"}
    with pytest.raises(
        DataError, match=r"s3://data/list/files/nothing\.png: cannot read the object: no such key"
    ):
        prepare_samples(reading(config, gone))
    with pytest.warns(DataWarning, match="left out 1 unusable file"):
        assert len(prepared(reading(config, {**gone, "on_error": "skip"})).samples) == 1
    with pytest.raises(
        DataError, match=r"source\.path: there is no file list at s3://data/no\.csv"
    ):
        prepare_samples(reading(config, {**remote, "path": "s3://data/no.csv"}))


def test_s3_failures_are_named(server: Server, tmp_path: Path, monkeypatch) -> None:
    def fails(path: str, match: str) -> None:
        storage._client.cache_clear()
        with pytest.raises(DataError, match=match):
            prepare_samples(wds_config(path, tmp_path))

    fails("s3://nobucket/train", r"s3://nobucket/train/: cannot list the objects: no such bucket")
    fails(
        "s3://data/train/nokey.tar",
        r"nokey\.tar: cannot look the object up: no such key .train/nokey",
    )
    fails("s3://data/else", r"found no \.tar files at s3://data/else")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-key")
    fails("s3://data/train", r"s3://data/train/: cannot list .*secret key does not match")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    fails("s3://data/train", r"s3://data/train/: no S3 credentials .* AWS_ACCESS_KEY_ID")


def test_a_server_stopping_mid_epoch_is_named(server: Server, tmp_path: Path) -> None:
    loader = DaliLoader(wds_config("s3://data/train", tmp_path, batch_size=2))
    batches = iter(loader)
    next(batches)
    server.stop()
    start = time.monotonic()
    with pytest.raises(DataError, match=rf"s3://data/train/part-.*unreachable.*{server.url}"):
        list(batches)
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("broken", ["stream", "connection"])
def test_a_server_lost_is_named_in_one_order_however_it_broke(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that broke off mid-stream and one never reached give one message: the object,
    what was being done, then the server's address (the order the test above relies on)."""
    from botocore.exceptions import EndpointConnectionError, ResponseStreamingError

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    error = {
        "stream": ResponseStreamingError(error="Connection broken: IncompleteRead"),
        "connection": EndpointConnectionError(endpoint_url="http://127.0.0.1:9/data"),
    }[broken]
    named = r"s3://data/train/part-2\.tar: cannot read bytes 0-9: .*unreachable.*127\.0\.0\.1:9"
    with (
        pytest.raises(DataError, match=named),
        storage.s3_errors("data", "train/part-2.tar", "read bytes 0-9"),
    ):
        raise error


JOB = """
import json, sys
import numpy as np
from daliaug.config import load_config
from daliaug.outputs.dali_loader import DaliLoader
config = load_config(json.loads(sys.argv[1]))
loader = DaliLoader(config)
print(json.dumps([np.concatenate([np.asarray(y) for _, y in loader]).tolist() for _ in range(2)]))
"""


@pytest.mark.slow
def test_three_processes_read_each_s3_sample_once_per_epoch(server: Server, tmp_path: Path) -> None:
    """Three processes, each its ``shard_id`` of 3, over the shards on the S3 server: every
    sample exactly once per epoch across them, in a new order every epoch."""
    jobs = []
    for shard in range(3):
        config = wds_config(
            "s3://data/train", tmp_path, source={"shard_id": shard, "num_shards": 3}
        )
        jobs.append(
            subprocess.Popen(
                [sys.executable, "-c", JOB, config.model_dump_json()],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
            )
        )
    seen = []
    for job in jobs:
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0, err[-2000:]
        seen.append(json.loads(out.splitlines()[-1]))
    for e in range(2):
        every = [label for one in seen for label in one[e]]
        assert sorted(every) == list(range(COUNT))  # each once: no two processes share one
    assert seen[0][0] != seen[0][1]  # reshuffled


def test_preview_shows_the_images_of_shards(shards: Path, tmp_path: Path) -> None:
    from daliaug.tools.preview import augmented_versions

    shown = augmented_versions(wds_config(shards, tmp_path), count=2, versions=2)
    assert shown.names == ["sample 0", f"sample {COUNT - 1}"]
    for k, original in zip((0, COUNT - 1), shown.originals, strict=True):
        np.testing.assert_array_equal(original, np.asarray(Image.open(io.BytesIO(encode(k)[1]))))
    assert shown.augmented.shape[0] == 4
