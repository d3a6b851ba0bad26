"""Paths are taken literally before they are taken as patterns: a file or object that exists
is read as itself whatever its name holds; a file two path entries give is read once; what a
folder holds besides shards is named; a device or pipe is refused unread."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daliaug.errors import ConfigError, DataError
from daliaug.prepare import prepare_samples
from daliaug.sources import storage
from tests.helpers import shards_config
from tests.s3_server import Server, serving
from tests.sources.test_webdataset import sample, write_tar


def config(path: str | Path | list[str], tmp_path: Path):
    path = path if isinstance(path, list) else str(path)
    return shards_config("webdataset", "unused", tmp_path, backend="cpu", source={"path": path})


def one_shard(path: Path, k: int) -> Path:
    """A shard at ``path`` holding sample ``k`` (class ``k``) alone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_tar(path, {f"{k:06d}": sample(k)})


def labels(path: str | Path | list[str], tmp_path: Path) -> list[int]:
    return prepare_samples(config(path, tmp_path)).labels.tolist()


def is_tar(name: str) -> bool:
    return name.endswith(".tar")


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(stem=st.text(alphabet="ab1[]*?!-", min_size=1, max_size=6))
def test_an_existing_file_is_itself_whatever_its_name_holds(
    tmp_path_factory: pytest.TempPathFactory, stem: str
) -> None:
    """A file whose name holds glob characters, beside the files its name matches as a
    pattern: its path lists that file alone."""
    folder = tmp_path_factory.mktemp("names")
    literal = folder / f"{stem}.tar"
    literal.write_bytes(b"")
    for decoy in ("a.tar", "b.tar", "1.tar", "ab.tar", "!.tar"):
        (folder / decoy).touch()
    assert storage.list_files([str(literal)], is_tar, ".tar").files == [str(literal)]


def test_br1_beside_it_reads_the_literal_shard(tmp_path: Path) -> None:
    one_shard(tmp_path / "d" / "br[1].tar", 1)
    one_shard(tmp_path / "d" / "br1.tar", 2)
    one_shard(tmp_path / "d" / "v[2].tar", 3)
    assert labels(tmp_path / "d" / "br[1].tar", tmp_path) == [1]
    assert labels(tmp_path / "d" / "v[2].tar", tmp_path) == [3]
    assert sorted(labels(tmp_path / "d" / "br?.tar", tmp_path)) == [2]  # a pattern still


def test_a_shard_two_entries_give_is_read_once(tmp_path: Path) -> None:
    """``[dir, dir/a.tar]``: a.tar once, and the second mention named in ``ignored``."""
    one_shard(tmp_path / "d" / "a.tar", 1)
    one_shard(tmp_path / "d" / "b.tar", 2)
    folder, shard = str(tmp_path / "d"), str(tmp_path / "d" / "a.tar")
    samples = prepare_samples(config([folder, shard], tmp_path))
    assert sorted(samples.labels.tolist()) == [1, 2]
    assert "listed twice" in samples.ignored[shard]


def test_what_a_folder_holds_besides_shards_is_named(tmp_path: Path) -> None:
    one_shard(tmp_path / "d" / "a.tar", 1)
    (tmp_path / "d" / "b.tar.gz").write_bytes(b"\x1f\x8b")
    (tmp_path / "d" / "sub.tar").mkdir()
    samples = prepare_samples(config(tmp_path / "d", tmp_path))
    assert samples.labels.tolist() == [1]
    assert samples.ignored == {
        str(tmp_path / "d" / "b.tar.gz"): "not a .tar file",
        str(tmp_path / "d" / "sub.tar"): "a folder (no .tar files are looked for in subfolders)",
    }


LIST = """
import sys
from daliaug.errors import DataError
from daliaug.prepare import prepare_samples
from tests.sources.test_literal_paths import config
from pathlib import Path
for path in sys.argv[2:]:
    try:
        prepare_samples(config(path, Path(sys.argv[1])))
    except DataError as e:
        print(e, flush=True)
"""


def test_a_device_or_pipe_is_refused_unread(tmp_path: Path) -> None:
    """``z.tar`` a link to ``/dev/zero``, or a FIFO, alone or in a folder: a DataError naming
    it, at once (reading either would never end)."""
    zero, fifo = tmp_path / "dev" / "z.tar", tmp_path / "fifo" / "z.tar"
    for z in (zero, fifo):
        z.parent.mkdir()
    os.symlink("/dev/zero", zero)
    os.mkfifo(fifo)
    given_named = [(zero.parent, zero), (zero, zero), (fifo.parent, fifo)]
    run = subprocess.run(
        [sys.executable, "-c", LIST, str(tmp_path), *(str(given) for given, _ in given_named)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).parents[2],
    )
    assert run.stdout.splitlines() == [
        f"source.path: {z} is not a regular file but a device, pipe or socket; it is not read"
        for _, z in given_named
    ], run.stderr


def test_an_empty_path_list_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"source\.webdataset\.path: an empty list names no"):
        config([], tmp_path)
    with pytest.raises(DataError, match=r"source\.path: found no \.tar files at .*none"):
        labels(str(tmp_path / "none"), tmp_path)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    one_shard(tmp_path / "s3" / "data" / "odd" / "br[1].tar", 1)
    one_shard(tmp_path / "s3" / "data" / "odd" / "br1.tar", 2)
    with serving(tmp_path / "s3", monkeypatch) as running:
        yield running


def test_an_existing_object_is_itself_whatever_its_key_holds(
    server: Server, tmp_path: Path
) -> None:
    assert labels("s3://data/odd/br[1].tar", tmp_path) == [1]
    assert labels("s3://data/odd/br?.tar", tmp_path) == [2]
    assert labels(["s3://data/odd", "s3://data/odd/br1.tar"], tmp_path) == [2, 1]
