"""Listing files (``daliaug check CONFIG --write-listings``): a start reads one file per folder
of WebDataset shards instead of the shards, and one beside a file list instead of its images
on S3, locally and from a real S3 server (:mod:`tests.s3_server`), whose requests are counted as
boto3 makes them; an epoch then reads each image's bytes once, and a listing file that
cannot serve (data changed since, other settings, an edited file) is named, and the data
read as without it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from daliaug.cli import main
from daliaug.errors import DataError, DataWarning
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.prepare import prepare_samples
from daliaug.sources import storage, webdataset
from tests.helpers import joined_epoch
from tests.s3_server import Server, serving
from tests.sources.test_webdataset import (
    COUNT,
    fill_bucket,
    reading,
    sample,
    wds_config,
    write_shards,
    write_tar,
)


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    return write_shards(tmp_path / "wds")


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each call of the returned function: an empty ``DALIAUG_CACHE`` (a new host)."""
    count = iter(range(100))

    def fresh() -> None:
        monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / f"cache-{next(count)}"))

    fresh()
    yield fresh


def write_listings(config_path: Path, config, *extra: str) -> int:
    config_path.write_text(config.model_dump_json())
    return main(["check", str(config_path), "--write-listings", *extra])


def spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The shards :mod:`daliaug.sources.webdataset` opens to read whole, in order."""
    read: list[str] = []
    real = webdataset.open_stream
    monkeypatch.setattr(
        webdataset, "open_stream", lambda shard, **kw: read.append(shard) or real(shard, **kw)
    )
    return read


def test_a_start_reads_the_listing_files_and_gives_the_same_batches(
    shards: Path, tmp_path: Path, fresh_cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = wds_config(shards, tmp_path)
    whole = joined_epoch(DaliLoader(config))
    assert write_listings(tmp_path / "c.json", config) == 0
    assert sorted(p.name for p in shards.glob("*.json")) == [webdataset.LISTING_NAME]
    fresh_cache()
    read = spy_reads(monkeypatch)
    listed = prepare_samples(config)
    assert read == []  # no shard read to list it
    assert sorted(listed.labels.tolist()) == list(range(COUNT))
    got = joined_epoch(DaliLoader(config))
    np.testing.assert_array_equal(got[1], whole[1])
    np.testing.assert_array_equal(got[0], whole[0])


def test_listing_files_that_cannot_serve_are_named_and_the_shards_read(
    shards: Path, tmp_path: Path, fresh_cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = wds_config(shards, tmp_path)
    assert write_listings(tmp_path / "c.json", config) == 0
    listing = shards / webdataset.LISTING_NAME
    kept = json.loads(listing.read_text())
    every = [str(shards / f"part-{s}.tar") for s in range(3)]

    def refused(text: str, why: str, read_again: list[str] = every) -> None:
        listing.write_text(text)
        fresh_cache()
        read = spy_reads(monkeypatch)
        with pytest.warns(DataWarning, match=rf"listing file {listing} is not used: {why}"):
            samples = prepare_samples(config)
        assert sorted(read) == read_again
        assert sorted(samples.labels.tolist()) == list(range(COUNT))
        monkeypatch.undo()

    refused(listing.read_text()[:-40], r"it cannot be read \(JSONDecodeError")
    edited = json.loads(json.dumps(kept))
    edited["listing"]["part-1.tar"]["labels"][0] = 3
    refused(json.dumps(edited), r"its listing does not match its SHA-256 \(the file was edited")
    settings = {**kept["settings"], "label_member": "json"}
    refused(
        json.dumps({**kept, "settings": settings}),
        r"it was written with other source settings \(label_member 'json' there, 'cls' here\)",
    )
    refused(json.dumps({**kept, "format": "x"}), r"it is not a 'daliaug shard listing 2' file")
    # a shard rewritten, even at the same size (a label of one digit for another): its
    # listing no longer serves it; the other shards' still do
    data = (shards / "part-0.tar").read_bytes()
    cls = data.index(b"000003.cls") + 512  # the member's data, after its 512-byte header
    assert data[cls : cls + 1] == b"3"
    (shards / "part-0.tar").write_bytes(data[:cls] + b"4" + data[cls + 1 :])
    listing.write_text(json.dumps(kept))
    fresh_cache()
    read = spy_reads(monkeypatch)
    why = rf"is not used: 1 of the shards it lists changed since \({shards}/part-0\.tar\)"
    with pytest.warns(DataWarning, match=rf"{webdataset.LISTING_NAME} {why}"):
        assert sorted(prepare_samples(config).labels.tolist()).count(4) == 2
    assert read == [str(shards / "part-0.tar")]


def test_bad_samples_in_a_listing_file_are_named_where_the_shard_is_read(
    tmp_path: Path, fresh_cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listings written through one path to the shards (a link to their folder), read
    through another: each bad sample is named where it is read."""
    shards = tmp_path / "shards"
    shards.mkdir()
    write_tar(shards / "a.tar", {"0": sample(0), "1": {"cls": b"1"}, "2": sample(2)})
    (tmp_path / "link").symlink_to(shards)
    config = wds_config(tmp_path / "link", tmp_path, source={"on_error": "skip"})
    assert write_listings(tmp_path / "c.json", config) == 3  # a bad sample: the check says so
    fresh_cache()
    read = spy_reads(monkeypatch)
    with pytest.raises(DataError, match=rf"sample {shards}/a\.tar#1 has no image member"):
        prepare_samples(wds_config(shards, tmp_path))
    skip = wds_config(shards, tmp_path, source={"on_error": "skip"})
    assert sorted(prepare_samples(skip).labels.tolist()) == [0, 2]
    assert read == []


def test_write_listings_needs_webdataset_shards(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps({"source": {"type": "directory", "path": str(tmp_path)}, "image_size": 8})
    )
    assert main(["check", str(config), "--write-listings"]) == 2
    assert "--write-listings: source.type is directory" in capsys.readouterr().err


@pytest.fixture
def bucket(shards: Path, tmp_path: Path) -> Path:
    return fill_bucket(tmp_path / "s3", shards)


@pytest.fixture
def server(bucket: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(bucket, monkeypatch) as running:
        yield running


def count_calls() -> list[tuple[str, str, str]]:
    """Every request this process's S3 client makes from now on: ``(operation, key or
    prefix, range or "")``."""
    calls: list[tuple[str, str, str]] = []

    def seen(params: dict, event_name: str, **_: object) -> None:
        key = params.get("Key", params.get("Prefix", ""))
        calls.append((event_name.rsplit(".", 1)[1], key, params.get("Range", "")))

    storage._client().meta.events.register("before-parameter-build.s3", seen)
    return calls


def new_host_start(config, whole: tuple[np.ndarray, np.ndarray]) -> tuple:
    """A start of ``config`` on a new host (empty cache; the caller's) and one epoch, whose
    batches are asserted to be ``whole``'s: its samples, the S3 requests its listing made
    (sorted) and those of the epoch."""
    calls = count_calls()
    samples = prepare_samples(config)
    listing, epoch = sorted(calls), calls
    calls.clear()  # (the list the hook fills, from here the epoch's)
    got = joined_epoch(DaliLoader(config))
    np.testing.assert_array_equal(got[1], whole[1])
    np.testing.assert_array_equal(got[0], whole[0])
    return samples, listing, epoch


def test_s3_shards_are_listed_from_their_listing_files_and_read_once(
    server: Server, shards: Path, bucket: Path, tmp_path: Path, fresh_cache
) -> None:
    """Listing files written to the bucket: a new host's start lists the bucket and reads
    them, not the shards (nor asks for each shard's ETag: the bucket's listing gave it); an
    epoch then reads each image once, by its byte range, and the batches are those of a
    start that read the shards whole."""
    config = wds_config("s3://data/train", tmp_path)
    whole = joined_epoch(DaliLoader(config))
    assert write_listings(tmp_path / "c.json", config) == 0
    assert sorted(p.name for p in (bucket / "data" / "train").glob("*.json")) == [
        webdataset.LISTING_NAME
    ]
    fresh_cache()
    samples, listing, calls = new_host_start(config, whole)
    assert listing == [
        ("GetObject", "train/daliaug-listing.json", ""),
        ("GetObject", "train/daliaug.json", ""),
        ("ListObjectsV2", "train/", ""),
    ]
    ranges = [(key, span) for op, key, span in calls if key.endswith(".tar")]
    assert {op for op, _, _ in calls} == {"GetObject", "ListObjectsV2"}  # (the loader lists)
    assert len(ranges) == len(set(ranges)) == COUNT  # each image once, no whole shard
    where = samples.columns["encoded"].where
    sizes = sum(int(span.split("-")[1]) - int(span[6:].split("-")[0]) + 1 for _, span in ranges)
    assert sizes == int(where[:, 2].sum())
    # a shard uploaded again with other bytes (its size kept): another ETag, the listing unused
    tar = bucket / "data" / "train" / "part-1.tar"
    data = tar.read_bytes()
    cls = data.index(b"000007.cls") + 512
    tar.write_bytes(data[:cls] + b"8" + data[cls + 1 :])
    fresh_cache()
    with pytest.warns(DataWarning, match=r"data/train/daliaug-listing\.json is not used: 1 of"):
        assert sorted(prepare_samples(config).labels.tolist()).count(8) == 2


def test_s3_file_lists_are_listed_from_their_listing_file_and_read_once(
    server: Server, bucket: Path, tmp_path: Path, fresh_cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file list of S3 images with its listing file beside it: a new host's start reads
    the list, the listing file and the bucket's listing, no image; an epoch reads each image
    once; an image replaced since is read again at listing, alone; an edited listing file is
    named and every image read."""
    source = {"type": "file_list", "path": "s3://data/list/list.csv"}
    config = reading(wds_config("s3://data/train", tmp_path), source)
    whole = joined_epoch(DaliLoader(config))
    assert write_listings(tmp_path / "c.json", config) == 0
    listing = bucket / "data" / "list" / "list.listing.json"
    assert listing.is_file()
    fresh_cache()
    _, listed, calls = new_host_start(config, whole)
    assert listed == [
        ("GetObject", "list/list.csv", ""),
        ("GetObject", "list/list.listing.json", ""),
        ("ListObjectsV2", "list/files/", ""),
    ]
    images = [key for op, key, _ in calls if op == "GetObject" and "/files/" in key]
    lines = (bucket / "data" / "list" / "list.csv").read_text().split()
    assert sorted(images) == sorted(f"list/{line.split(',')[0]}" for line in lines)
    image = bucket / "data" / "list" / "files" / "3.jpg"
    data = bytearray(image.read_bytes())
    data[-3] ^= 0x01  # another image of the same size (a new ETag)
    image.write_bytes(bytes(data))
    calls.clear()
    prepare_samples(config)
    assert [key for op, key, _ in calls if op == "GetObject" and "/files/" in key] == [
        "list/files/3.jpg"
    ]
    assert write_listings(tmp_path / "c.json", config) == 0
    edited = json.loads(listing.read_text())
    edited["listing"]["s3://data/list/files/0.png"][2] = [1, 1]
    storage.write_text("s3://data/list/list.listing.json", json.dumps(edited))  # (a PUT)
    fresh_cache()
    calls.clear()
    with pytest.warns(DataWarning, match=r"list\.listing\.json is not used: its listing does not"):
        prepare_samples(config)
    assert len([key for op, key, _ in calls if op == "GetObject" and "/files/" in key]) == COUNT


def test_write_listings_of_a_local_file_list_is_refused(
    shards: Path, tmp_path: Path, capsys
) -> None:
    config = tmp_path / "c.json"
    source = {"type": "file_list", "path": str(shards / "list.csv")}
    config.write_text(json.dumps({"source": source, "image_size": 8}))
    assert main(["check", str(config), "--write-listings"]) == 2
    assert "the images of" in capsys.readouterr().err


def convert(config, out: str | Path, tmp_path: Path, *extra: str) -> int:
    """``daliaug convert CONFIG OUT --format webdataset --shard-size 4`` of ``config``'s
    source."""
    path = tmp_path / "convert.json"
    path.write_text(config.model_dump_json())
    command = ["convert", str(path), str(out), "--format", "webdataset", "--shard-size", "4"]
    return main([*command, *extra])


def test_convert_writes_the_listing_file_a_start_reads(
    shards: Path, tmp_path: Path, fresh_cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``daliaug convert`` writes the shards' listing file beside them: a new host's start
    reads no shard, and gives the batches of a start that read the shards whole;
    ``--no-listing`` writes none."""
    files = {"type": "file_list", "path": str(shards / "list.csv")}
    assert convert(reading(wds_config(shards, tmp_path), files), tmp_path / "out", tmp_path) == 0
    out = tmp_path / "out"
    assert (out / webdataset.LISTING_NAME).is_file()
    config = wds_config(out, tmp_path)
    read = spy_reads(monkeypatch)
    fresh_cache()
    listed = joined_epoch(DaliLoader(config))
    assert read == []  # no shard opened to list it
    (out / webdataset.LISTING_NAME).unlink()
    fresh_cache()
    whole = joined_epoch(DaliLoader(config))
    assert len(read) == -(-COUNT // 4)  # each shard read whole
    for got, want in zip(listed, whole, strict=True):
        np.testing.assert_array_equal(got, want)
    files_config = reading(wds_config(shards, tmp_path), files)
    assert convert(files_config, out, tmp_path, "--overwrite", "--no-listing") == 0
    assert not (out / webdataset.LISTING_NAME).exists()


def test_convert_uploads_shards_with_a_listing_file_of_their_etags(
    server: Server, shards: Path, bucket: Path, tmp_path: Path, fresh_cache, capsys
) -> None:
    """``daliaug convert CONFIG s3://bucket/prefix``: the shards, their indexes, class names
    and listing file uploaded (the upload's progress shown); a new host's start asks for the
    bucket's listing, the listing file and the class names, no shard, and gives the batches of
    the same shards written locally (whose listing file, copied to the bucket with them, does
    not serve there); the prefix's refusals and ``--overwrite`` as a folder's (an earlier
    conversion's objects not written again deleted)."""
    files = reading(
        wds_config(shards, tmp_path), {"type": "file_list", "path": str(shards / "list.csv")}
    )
    assert convert(files, "s3://data/converted", tmp_path) == 0
    shown = capsys.readouterr()
    assert "uploading to s3://data/converted" in shown.out + shown.err
    uploaded = bucket / "data" / "converted"
    tars = [f"data-{i:05d}-of-00004.tar" for i in range(4)]
    names = [*tars, *(t.replace(".tar", ".idx") for t in tars)]
    assert sorted(p.name for p in uploaded.iterdir()) == sorted(
        [webdataset.LISTING_NAME, "daliaug.json", *names]
    )
    assert convert(files, tmp_path / "local", tmp_path) == 0
    want = joined_epoch(DaliLoader(wds_config(tmp_path / "local", tmp_path)))
    local = (tmp_path / "local").iterdir()  # (uploaded as they are, as aws s3 sync would)
    storage.upload([(path, f"s3://data/copied/{path.name}") for path in local])
    with pytest.warns(DataWarning, match=r"is not used: 4 of the shards it lists changed"):
        prepare_samples(wds_config("s3://data/copied", tmp_path))
    fresh_cache()
    _, listing, _ = new_host_start(wds_config("s3://data/converted", tmp_path), want)
    assert listing == [
        ("GetObject", "converted/daliaug-listing.json", ""),
        ("GetObject", "converted/daliaug.json", ""),
        ("ListObjectsV2", "converted/", ""),
    ]
    capsys.readouterr()
    assert convert(files, "s3://data/converted", tmp_path) == 2  # (not new, no --overwrite)
    assert "already holds 10 files" in capsys.readouterr().err
    assert convert(files, "s3://data/train", tmp_path, "--overwrite") == 2
    assert "holds files no conversion wrote (no daliaug.json" in capsys.readouterr().err
    assert convert(files, "s3://data/converted", tmp_path, "--overwrite", "--shard-size", "8") == 0
    tars = [f"data-{i:05d}-of-00002.tar" for i in range(2)]
    assert sorted(p.name for p in uploaded.iterdir()) == sorted(
        [webdataset.LISTING_NAME, "daliaug.json", *tars, *(t.replace(".tar", ".idx") for t in tars)]
    )


def test_a_cut_short_upload_leaves_no_marker_and_is_named(
    server: Server, shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The conversion's marker (``daliaug.json``) goes up last, after the listing file: a
    conversion cut short before it leaves none, and ``--overwrite`` then refuses the prefix,
    saying what to do; an object that cannot be written is named."""
    source = {"type": "file_list", "path": str(shards / "list.csv")}
    files = reading(wds_config(shards, tmp_path), source)

    def cut(*_: object) -> None:
        raise DataError("the listing file could not be written (cut short)")

    monkeypatch.setattr(webdataset.WebDatasetSource, "write_listing", cut)
    assert convert(files, "s3://data/cut", tmp_path) != 0
    monkeypatch.undo()
    assert "daliaug.json" not in capsys.readouterr().err
    assert convert(files, "s3://data/cut", tmp_path, "--overwrite") == 2
    assert "a conversion cut short writes no daliaug.json" in capsys.readouterr().err
    with pytest.raises(DataError, match=r"s3://nobucket/x\.tar: cannot write the object"):
        storage.upload([(shards / "part-0.tar", "s3://nobucket/x.tar")])


def test_a_shard_listing_depends_on_what_reads_the_targets_only(tmp_path: Path) -> None:
    """A listing's settings: the targets and the fields that read them; a class table by its
    colours (wherever its file is), not how masks are handed on."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "classes.csv").write_text("sky,0,0,255\ngrass,0,255,0\n")

    def settings(**fields) -> dict:
        return webdataset.WebDatasetSource(path="s3://b/p", **fields)._settings()

    masks = {"targets": "masks", "classes": str(tmp_path / "a" / "classes.csv")}
    moved = {**masks, "classes": str(tmp_path / "b" / "classes.csv"), "mask_output": "one_hot"}
    assert settings(**masks) == settings(**moved)
    (tmp_path / "b" / "classes.csv").write_text("sky,0,0,254\ngrass,0,255,0\n")
    assert settings(**masks) != settings(**moved)
    assert settings(num_classes=5) == settings(bounding_box_format="rel_xywh")
    assert settings(targets="boxes") != settings(targets="boxes", bounding_box_format="rel_xywh")
    assert settings(label_member="json") != settings(label_member="json", json_field="y")
