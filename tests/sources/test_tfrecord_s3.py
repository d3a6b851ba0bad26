"""The ``tfrecord`` source on S3 (a real server, :mod:`tests.s3_server`): the batches of the same
records read locally, on the TF engine and on DALI's CPU graph (TensorFlow's side reads them
through boto3), and through DALI's own reader (a process that loads DALI before TensorFlow);
each record once across shards; every failure named by its bucket and key."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from daliaug import make_dataset
from daliaug.config import load_config
from daliaug.errors import BackendError, DataError
from daliaug.prepare import prepare_samples
from daliaug.sources import storage
from daliaug.sources.tfrecord import RecordSamples
from daliaug.tools.convert import write_tfrecords
from tests.helpers import free_port, joined_epoch, run_of, shards_config
from tests.s3_server import Server, serving

COUNT = 23
"""Records in the test set (``numbered_list``: record ``k``'s label is ``k``), in 3 files."""


@pytest.fixture(scope="module")
def bucket(numbered_list: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's root: the records and their ``daliaug.json`` in bucket ``data``, under
    ``rec/``."""
    root = tmp_path_factory.mktemp("s3")
    listing = load_config(
        {"source": {"type": "file_list", "path": str(numbered_list)}, "image_size": 8}
    )
    write_tfrecords(listing.source.samples(), root / "data" / "rec", shards=3)
    return root


@pytest.fixture
def server(bucket: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(bucket, monkeypatch) as running:
        yield running


def records_config(path: str | Path, tmp_path: Path, **fields):
    return shards_config("tfrecord", path, tmp_path, **{"batch_size": 5, **fields})


@pytest.mark.slow
def test_s3_records_give_the_batches_of_local_ones(
    server: Server, bucket: Path, tmp_path: Path
) -> None:
    """The same records on S3 and on disk: the same batches on the TF engine (whose reader
    DALI's graph under ``tf.data`` shares); class names from the ``daliaug.json`` beside them;
    the server gone before the next epoch, a DataError naming the object and the server."""
    remote = make_dataset(records_config("s3://data/rec", tmp_path, backend="tf"))
    got = joined_epoch(remote)
    local = records_config(bucket / "data" / "rec", tmp_path, backend="tf")
    want = joined_epoch(make_dataset(local))
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])
    assert sorted(got[1].tolist()) == list(range(COUNT))
    server.stop()
    start = time.monotonic()
    with pytest.raises(DataError, match=rf"s3://data/rec/data-.*unreachable.*{server.url}"):
        joined_epoch(remote)
    assert time.monotonic() - start < 60


def test_s3_records_are_indexed_once_and_each_read_once_per_epoch(
    server: Server, bucket: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object is streamed once to write DALI's index (the local file's own), then the
    index is reused; the shards' records, read on the host, are the local records of each
    shard's range, every record in exactly one shard; globs and prefixes list the files."""
    config = records_config("s3://data/rec", tmp_path)
    samples = prepare_samples(config)
    assert isinstance(samples, RecordSamples) and samples.on_s3
    local = prepare_samples(records_config(bucket / "data" / "rec", tmp_path / "local"))
    for theirs, ours in zip(local.index_files, samples.index_files, strict=True):
        assert Path(theirs).read_text() == Path(ours).read_text()
    streamed = []
    real = storage.open_stream
    monkeypatch.setattr(
        storage, "open_stream", lambda *a: (storage.is_s3(a[0]) and streamed.append(a)) or real(*a)
    )
    assert prepare_samples(config).index_files == samples.index_files
    assert streamed == []  # the kept indexes
    seen = []
    for shard in range(3):
        ours = list(samples.shard(shard, 3).host_records())
        theirs = list(local.shard(shard, 3).host_records())
        assert ours == theirs and len(ours) == len(local.shard(shard, 3))
        seen += ours
    assert len(set(seen)) == len(seen) == COUNT
    assert [s[2] is not None for s in streamed] == [True] * 3  # one ranged read per shard
    assert samples.class_names == [str(k) for k in range(COUNT)]  # its daliaug.json
    glob = records_config("s3://data/rec/data-0000[02]-*", tmp_path)
    assert [Path(f).name for f in glob.source.record_files()] == [
        "data-00000-of-00003.tfrecord",
        "data-00002-of-00003.tfrecord",
    ]


def test_s3_records_listed_give_the_batches_of_local_ones(
    server: Server, bucket: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed as columns (``source.listed``): each object streamed once to list it, then each
    batch's images read by ranged GETs: the batches of the same records listed on disk, each
    record once; a later start streams no object, nor does a new host's once the listing file
    is written beside the records (``daliaug check --write-listings``)."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    listed = {"source": {"listed": True}, "backend": "opencv"}
    remote = records_config("s3://data/rec", tmp_path, **listed)
    got = joined_epoch(make_dataset(remote, framework="numpy"))
    local = records_config(bucket / "data" / "rec", tmp_path, **listed)
    want = joined_epoch(make_dataset(local, framework="numpy"))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert sorted(got[1].tolist()) == list(range(COUNT))
    streamed = []
    real = storage.open_stream
    monkeypatch.setattr(storage, "open_stream", lambda *a: streamed.append(a) or real(*a))
    again = joined_epoch(make_dataset(remote, framework="numpy"))
    assert streamed == []
    np.testing.assert_array_equal(again[0], got[0])
    assert remote.source.write_listings() == ["s3://data/rec/daliaug-listing.json"]
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "new-host"))
    new_host = joined_epoch(make_dataset(remote, framework="numpy"))
    assert streamed == []
    np.testing.assert_array_equal(new_host[0], got[0])


def test_s3_record_failures_are_named(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(path: str, match: str) -> None:
        storage._client.cache_clear()
        with pytest.raises(DataError, match=match):
            prepare_samples(records_config(path, tmp_path, source={"num_classes": COUNT}))

    fails("s3://nobucket/rec", r"s3://nobucket/rec/: cannot list the objects: no such bucket")
    fails(
        "s3://data/rec/nokey.tfrecord",
        r"nokey\.tfrecord: cannot look the object up: no such key 'rec/nokey",
    )
    fails("s3://data/else", r"found no TFRecord files at s3://data/else")

    from botocore.stub import Stubber

    with Stubber(storage._client()) as stub:
        stub.add_client_error("list_objects_v2", "AccessDenied", http_status_code=403)
        with pytest.raises(DataError, match=r"s3://data/rec/: cannot list .*access denied"):
            prepare_samples(records_config("s3://data/rec", tmp_path))

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-key")
    fails("s3://data/rec", r"s3://data/rec/: cannot list .*secret key does not match")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    fails("s3://data/rec", r"s3://data/rec/: no S3 credentials .* AWS_ACCESS_KEY_ID")
    nothing = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", nothing)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "daliaugtestkey")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "daliaugtestsecret123")
    start = time.monotonic()
    fails("s3://data/rec", rf"s3://data/rec/: cannot list .*unreachable.*{nothing}")
    assert time.monotonic() - start < 30


JOB = """
import json, sys
from daliaug.config import load_config
from daliaug.outputs.dali_loader import DaliLoader

got = {}
for name, config in json.loads(sys.argv[1]).items():
    batches = [(x, y) for x, y in DaliLoader(load_config(config))]
    got[name] = [[float(x.sum()) for x, _ in batches], [y.ravel().tolist() for _, y in batches]]
print(json.dumps({"read": got, "tensorflow": "tensorflow" in sys.modules}))
"""


@pytest.mark.slow
def test_dalis_own_reader_reads_s3_records(server: Server, bucket: Path, tmp_path: Path) -> None:
    """DALI's ``fn.readers.tfrecord`` reads the ``s3://`` objects itself (its S3 client, the
    index kept here), in a process where TensorFlow is never loaded: the batches of the local
    records, each record in one shard."""
    configs = {
        name: records_config(path, tmp_path, source=shard).model_dump(mode="json")
        for name, path, shard in [
            ("local", bucket / "data" / "rec", {}),
            ("s3", "s3://data/rec", {}),
            *[(f"shard {i}", "s3://data/rec", {"shard_id": i, "num_shards": 3}) for i in range(3)],
        ]
    }
    env = {**os.environ, **server.env(), "PYTHONPATH": str(Path(__file__).parents[2])}
    job = subprocess.run(
        [sys.executable, "-c", JOB, json.dumps(configs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert job.returncode == 0, job.stderr[-2000:]
    got = json.loads(job.stdout.splitlines()[-1])
    assert not got["tensorflow"]
    read = got["read"]
    assert read["s3"] == read["local"]
    labels = [k for i in range(3) for batch in read[f"shard {i}"][1] for k in batch]
    assert sorted(labels) == list(range(COUNT))


def test_dali_refuses_s3_records_where_tensorflow_came_first(
    bucket: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where TensorFlow was loaded before DALI, DALI's first S3 read would abort the process
    (seen with TensorFlow 2.21 and DALI 2.4): a named refusal instead, before the graph."""
    from daliaug.engines.dali.pipeline import reader_pipeline

    config = records_config(bucket / "data" / "rec", tmp_path)
    local = prepare_samples(config)
    remote = dataclasses.replace(
        local, files=[f"s3://data/rec/{Path(f).name}" for f in local.files]
    )
    order = {
        "tensorflow.python._pywrap_tensorflow_internal": None,
        "nvidia.dali.backend_impl": None,
    }
    monkeypatch.setattr(sys, "modules", {**order, **sys.modules})
    with pytest.raises(BackendError, match=r"loaded TensorFlow before DALI .*s3://data/rec/data"):
        reader_pipeline(run_of(config, remote))
    assert reader_pipeline(run_of(config, local)) is not None
    monkeypatch.setattr(sys, "modules", {**dict(reversed(order.items())), **sys.modules})
    assert reader_pipeline(run_of(config, remote)) is not None
