"""KerasHub's object detectors on daliaug's output, on Keras' TensorFlow, JAX and PyTorch
backends (each in a process of its own: tests/keras/hub_job.py): a ``RetinaNetObjectDetector``
built from its constructor trains on ``make_dataset(config, framework="tensorflow")``, through
KerasHub's own ``.map(preprocess_samples).prefetch()`` on a DALI dataset (on the CPU here); the
JAX and PyTorch batches, which KerasHub's ``fit`` cannot take, are refused with a daliaug error
naming that fix; and the loss falls over a few epochs (on JAX, whose one process also makes
every check of the other backends). The backends in processes of their own are slow tests
(TensorFlow and KerasHub imported afresh, the train step traced: about 25 s of CPU each); the
refusal is checked in this process too."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import daliaug
from daliaug.tools.demo_data import write_detection_dataset
from tests.helpers import run_keras_job
from tests.keras.hub_job import config, retina_net

TIMEOUT = 300
XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("keras_hub") is None, reason="keras-hub is not installed"
)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_detection_dataset(tmp_path_factory.mktemp("shapes"), count=16, size=(64, 80))


def run_job(
    backend: str, root: Path, out: Path, epochs: int, device: str = "cpu"
) -> tuple[dict, np.ndarray]:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    spec = {"root": str(root), "out": str(out), "epochs": epochs, "device": device}
    # JAX's XLA on the CPU unoptimized: it compiles each weight shape's initializer and the
    # train step, for a few steps of a small model (a third less CPU, the same losses)
    env = {"XLA_FLAGS": XLA_FLAGS} if backend == "jax" else {}
    report, arrays = run_keras_job("tests.keras.hub_job", backend, spec, TIMEOUT, env)
    # KerasHub's .map(...).prefetch() on top kept daliaug's epochs: after fit's epochs, the
    # next pass is the next epoch (the batch of a dataset started there, bitwise)
    np.testing.assert_array_equal(arrays["boxes"], arrays["resumed"])
    return report, arrays["boxes"]


@pytest.mark.slow
def test_keras_hub_refuses_the_backends_own_batches_naming_the_fix(shapes: Path) -> None:
    """KerasHub's ``fit`` converts what is not ``tf.data`` with ``from_tensor_slices``: the
    JAX and PyTorch batches say what to pass instead (in this process, before any training)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    batches = daliaug.make_dataset(config(shapes), framework="torch")
    with pytest.raises(daliaug.ConfigError, match=r"KerasHub.*framework='tensorflow'"):
        retina_net().fit(batches, epochs=1)


def check_trained(backend: str, report: dict, boxes: np.ndarray, epochs: int) -> None:
    """The job trained on ``backend`` for ``epochs`` on DALI's CPU batches, with finite
    losses and boxes of the config's shape, and (but on TensorFlow) the backend's own batches
    were refused naming ``framework='tensorflow'``."""
    assert report["backend"] == backend and report["engine"] == "DALI on the CPU"
    assert len(report["loss"]) == epochs and np.isfinite(report["loss"]).all()
    assert boxes.shape == (8, 4, 4) and (boxes[..., 2:] >= boxes[..., :2]).all()
    if backend != "tensorflow":
        assert "framework='tensorflow'" in report["refused"]
        assert "KerasHub" in report["refused"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_a_keras_hub_detector_trains_on_every_backend(
    backend: str, shapes: Path, tmp_path: Path
) -> None:
    """JAX's checks: test_a_keras_hub_detector_learns, in its one process."""
    report, boxes = run_job(backend, shapes, tmp_path / "out.npz", epochs=1)
    check_trained(backend, report, boxes, epochs=1)


@pytest.mark.slow
def test_a_keras_hub_detector_learns(shapes: Path, tmp_path: Path) -> None:
    """On JAX: every check of test_a_keras_hub_detector_trains_on_every_backend, and the loss
    falls."""
    report, boxes = run_job("jax", shapes, tmp_path / "out.npz", epochs=8)
    check_trained("jax", report, boxes, epochs=8)
    loss = report["loss"]  # 1382, 141, 16, 14, 13, 15, 6, 11 on the development machine
    assert max(loss[4:]) < loss[1] < loss[0], loss


@pytest.mark.gpu
@pytest.mark.slow
def test_a_keras_hub_detector_trains_on_a_gpu_placed_dali_dataset(
    shapes: Path, tmp_path: Path
) -> None:
    """KerasHub's .map(...).prefetch() after a DALI dataset placed on the GPU (not yet run on a
    GPU: the README says so until this passes there)."""
    report, _ = run_job("tensorflow", shapes, tmp_path / "out.npz", epochs=2, device="gpu")
    assert report["engine"] == "DALI on the GPU"
    assert all(np.isfinite(report["loss"]))
