"""daliaug's ImageDataGenerator (flow_from_directory, flow), from_keras and split_model on
Keras' JAX and PyTorch backends, each in a fresh process where TensorFlow cannot be imported
(tests/keras/backends_job.py): model.fit trains on each, every sample comes once per epoch,
``it[i]`` is the batch iterating gives, the batches equal bitwise those of Keras on TensorFlow
for the same seed (DALI on the CPU in both), and the options that run TensorFlow ops are
refused with a daliaug error naming the option and the fix."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import run_keras_job

TIMEOUT = 400
FLOWS = ("directory", "arrays", "from_keras", "split_model")

pytestmark = pytest.mark.slow


def run_job(backend: str, root: Path, out: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The job's report and arrays on Keras' ``backend`` (TensorFlow blocked unless it is
    TensorFlow's; a model trained on all but TensorFlow)."""
    spec = {
        "block_tf": backend != "tensorflow",
        "fit": backend != "tensorflow",
        "root": str(root),
        "out": str(out),
    }
    return run_keras_job("tests.keras.backends_job", backend, spec, TIMEOUT)


@pytest.fixture(scope="module")
def tensorflow_run(class_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    return run_job("tensorflow", class_dir, tmp_path_factory.mktemp("tf") / "out.npz")


@pytest.fixture(scope="module", params=["jax", "torch"])
def run(
    request: pytest.FixtureRequest, class_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict, dict[str, np.ndarray]]:
    if importlib.util.find_spec(request.param) is None:
        pytest.skip(f"{request.param} is not installed (pip install '.[frameworks]')")
    out = tmp_path_factory.mktemp(request.param) / "out.npz"
    return request.param, *run_job(request.param, class_dir, out)


def batches(arrays: dict[str, np.ndarray], flow: str, epoch: int) -> list[list[np.ndarray]]:
    """The batches of ``flow``'s ``epoch``, each a list of its elements."""
    count = 1 + max(int(k.split("/")[2]) for k in arrays if k.startswith(f"{flow}/{epoch}/"))
    return [[arrays[f"{flow}/{epoch}/{b}/{i}"] for i in range(2)] for b in range(count)]


def test_flows_run_without_tensorflow(run: tuple) -> None:
    backend, report, _ = run
    assert report["backend"] == backend
    assert not report["tensorflow_loaded"]
    assert report["empty"] == [[0, 24, 24, 3], [0]]  # an empty flow's next(), as Keras'
    assert report["lengths"] == {"directory": 3, "arrays": 4, "from_keras": 3, "split_model": 3}


def test_fit_trains_two_epochs_on_each_flow(run: tuple) -> None:
    _, report, _ = run
    for flow in FLOWS:
        losses = report["fit"][flow]
        assert len(losses) == 2 and np.all(np.isfinite(losses)), (flow, losses)
    assert report["split_predicts_as_trained"]  # keras.io's functional model, split


def test_an_epoch_yields_every_sample_once(run: tuple) -> None:
    _, _, arrays = run
    for epoch in (0, 1):
        labels = np.concatenate([y for _, y in batches(arrays, "arrays", epoch)])
        np.testing.assert_array_equal(np.sort(labels), np.arange(13))
        for flow in (
            "directory",
            "from_keras",
            "split_model",
        ):  # class folders of 5, 4 and 3 images
            labels = np.concatenate([y for _, y in batches(arrays, flow, epoch)])
            np.testing.assert_array_equal(np.bincount(labels.astype(int)), [5, 4, 3])


def test_item_is_the_batch_iterating_gives(run: tuple) -> None:
    _, _, arrays = run
    for flow in ("directory", "arrays"):
        for i in range(2):
            np.testing.assert_array_equal(arrays[f"{flow}/item/{i}"], arrays[f"{flow}/0/0/{i}"])


def test_batches_equal_tensorflows_bitwise(run: tuple, tensorflow_run: tuple) -> None:
    _, _, arrays = run
    _, expected = tensorflow_run
    assert sorted(arrays) == sorted(expected)
    for key, value in expected.items():
        assert arrays[key].dtype == value.dtype, key
        np.testing.assert_array_equal(arrays[key], value, err_msg=key)
    shuffled = [np.concatenate([y for _, y in batches(expected, "arrays", e)]) for e in (0, 1)]
    assert not np.array_equal(*shuffled)  # epochs differ: the comparison covers the order


def test_options_running_tensorflow_ops_are_refused_with_the_fix(
    run: tuple, tensorflow_run: tuple
) -> None:
    backend, report, _ = run
    assert not any(tensorflow_run[0]["refused"].values())  # all run on TensorFlow
    for option, message in report["refused"].items():
        assert message.startswith("daliaug.errors.ConfigError"), (option, message)
        assert f"Keras runs on {backend}" in message
        assert "KERAS_BACKEND=tensorflow" in message
    assert report["refused"]["save_to_dir"].split(":")[1].strip() == "save_to_dir"
    assert "samplewise_center" in report["refused"]["samplewise_center"]
    assert "RandomRotation" in report["refused"]["reflect"]
    assert "fill_mode='constant'" in report["refused"]["reflect"]
