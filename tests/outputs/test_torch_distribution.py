"""``torch.distributed`` ranks as shards on Keras' PyTorch backend: two processes on this
machine (gloo on 127.0.0.1, tests/outputs/torch_distribution_job.py), TensorFlow unimportable. Every
sample counts exactly once per epoch over the ranks, each rank runs the same number of
batches of ``batch_size / ranks``, and a data-parallel loop of one's own around
``DistributedDataParallel`` keeps the ranks' models equal. ``keras.distribution`` does not
exist on this backend (Keras sets its ``distribution_lib`` to None for torch)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from daliaug.epoch import shard_range
from tests.helpers import free_port, run_together

ROOT = Path(__file__).parents[2]
TIMEOUT = 240

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    root = tmp_path_factory.mktemp("torch_distribution")
    port = free_port()
    env = {**os.environ, "KERAS_BACKEND": "torch", "CUDA_VISIBLE_DEVICES": ""}
    specs = [
        {"rank": rank, "world": 2, "port": port, "out": str(root / f"rank{rank}.json")}
        for rank in range(2)
    ]
    return run_together("tests.outputs.torch_distribution_job", specs, env, TIMEOUT)


def test_every_sample_once_per_epoch_over_the_ranks(results: list[dict]) -> None:
    for epoch in range(2):
        counted = []
        for result in results:
            for labels, weights in result["epochs"][epoch]:
                assert len(labels) == 2  # batch_size 4 over 2 ranks
                counted += [label for label, w in zip(labels, weights, strict=True) if w > 0]
        assert sorted(counted) == list(range(13))


def test_ranks_run_equal_batch_counts_and_read_contiguous_shards(results: list[dict]) -> None:
    assert [r["length"] for r in results] == [4, 4]  # 6 and 7 samples, each padded to 8
    assert all(len(r["epochs"][e]) == 4 for r in results for e in range(2))
    for rank, result in enumerate(results):
        start, stop = shard_range(13, rank, 2)
        for epoch in result["epochs"]:
            assert {label for labels, _ in epoch for label in labels} == set(range(start, stop))


def test_distributed_data_parallel_keeps_the_models_equal(results: list[dict]) -> None:
    assert results[0]["weights_sum"] == pytest.approx(results[1]["weights_sum"], abs=1e-9)


def test_keras_distribution_is_not_on_the_torch_backend(results: list[dict]) -> None:
    assert all(r["distribution"] != "DataParallel made" for r in results), results[0]


def test_a_single_rank_yields_weights_as_several_do() -> None:
    """Under ``torch.distributed`` the batches carry weights whatever the world size, so one
    training loop serves ``torchrun --nproc-per-node=1`` and ``=N`` alike."""
    import numpy as np
    import torch.distributed as dist

    import daliaug

    x = np.zeros((5, 8, 8, 3), np.uint8)
    config = {"source": {"type": "arrays"}, "image_size": 8, "batch_size": 2, "backend": "cpu"}
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1
    )
    try:
        batches = list(daliaug.make_dataset(config, x=x, y=np.arange(5), framework="torch"))
    finally:
        dist.destroy_process_group()
    assert [len(b) for b in batches] == [3, 3, 3]
    assert [b[2].tolist() for b in batches] == [[1, 1], [1, 1], [1, 0]]  # padded, as with N
