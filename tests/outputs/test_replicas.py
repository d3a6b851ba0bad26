"""One pipeline per replica through tf.distribute, run for real on the CPU: MirroredStrategy
over 2 and 3 logical CPU devices and MultiWorkerMirroredStrategy with 2 worker processes on
127.0.0.1, each training with model.fit (tests/outputs/strategy_job.py). Every sample counts exactly
once per epoch over all replicas and workers, every replica runs the same number of batches,
shards draw their own parameters, and the loss falls."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from daliaug.epoch import replica_length
from daliaug.errors import ConfigError, DataError
from tests.helpers import config_for, structured_image, write_image_dir
from tests.outputs.strategy_job import FIT_EPOCHS

ROOT = Path(__file__).parents[2]
TIMEOUT = 300


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replicas")
    write_image_dir(root, {"img": [structured_image(30 + i % 4, 32, seed=i) for i in range(23)]})
    (root / "numbered.csv").write_text("".join(f"img/{i:04d}.png,{i}\n" for i in range(23)))
    (root / "same.csv").write_text("".join(f"img/0000.png,{i}\n" for i in range(12)))
    return root


def job(spec: dict, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.outputs.strategy_job", json.dumps(spec)],
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process: subprocess.Popen, out: Path) -> dict:
    try:
        log, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"a strategy job ran past {TIMEOUT} s: {process.communicate()[0][-2000:]}")
    assert process.returncode == 0, log[-4000:]
    return json.loads(out.read_text())


def check_epochs(results: list[dict], replicas: int) -> None:
    """Over all replicas of all workers: each sample once (weight > 0), padding weighs 0, the
    same batch count everywhere; with drop_remainder the same count dropped everywhere."""
    numbered = [r for result in results for r in result["numbered"]]
    assert len(numbered) == replicas
    assert len({len(batches) for batches in numbered}) == 1
    pairs = [
        (i, w) for batches in numbered for ids, ws in batches for i, w in zip(ids, ws, strict=True)
    ]
    assert sorted(i for i, w in pairs if w > 0) == list(range(23))
    assert all(w == 0.0 for i, w in pairs if w <= 0) and all(w == 1.0 for _, w in pairs if w > 0)
    per_replica = 6 // replicas
    assert all(len(ids) == per_replica for batches in numbered for ids, _ in batches)
    dropped = [r for result in results for r in result["dropped"]]
    assert len({len(batches) for batches in dropped}) == 1
    kept = [i for batches in dropped for ids, _ in batches for i in ids]
    assert len(kept) == len(set(kept)) == replicas * len(dropped[0]) * per_replica
    firsts = [np.asarray(image) for result in results for image in result["same_first"]]
    assert not any(np.array_equal(firsts[0], other) for other in firsts[1:])  # own parameters
    for result in results:
        losses = result["loop_losses"]
        assert losses[-1] < losses[0], losses


@pytest.mark.slow
@pytest.mark.parametrize(("cpus", "backend"), [(3, "cpu"), (2, "tf")])  # odd and even
def test_mirrored_strategy_over_logical_cpus(
    data: Path, tmp_path: Path, cpus: int, backend: str
) -> None:
    out = tmp_path / "result.json"
    spec = {
        "strategy": "mirrored",
        "cpus": cpus,
        "backend": backend,
        "root": str(data),
        "out": str(out),
    }
    result = finish(job(spec), out)
    check_epochs([result], cpus)
    assert not result["fit_error"], result["fit_error"]  # model.fit too, every epoch
    assert len(result["fit_losses"]) == FIT_EPOCHS


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.fixture(scope="module")
def two_workers(data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """Two worker processes of one MultiWorkerMirroredStrategy on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("workers")
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes, outs = [], []
    for index in range(2):
        out = tmp / f"worker{index}.json"
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        spec = {
            "strategy": "multiworker",
            "cpus": 1,
            "backend": "cpu",
            "root": str(data),
            "out": str(out),
        }
        processes.append(job(spec, {"TF_CONFIG": json.dumps(config)}))
        outs.append(out)
    return [finish(p, out) for p, out in zip(processes, outs, strict=True)]


@pytest.mark.slow
def test_multi_worker_mirrored_strategy_with_two_workers(two_workers: list[dict]) -> None:
    """Datasets and training steps (strategy.run) across two worker processes."""
    check_epochs(two_workers, 2)


@pytest.mark.xfail(
    strict=True,
    reason="Keras 3 model.fit under MultiWorkerMirroredStrategy fails in its first-batch build "
    "(strategy.reduce of the batch) before any step, with any dataset: keras-team/keras#20585",
)
def test_model_fit_under_multi_worker_mirrored_strategy(two_workers: list[dict]) -> None:
    for result in two_workers:
        assert not result["fit_error"], result["fit_error"]
        assert result["fit_losses"][-1] < result["fit_losses"][0]


def test_replicas_run_equal_batch_counts() -> None:
    assert replica_length(23, 2, 3, drop_remainder=False) == 12  # shards 11 and 12
    assert replica_length(23, 2, 3, drop_remainder=True) == 9
    assert replica_length(24, 3, 4, drop_remainder=False) == 8
    with pytest.raises(DataError, match="batch_size: 8 per replica is more than the 7 samples"):
        replica_length(23, 3, 8, drop_remainder=True)


def strategy(replicas: int) -> SimpleNamespace:
    return SimpleNamespace(num_replicas_in_sync=replicas, extended=SimpleNamespace())


@pytest.mark.parametrize(
    ("fields", "replicas", "error", "message"),
    [
        ({"batch_size": 10}, 3, ConfigError, "batch_size: 10 .* does not divide by the 3 replicas"),
        ({"batch_size": 60}, 30, DataError, "source: 23 samples for 30 replicas"),
    ],
)
def test_bad_replica_settings_name_the_value(
    numbered_list: Path, fields: dict, replicas: int, error: type, message: str
) -> None:
    import daliaug

    source = {"type": "file_list", "path": str(numbered_list)}
    config = config_for(numbered_list.parent, source=source, **fields)
    with pytest.raises(error, match=message):
        daliaug.make_dataset(config, strategy=strategy(replicas))


def test_sharded_sources_are_refused_under_a_strategy(numbered_list: Path) -> None:
    import daliaug

    source = {"type": "file_list", "path": str(numbered_list), "num_shards": 2}
    config = config_for(numbered_list.parent, source=source, batch_size=4)
    with pytest.raises(ConfigError, match=r"source\.num_shards: 2, but under a strategy"):
        daliaug.make_dataset(config, strategy=strategy(2))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "worlds", "after"),
    [
        ("opencv", [2, 4], 2),
        ("tf", [1, 4], 3),
        ("cpu", [4, 2], 1),
        ("tf", [4, 2], 1),
        ("files", [2, 4], 1),
        ("one replica", [2, 1], 1),
    ],
)
def test_a_strategy_takes_the_rest_of_an_epoch_another_world_began(
    backend: str, worlds: list[int], after: int, tmp_path: Path
) -> None:
    """``tf.data`` under a ``MirroredStrategy`` given a state another number of replicas took
    mid-epoch (or one dataset without a strategy): the replicas deal the rest of that epoch out
    among them, every sample of the epoch once across both worlds, each with the pixels the
    first world's uninterrupted epoch gave it; the next epoch is whole (on OpenCV, TensorFlow's
    ops over arrays gathered by index, DALI on the CPU; ``files``: a file list on TensorFlow's
    ops, checked beside training; ``one replica``: OpenCV, a strategy of one replica)."""
    from tests.helpers import run_keras_job

    spec: dict = {"worlds": worlds, "after": after, "out": str(tmp_path / "o.npz")}
    spec["backend"] = {"files": "tf", "one replica": "opencv"}.get(backend, backend)
    spec["one_replica"] = backend == "one replica"
    if backend == "files":
        root = tmp_path / "data"
        write_image_dir(root, {"img": [structured_image(20, 24, seed=i) for i in range(23)]})
        listing = root / "list.csv"
        listing.write_text("path,label\n" + "".join(f"img/{i:04d}.png,{i}\n" for i in range(23)))
        spec["listing"] = str(listing)
    env = {"DALIAUG_CACHE": str(tmp_path / "cache")}
    job = "tests.outputs.strategy_resume_job"
    report, images = run_keras_job(job, "tensorflow", spec, TIMEOUT, env)
    everything = list(range(23))
    assert sorted(x for batch in report["whole"] for x in batch) == everything
    before = [x for batch in report["before"] for x in batch]
    assert before == [x for batch in report["whole"][:after] for x in batch]
    rest = [x for batch in report["rest"] for x in batch]
    assert sorted(before + rest) == everything
    for sample in rest:
        assert np.array_equal(images[f"rest{sample}"], images[f"whole{sample}"])
    assert sorted(x for batch in report["next"] for x in batch) == everything
    state = report["state"]
    assert (state["world"], state["position"]) == (worlds[0], 4 * after)


@pytest.mark.slow
def test_tfrecords_under_a_strategy_give_each_replica_its_own_records(
    numbered_records: Path, tmp_path: Path
) -> None:
    """TFRecords read by ``tf.data`` under a strategy of 2 replicas: each record once per
    epoch over both (each replica reads its own files), and a state taken after a batch
    resumes the rest of that epoch on the same strategy, then the next epoch whole."""
    from tests.helpers import run_keras_job

    spec = {"worlds": [2, 2], "after": 1, "backend": "tf", "out": str(tmp_path / "o.npz")}
    spec |= {"records": str(numbered_records), "index_dir": str(tmp_path / "idx")}
    job = "tests.outputs.strategy_resume_job"
    report, images = run_keras_job(job, "tensorflow", spec, TIMEOUT)
    everything = list(range(23))
    assert sorted(x for batch in report["whole"] for x in batch) == everything
    before = [x for batch in report["before"] for x in batch]
    assert before == report["whole"][0]
    rest = [x for batch in report["rest"] for x in batch]
    assert sorted(before + rest) == everything
    for sample in rest:
        assert np.array_equal(images[f"rest{sample}"], images[f"whole{sample}"])
    assert sorted(x for batch in report["next"] for x in batch) == everything
