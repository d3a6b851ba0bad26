"""``backend: auto`` on a CPU host picks the OpenCV engine where ``bench.choose`` measured it
fastest (JAX, PyTorch and NumPy outputs, file sources) and only where OpenCV imports and the
engine runs the config; without OpenCV, the choice of before, without a word."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import daliaug.engines.select as select
from daliaug import load_config
from daliaug.engine_names import Choice
from daliaug.engines.select import choose, cpu_placement, opencv_installed
from daliaug.errors import BackendError

FILES = {"type": "directory", "path": "data"}
SOURCES: dict[str, dict[str, Any]] = {
    "directory": FILES,
    "file_list": {"type": "file_list", "path": "list.csv"},
    "webdataset": {"type": "webdataset", "path": "shards"},
    "coco": {"type": "coco", "annotations": "a.json", "images": "i"},
    "segmentation": {"type": "segmentation", "images": "i", "masks": "m", "num_classes": 3},
    "arrays": {"type": "arrays"},
    "tfrecord": {"type": "tfrecord", "path": "records"},
    "webdataset-masks": {"type": "webdataset", "path": "s", "targets": "masks", "num_classes": 3},
}
OPENCV = ("directory", "file_list", "webdataset", "coco", "segmentation")
"""The source kinds the OpenCV engine measured fastest on through NumPy (choose-*.md)."""


def config(kind: str, **fields: Any) -> Any:
    return load_config({"source": SOURCES[kind], "image_size": 32, **fields})


@pytest.fixture
def cpu_host(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No GPU, DALI installed: ``auto`` takes the CPU's measured path."""
    monkeypatch.setattr(select, "cuda_driver", lambda: False)
    monkeypatch.setattr(select, "dali_installed", lambda: True)
    monkeypatch.setattr(select, "dali_gpu_count", lambda: 0)
    return monkeypatch


@pytest.mark.parametrize("kind", list(SOURCES))
@pytest.mark.parametrize("framework", ["numpy", "jax", "torch"])
def test_auto_picks_opencv_where_it_measured_fastest(
    cpu_host: pytest.MonkeyPatch, kind: str, framework: str
) -> None:
    cpu_host.setattr(select, "opencv_installed", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = choose(config(kind), framework)
    assert chosen == (Choice("opencv", "cpu") if kind in OPENCV else Choice("dali", "cpu"))


@pytest.mark.parametrize("kind", list(SOURCES))
def test_without_opencv_the_choice_is_the_one_before(
    cpu_host: pytest.MonkeyPatch, kind: str
) -> None:
    cpu_host.setattr(select, "opencv_installed", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and nothing said
        assert choose(config(kind), "numpy") == Choice("dali", "cpu")
        before = "cpu" if kind == "segmentation" else "tf"
        assert cpu_placement(config(kind)) == before


def test_a_policy_stays_on_dali(cpu_host: pytest.MonkeyPatch) -> None:
    """A tie in the measurement: DALI's CPU operators, as before."""
    cpu_host.setattr(select, "opencv_installed", lambda: True)
    policy = config("directory", transforms=[{"type": "rand_augment"}])
    assert choose(policy, "numpy") == Choice("dali", "cpu")


def test_tf_data_keeps_its_measured_engines(cpu_host: pytest.MonkeyPatch) -> None:
    cpu_host.setattr(select, "opencv_installed", lambda: True)
    assert choose(config("directory"), "tensorflow") == Choice("tf", "cpu")
    assert choose(config("segmentation"), "tensorflow") == Choice("dali", "cpu")


def test_a_named_backend_is_kept(cpu_host: pytest.MonkeyPatch) -> None:
    cpu_host.setattr(select, "opencv_installed", lambda: True)
    assert choose(config("directory", backend="cpu"), "numpy") == Choice("dali", "cpu")
    assert choose(config("arrays", backend="opencv"), "numpy") == Choice("opencv", "cpu")


def test_without_dali_numpy_runs_on_opencv_where_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select, "dali_installed", lambda: False)
    monkeypatch.setattr(select, "opencv_installed", lambda: True)
    assert choose(config("arrays"), "torch") == Choice("opencv", "cpu")
    assert choose(config("directory"), "tensorflow") == Choice("tf", "cpu")
    with pytest.raises(BackendError, match="needs NVIDIA DALI"):
        choose(config("tfrecord"), "numpy")
    monkeypatch.setattr(select, "opencv_installed", lambda: False)
    with pytest.raises(BackendError, match=r"needs NVIDIA DALI.*daliaug\[opencv\]"):
        choose(config("directory"), "numpy")


def test_opencv_installed_is_whether_cv2_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    opencv_installed.cache_clear()
    assert opencv_installed()
    monkeypatch.setitem(__import__("sys").modules, "cv2", None)  # import cv2 raises
    opencv_installed.cache_clear()
    try:
        assert not opencv_installed()
    finally:
        opencv_installed.cache_clear()
