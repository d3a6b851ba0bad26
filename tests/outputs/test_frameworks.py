"""make_dataset on Keras' JAX and PyTorch backends, each in a fresh process where TensorFlow
cannot be imported (tests/outputs/framework_job.py): the backend's arrays, every sample once per
epoch, bitwise the batches of the TensorFlow output on the same engine (DALI on the CPU) for
the same seed (weights, label modes, resume, arrays and files alike), and model.fit training a
small CNN with validation data for two epochs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import run_keras_job, structured_image, write_image_dir

TIMEOUT = 400
ARRAY_TYPES = {"jax": ["jaxlib"], "torch": ["torch"]}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("frameworks")
    images = {
        c: [structured_image(30 + i, 28 + i % 3, seed=10 * k + i) for i in range(6)]
        for k, c in enumerate("abcd")
    }
    write_image_dir(root / "folders", images)
    write_image_dir(
        root / "num", {"img": [structured_image(26 + i % 4, 30, seed=i) for i in range(23)]}
    )
    (root / "numbered.csv").write_text("".join(f"num/img/{i:04d}.png,{i}\n" for i in range(23)))
    return root


def run_job(framework: str, data: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The job's report and arrays, on ``framework`` (TensorFlow blocked unless it is TF's)."""
    out = data / f"{framework}.npz"
    spec = {
        "framework": framework,
        "block_tf": framework != "tensorflow",
        "fit": framework != "tensorflow",
        "root": str(data / "folders"),
        "numbered": str(data / "numbered.csv"),
        "out": str(out),
    }
    return run_keras_job("tests.outputs.framework_job", framework, spec, TIMEOUT)


@pytest.fixture(scope="module")
def tensorflow_run(data: Path) -> tuple[dict, dict[str, np.ndarray]]:
    return run_job("tensorflow", data)


@pytest.fixture(scope="module", params=["jax", "torch"])
def run(request: pytest.FixtureRequest, data: Path) -> tuple[str, dict, dict[str, np.ndarray]]:
    if importlib.util.find_spec(request.param) is None:
        pytest.skip(f"{request.param} is not installed (pip install '.[frameworks]')")
    return request.param, *run_job(request.param, data)


def test_batches_are_the_backends_arrays_without_tensorflow(run: tuple) -> None:
    framework, report, _ = run
    assert report["types"] == ARRAY_TYPES[framework]
    assert report["tensorflow_loaded"] is False


def test_batches_equal_the_tensorflow_output_bitwise(run: tuple, tensorflow_run: tuple) -> None:
    _, report, arrays = run
    tf_report, tf_arrays = tensorflow_run
    assert report["lengths"] == tf_report["lengths"]
    assert sorted(arrays) == sorted(tf_arrays)
    for key, expected in tf_arrays.items():
        assert arrays[key].dtype == expected.dtype, key
        assert np.array_equal(arrays[key], expected), key


def test_one_epoch_yields_every_sample_once(run: tuple) -> None:
    _, report, arrays = run
    for epoch in (0, 1):
        labels = [arrays[f"numbered/{epoch}/{b}/1"] for b in range(report["lengths"]["numbered"])]
        assert sorted(np.concatenate(labels).tolist()) == list(range(23))
        kept = np.concatenate(
            [arrays[f"dropped/{epoch}/{b}/1"] for b in range(report["lengths"]["dropped"])]
        )
        assert len(kept) == len(set(kept.tolist())) == 20  # drop_remainder: 4 whole batches of 5
    assert not np.array_equal(arrays["shuffled/0/0/0"], arrays["shuffled/1/0/0"])
    assert arrays["weighted/0/0/2"].tolist() != [1.0] * 5  # class weights 2 and 0.5 applied


def test_fit_trains_two_epochs_with_validation(run: tuple) -> None:
    _, report, _ = run
    for name in ("folders", "arrays"):
        history = report[f"fit_{name}"]
        assert len(history["loss"]) == len(history["val_loss"]) == 2
        assert all(np.isfinite(history["loss"] + history["val_loss"]))
        assert history["loss"][1] < history["loss"][0]
        assert report[f"fit_{name}_next_epoch"] == 2  # Keras' first look counted for nothing
