"""The commands' outputs land exactly where they say, once: ``convert`` into a folder holding
an earlier conversion refuses it, or with ``--overwrite`` replaces it whole (never a mix of
two runs' shards); ``preview --out`` a folder writes into it and says where; an OUT under an
existing file is a named error; ``check`` refuses what ``make_dataset`` refuses; a config
whose source is shards converts. The CLI runs in the test's process (``daliaug.cli.main``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from daliaug import make_dataset
from daliaug.cli import main as cli
from daliaug.config import load_config
from daliaug.errors import DataError
from daliaug.prepare import prepare_samples
from daliaug.sources.tfrecord import METADATA
from daliaug.sources.webdataset import LISTING_NAME
from daliaug.tools.convert import write_webdataset
from tests.helpers import structured_image
from tests.sources.test_webdataset import encode, write_tar

COUNT = 6


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two class folders of three PNGs each."""
    root = tmp_path_factory.mktemp("classes")
    for k in range(COUNT):
        (root / f"c{k % 2}").mkdir(exist_ok=True)
        Image.fromarray(structured_image(20, 24, seed=k)).save(root / f"c{k % 2}" / f"{k}.png")
    return root


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    """``daliaug ARGS`` in this process: its exit code and what it printed."""
    code = cli([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def shards_source(path: Path, tmp_path: Path, **source: object) -> dict:
    fields = {"type": "webdataset", "path": str(path), "index_dir": str(tmp_path / "idx")}
    return {"source": {**fields, **source}, "image_size": 16, "batch_size": 2, "backend": "cpu"}


def test_convert_refuses_an_earlier_conversion_or_replaces_it_whole(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert (
        run(capsys, "convert", folders, out, "--format", "webdataset", "--shard-size", "2")[0] == 0
    )
    first = sorted(p.name for p in out.iterdir())
    assert len([n for n in first if n.endswith(".tar")]) == 3
    code, text = run(capsys, "convert", folders, out, "--format", "webdataset", "--shard-size", "4")
    assert code == 2 and f"convert: OUT {out} already holds 8 files" in text
    assert "--overwrite" in text and sorted(p.name for p in out.iterdir()) == first
    args = ("convert", folders, out, "--format", "webdataset", "--shard-size", "4", "--overwrite")
    assert run(capsys, *args)[0] == 0
    held = sorted(p.name for p in out.iterdir())
    assert held == [
        LISTING_NAME,
        METADATA,
        "data-00000-of-00002.idx",
        "data-00000-of-00002.tar",
        "data-00001-of-00002.idx",
        "data-00001-of-00002.tar",
    ]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers
    samples = prepare_samples(load_config(shards_source(out, tmp_path)))
    assert len(samples) == COUNT  # each sample once


def test_tfrecords_too_and_only_a_conversion_is_replaced(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    assert run(capsys, "convert", folders, out, "--shards", "3")[0] == 0
    code, text = run(capsys, "convert", folders, out, "--shards", "2")
    assert code == 2 and "already holds 4 files" in text
    assert run(capsys, "convert", folders, out, "--shards", "2", "--overwrite")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "daliaug.json",
        "data-00000-of-00002.tfrecord",
        "data-00001-of-00002.tfrecord",
    ]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, text = run(capsys, "convert", folders, mine, "--shards", "2", "--overwrite")
    assert code == 2 and "holds files no conversion wrote" in text
    assert (mine / "notes.txt").read_text() == "keep me"


def test_a_conversion_that_fails_leaves_the_earlier_one_whole(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run(capsys, "convert", folders, out, "--format", "webdataset")[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    samples = prepare_samples(load_config(shards_source(out, tmp_path)))

    def crash(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_webdataset(samples, out, 2, progress=crash, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_out_under_a_file_is_named(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "some.txt").write_text("a file")
    for fmt in ("webdataset", "tfrecord"):
        code, text = run(capsys, "convert", folders, tmp_path / "some.txt" / "out", "--format", fmt)
        assert code == 2 and f"{tmp_path / 'some.txt'} is a file, not a folder" in text
        code, text = run(capsys, "convert", folders, tmp_path / "some.txt", "--format", fmt)
        assert code == 2 and f"{tmp_path / 'some.txt'} is a file" in text
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"type": "directory", "path": str(folders)},
                "image_size": 16,
                "backend": "cpu",
            }
        )
    )
    code, text = run(capsys, "preview", config, "--out", tmp_path / "some.txt" / "grid.png")
    assert code == 2 and f"{tmp_path / 'some.txt'} is a file, not a folder" in text
    assert "Traceback" not in text


def test_preview_into_a_folder_writes_there_and_says_so(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    source = {"type": "directory", "path": str(folders)}
    config.write_text(yaml.safe_dump({"source": source, "image_size": 16, "backend": "cpu"}))
    grids = tmp_path / "grids"
    grids.mkdir()
    code, text = run(capsys, "preview", config, "--out", grids, "--count", "1", "--versions", "1")
    assert code == 0 and f"to {grids / 'preview.png'}" in text and "replacing" not in text
    assert not (tmp_path / "grids.png").exists()
    with Image.open(grids / "preview.png") as png:
        assert png.format == "PNG"
    code, text = run(capsys, "preview", config, "--out", grids, "--count", "1", "--versions", "1")
    assert code == 0 and f"to {grids / 'preview.png'} (replacing the file there)" in text
    plain = tmp_path / "grid"  # no suffix: written at that path, as a PNG
    assert run(capsys, "preview", config, "--out", plain, "--count", "1", "--versions", "1")[0] == 0
    assert plain.is_file() and not (tmp_path / "grid.png").exists()


def test_check_refuses_the_members_make_dataset_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ext, data = encode(1)
    write_tar(
        tmp_path / "s.tar",
        {
            "good": {ext: data, "cls": b"0"},
            "broken": {ext: data[: len(data) // 2], "cls": b"1"},  # its header whole
        },
    )
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(shards_source(tmp_path / "s.tar", tmp_path)))
    with pytest.raises(DataError, match=r"s\.tar#broken"):
        make_dataset(load_config(config), framework="numpy")
    code, text = run(capsys, "check", config)
    assert code == 3 and "every file decodes" not in text
    assert f"{tmp_path / 's.tar'}#broken" in text


def test_convert_of_a_config_over_shards_writes_the_same_samples(
    folders: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    assert (
        run(capsys, "convert", folders, first, "--format", "webdataset", "--shard-size", "4")[0]
        == 0
    )
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(shards_source(first, tmp_path)))
    again = tmp_path / "again"
    code, text = run(
        capsys, "convert", config, again, "--format", "webdataset", "--shard-size", "2"
    )
    assert code == 0, text
    want = prepare_samples(load_config(shards_source(first, tmp_path)))
    got = prepare_samples(load_config(shards_source(again, tmp_path)))
    assert got.labels.tolist() == want.labels.tolist() and got.class_names == want.class_names
    for k in range(COUNT):
        assert got.columns["encoded"].member(k) == want.columns["encoded"].member(k)
    assert json.loads((again / METADATA).read_text())["count"] == COUNT
    code, text = run(capsys, "convert", config, tmp_path / "rec")  # TFRecords: files only
    assert code == 2 and "--format webdataset" in text
    np.testing.assert_array_equal(got.sizes, want.sizes)
