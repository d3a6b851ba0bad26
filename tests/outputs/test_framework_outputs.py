"""The pieces of the JAX and PyTorch outputs that need neither framework nor a GPU: epochs per
pass (a pass left unfinished runs again), the framework choice and its errors, and the GPU
graph that DALI's own JAX and PyTorch iterators run (checked without a GPU); the GPU run itself
is marked gpu."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.engines.dali.check import graph_problems
from daliaug.errors import ConfigError
from daliaug.outputs import framework_of
from daliaug.outputs.batches import Batches
from daliaug.outputs.dali_loader import define_fed_pipeline
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.shards import Shards
from tests.helpers import config_for, run_of


class Counting:
    """A stand-in pipeline: every ``iter()`` is its next epoch of 3 batches ``(epoch, i)``,
    the first from batch ``first`` on."""

    def __init__(self, epoch: int, opened: list[int], first: int = 0) -> None:
        self.epoch, self.first = epoch, first
        opened.append(epoch)

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        first, self.first = self.first, 0
        for i in range(first, 3):
            yield (epoch, i)


def test_a_pass_left_unfinished_runs_its_epoch_again_from_a_fresh_pipeline() -> None:
    opened: list[int] = []
    batches = Batches(lambda e, _: Counting(e, opened), 3, 1, initial_epoch=2)
    assert next(iter(batches)) == (2, 0)  # Keras' first look, then left
    assert list(batches) == [(2, 0), (2, 1), (2, 2)]
    assert list(batches) == [(3, 0), (3, 1), (3, 2)]  # the same pipeline, its next epoch
    assert opened == [2, 2] and batches.epoch == 4


def test_epoch_sync_sets_the_epoch_the_next_pass_runs() -> None:
    from daliaug.keras import EpochSync

    opened: list[int] = []
    batches = Batches(lambda e, _: Counting(e, opened), 3, 1)
    assert list(batches) == [(0, 0), (0, 1), (0, 2)]
    EpochSync(batches).on_epoch_begin(5)  # as after a restore by BackupAndRestore
    assert list(batches) == [(5, 0), (5, 1), (5, 2)]
    assert list(batches) == [(6, 0), (6, 1), (6, 2)] and opened == [0, 5]


def test_a_pipeline_running_past_its_epoch_fails() -> None:
    batches = Batches(lambda e, _: Counting(e, []), 2, 1)
    with pytest.raises(RuntimeError, match="epoch 0 ran past its 2 batches"):
        list(batches)


def test_framework_follows_keras_or_is_checked() -> None:
    import keras

    assert framework_of(None) == keras.backend.backend()
    with pytest.raises(ConfigError, match="framework: 'mxnet' is not one of"):
        framework_of("mxnet")


def test_frameworks_without_tensorflow_refuse_tensorflow_ops_and_strategies(
    demo_dir: Path,
) -> None:
    with pytest.raises(ConfigError, match="backend: 'tf' runs TensorFlow ops here"):
        daliaug.make_dataset(config_for(demo_dir, backend="tf"), framework="jax")
    with pytest.raises(ConfigError, match=r"strategy: a tf\.distribute strategy needs"):
        daliaug.make_dataset(config_for(demo_dir), framework="torch", strategy=object())


def test_auto_takes_opencv_for_frameworks_without_tensorflow(demo_dir: Path) -> None:
    """``backend: auto`` on the CPU puts arrays and files on TensorFlow's ops for ``tf.data``;
    the other frameworks take the OpenCV engine for files, measured fastest there (the same
    batches as ``opencv``; tests/engines/test_choose_opencv.py has the whole rule)."""
    auto = daliaug.make_dataset(config_for(demo_dir, backend="auto"), framework="numpy")
    assert str(daliaug.describe(auto)) == "OpenCV on the CPU"
    cv = daliaug.make_dataset(config_for(demo_dir, backend="opencv"), framework="numpy")
    for got, want in zip(auto, cv, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_numpy_batches_need_no_keras(demo_dir: Path) -> None:
    batches = daliaug.make_dataset(config_for(demo_dir, batch_size=16), framework="numpy")
    images, labels = next(iter(batches))
    assert isinstance(images, np.ndarray) and images.shape == (16, 64, 64, 3)
    assert len(batches) == 3 and labels.dtype == np.int32


def test_the_gpu_graph_of_a_padded_weighted_shard_keeps_dalis_device_rules(
    demo_dir: Path,
) -> None:
    config = config_for(demo_dir, batch_size=9)
    run = run_of(config, config.source.samples(), "gpu")
    shards = Shards.split(run, DatasetOptions(), 3, "device", "a keras.distribution")
    shard, options = shards.shard(2)
    assert options.weighs and options.length == 18  # 16 samples, 6 batches of 3, 2 padded
    problems = graph_problems(lambda: define_fed_pipeline(shard.on(0), 0, options))
    assert problems == []


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_gpu_batches_stay_on_the_gpu(demo_dir: Path, framework: str) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    config = config_for(demo_dir, backend="gpu", batch_size=8)
    gpu = daliaug.make_dataset(config, framework=framework)
    cpu = daliaug.make_dataset(config.model_copy(update={"backend": "cpu"}), framework="numpy")
    for (images, labels), (cpu_images, cpu_labels) in zip(gpu, cpu, strict=True):
        device = images.device if framework == "torch" else next(iter(images.devices()))
        assert "cuda" in str(device).lower() or "gpu" in str(device).lower()
        host = [np.asarray(a.cpu() if framework == "torch" else a) for a in (images, labels)]
        assert np.array_equal(host[1], cpu_labels)
        assert np.abs(host[0] - cpu_images).max() < 8  # nvJPEG and libjpeg decode apart


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_gpu_iterators_resume_mid_epoch_with_the_uninterrupted_batches(
    demo_dir: Path, framework: str
) -> None:
    """DALI's iterator on the GPU restored after 1 of an epoch's batches: the rest of that
    epoch and the next one are the uninterrupted run's (same samples, pixels as the GPU made
    them)."""
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    config = config_for(demo_dir, backend="gpu", batch_size=8, seed=4)

    def host(batches: Any) -> list[list[np.ndarray]]:
        to = (lambda a: a.cpu().numpy()) if framework == "torch" else np.asarray
        return [[to(a) for a in batch] for batch in batches]

    whole = daliaug.make_dataset(config, framework=framework)
    uninterrupted = host(whole) + host(whole)
    taken = daliaug.make_dataset(config, framework=framework)
    for _ in taken:
        break
    resumed = daliaug.make_dataset(config, framework=framework, state=taken.get_state())
    again = host(resumed) + host(resumed)
    assert len(again) == len(uninterrupted) - 1
    for got, expected in zip(again, uninterrupted[1:], strict=True):
        assert np.array_equal(got[1], expected[1])
        assert np.abs(got[0].astype(float) - expected[0]).max() <= 1  # GPU resampling


@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_keras_on_a_backend_that_is_not_installed_is_named_with_the_fix(
    demo_dir: Path, framework: str
) -> None:
    """On a GPU host with JAX and PyTorch but no TensorFlow, Keras' default backend cannot
    start: make_dataset names the backend and the variable to set, not Keras' ImportError
    (following that backend, framework=None, is tests/test_extras.py's)."""
    message = refusal(demo_dir, "tensorflow", framework, "", "ConfigError", 2)
    assert "Keras cannot start on its backend (tensorflow)" in message
    assert "tensorflow is not installed" in message
    assert f"KERAS_BACKEND={framework}" in message


def refusal(
    demo_dir: Path, missing: str, framework: str | None, fields: str, error: str, code: int
) -> str:
    """What ``make_dataset(config, framework=framework)`` says, in a process of its own with
    the module ``missing`` unimportable and Keras on TensorFlow, where it raises ``error``
    (exit ``code``): the message."""
    program = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "import daliaug\n"
        f"source = {{'type': 'directory', 'path': {str(demo_dir)!r}}}\n"
        "config = daliaug.load_config("
        f"{{'source': source, 'image_size': 32, 'batch_size': 4{fields}}})\n"
        "try:\n"
        f"    daliaug.make_dataset(config, framework={framework!r})\n"
        f"except daliaug.{error} as e:\n"
        "    print(e)\n"
        f"    sys.exit({code})\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == code, result.stdout + result.stderr[-2000:]
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("missing", "framework", "named"),
    [
        ("tensorflow", None, "TensorFlow"),  # Keras' backend is TensorFlow (KERAS_BACKEND)
        ("tensorflow", "tensorflow", "TensorFlow"),
        ("nvidia.dali_tf_plugin", "tensorflow", "DALI's TensorFlow plugin"),
    ],
)
def test_tf_data_without_the_tensorflow_extra_names_the_extra_and_its_command(
    demo_dir: Path, missing: str, framework: str | None, named: str
) -> None:
    """A JAX or PyTorch user's install (no ``tensorflow`` extra) asked for a ``tf.data``
    dataset: a BackendError naming what is missing, the extra and the command that installs
    it, TensorFlow first."""
    message = refusal(demo_dir, missing, framework, ", 'backend': 'cpu'", "BackendError", 4)
    assert f"{named}, which is not installed" in message
    assert "daliaug's tensorflow extra" in message
    first, second = message.split("pip install ")[1:3]
    assert "'tensorflow==2.21.*'" in first
    assert second.startswith("--no-build-isolation 'daliaug[tensorflow]'")
