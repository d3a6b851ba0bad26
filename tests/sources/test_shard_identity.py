"""A shard or object rewritten under a job (at the same size, its members reordered, its
modification time kept) is named, never read as another sample's bytes: each read checks the
identity taken when it was listed (storage.identity), locally and on a real S3 server."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daliaug.config import load_config
from daliaug.errors import DataError
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.prepare import prepare_samples
from daliaug.sources.base import Samples
from tests.helpers import joined_epoch, shards_config
from tests.s3_server import Server, serving
from tests.sources.test_webdataset import encode, sample

SHARDS = ((0, 1, 2), (3, 4), (5, 6, 7))
"""The samples (sample ``k``'s class is ``k``) of each test shard."""


def tar_bytes(keys: tuple[int, ...]) -> bytes:
    """A shard of samples ``keys``, in that order (the same size in any order)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for k in keys:
            for ext, data in sample(k).items():
                info = tarfile.TarInfo(f"{k:06d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write_shards(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for s, keys in enumerate(SHARDS):
        (root / f"part-{s}.tar").write_bytes(tar_bytes(keys))
    return root


def reorder(shard: Path, keys: tuple[int, ...], in_place: bool) -> None:
    """Rewrite ``shard`` with its samples in reverse order, at the same size and modification
    time: in place (the same inode) or replaced by a rename."""
    data = tar_bytes(tuple(reversed(keys)))
    before = shard.stat()
    assert len(data) == before.st_size
    if in_place:
        with open(shard, "r+b") as f:
            f.write(data)
    else:
        (shard.parent / "new").write_bytes(data)
        os.replace(shard.parent / "new", shard)
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))


def each_is_its_own(samples: Samples) -> None:
    """Every sample's image bytes are those of its own label's image."""
    images = np.asarray(samples.columns["encoded"])
    for row, label in zip(images, samples.labels.tolist(), strict=True):
        want = encode(label)[1]
        assert bytes(row[: len(want)]) == want


def config(path: str | Path, tmp_path: Path):
    return shards_config("webdataset", path, tmp_path, backend="cpu")


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    shard=st.integers(0, len(SHARDS) - 1),
    in_place=st.booleans(),
    batch=st.lists(st.integers(0, sum(map(len, SHARDS)) - 1), min_size=1, max_size=6),
)
def test_a_rewritten_shard_is_named_wherever_a_read_meets_it(
    tmp_path_factory: pytest.TempPathFactory, shard: int, in_place: bool, batch: list[int]
) -> None:
    """Any shard rewritten after listing: a batch that reads from it is a DataError naming
    it; a batch that does not gets its own samples' bytes."""
    tmp = tmp_path_factory.mktemp("rewrite")
    root = write_shards(tmp / "shards")
    samples = prepare_samples(config(root, tmp))
    each_is_its_own(samples)
    reorder(root / f"part-{shard}.tar", SHARDS[shard], in_place)
    column = samples.columns["encoded"][np.asarray(batch)]
    if shard in column.where[:, 0]:
        with pytest.raises(DataError, match=rf"part-{shard}\.tar changed after daliaug listed"):
            np.asarray(column)
    else:
        for row, i in zip(np.asarray(column), batch, strict=True):
            want = encode(int(samples.labels[i]))[1]
            assert bytes(row[: len(want)]) == want


def test_a_shard_rewritten_between_epochs_stops_the_job_named(tmp_path: Path) -> None:
    root = write_shards(tmp_path / "shards")
    loader = DaliLoader(config(root, tmp_path))
    assert sorted(joined_epoch(loader)[1].tolist()) == list(range(8))
    reorder(root / "part-2.tar", SHARDS[2], in_place=True)
    with pytest.raises(DataError, match=r"part-2\.tar changed after daliaug listed it"):
        joined_epoch(loader)


def test_a_listing_is_not_reused_for_a_same_size_rewrite(tmp_path: Path) -> None:
    """The listing kept in the cache is keyed by the shard's whole identity: a rewrite at
    the same size and time lists it anew, each sample with its own image."""
    root = write_shards(tmp_path / "shards")
    each_is_its_own(prepare_samples(config(root, tmp_path)))
    for in_place in (True, False):
        reorder(root / "part-0.tar", SHARDS[0], in_place)
        each_is_its_own(prepare_samples(config(root, tmp_path)))


# ---------------------------------------------------------------- on a real S3 server


@pytest.fixture
def bucket(tmp_path: Path) -> Path:
    """Bucket ``data``: the shards under ``train/``, images and their list under ``list/``."""
    root = tmp_path / "s3"
    write_shards(root / "data" / "train")
    images = root / "data" / "list"
    images.mkdir(parents=True)
    lines = []
    for k in range(4):
        ext, data = encode(k)
        (images / f"{k}.{ext}").write_bytes(data)
        lines.append(f"{k}.{ext},{k}")
    (images / "list.csv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def server(bucket: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(bucket, monkeypatch) as running:
        yield running


def put(bucket: Path, key: str, data: bytes) -> None:
    """Object ``key`` of bucket ``data`` written anew (a new modification time, as any write
    to S3 gives)."""
    (bucket / "data" / key).write_bytes(data)


def test_an_object_rewritten_under_a_job_is_named(
    server: Server, bucket: Path, tmp_path: Path
) -> None:
    """A shard object written anew at the same size (members reordered) and an image of a
    file list replaced, each after listing: the next read names the object (the ETag the read
    answers with is not the one listed; a server that honours IfMatch answers 412); listed
    again, each sample reads its own image."""
    shards = DaliLoader(config("s3://data/train", tmp_path))
    images = DaliLoader(
        load_config(
            {
                **config(bucket, tmp_path).model_dump(),
                "source": {"type": "file_list", "path": "s3://data/list/list.csv"},
            }
        )
    )
    for loader in (shards, images):
        joined_epoch(loader)
    put(bucket, "train/part-1.tar", tar_bytes(tuple(reversed(SHARDS[1]))))
    with pytest.raises(DataError, match=r"s3://data/train/part-1\.tar.*changed after daliaug"):
        joined_epoch(shards)
    each_is_its_own(prepare_samples(config("s3://data/train", tmp_path)))  # listed anew
    put(bucket, "list/0.png", encode(2)[1])
    with pytest.raises(DataError, match=r"s3://data/list/0\.png.*changed after daliaug"):
        joined_epoch(images)
