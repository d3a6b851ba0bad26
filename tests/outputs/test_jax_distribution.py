"""keras.distribution.DataParallel on the JAX backend over two processes on this machine
(127.0.0.1, CPU collectives), two CPU devices each (tests/outputs/jax_distribution_job.py),
TensorFlow unimportable, through the JAX output and through the Grain output: model.fit runs,
every sample counts exactly once per epoch over both processes, and both processes run the
same number of steps; each process's Grain state, saved by Grain's checkpoint handler, restores
its own shard's batches."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.helpers import free_port, run_together, structured_image, write_image_dir

ROOT = Path(__file__).parents[2]
TIMEOUT = 300

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed"),
]


@pytest.fixture(scope="module", params=["jax", "grain"])
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    framework = request.param
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    root = tmp_path_factory.mktemp("jax_distribution")
    write_image_dir(
        root / "num", {"img": [structured_image(20 + i % 3, 24, seed=i) for i in range(23)]}
    )
    (root / "numbered.csv").write_text("".join(f"num/img/{i:04d}.png,{i}\n" for i in range(23)))
    port = free_port()
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    specs = [
        {
            "process": process,
            "processes": 2,
            "port": port,
            "devices": 2,
            "numbered": str(root / "numbered.csv"),
            "framework": framework,
            "checkpoint": str(root),
            "out": str(root / f"process{process}.json"),
        }
        for process in range(2)
    ]
    return run_together("tests.outputs.jax_distribution_job", specs, env, TIMEOUT)


def test_every_sample_once_per_epoch_over_the_processes(results: list[dict]) -> None:
    assert [r["devices"] for r in results] == [4, 4]
    for epoch in range(2):
        pairs = [
            (label, weight)
            for result in results
            for labels, weights in result["epochs"][epoch]
            for label, weight in zip(labels, weights, strict=True)
        ]
        assert sorted(label for label, weight in pairs if weight > 0) == list(range(23))
        assert [weight for _, weight in pairs if weight <= 0] == [0.0]  # 23 = 5 + 6 + 6 + 6
        # per process: its 2 devices' batches of 2 (the global batch 8 over 4 devices)
        assert all(len(labels) == 4 for r in results for labels, _ in r["epochs"][epoch])


def test_fit_runs_the_same_steps_in_every_process(results: list[dict]) -> None:
    assert [r["length"] for r in results] == [3, 3]
    assert [r["steps"] for r in results] == [[3, 3], [3, 3]]
    assert results[0]["loss"] == results[1]["loss"]  # one model, trained on the global batch


def test_each_process_restores_its_own_shard_from_grains_checkpoint(results: list[dict]) -> None:
    if "resumed" not in results[0]:
        pytest.skip("the JAX output has no Grain state")
    saved = [result["resumed"][0] for result in results]
    assert [result["resumed"][1] for result in results] == saved
    for result, labels in zip(results, saved, strict=True):  # saved at epoch 1's second batch
        assert labels[:2] == [batch for batch, _ in result["epochs"][1][1:]]
    assert saved[0] != saved[1]  # each process's own shard
