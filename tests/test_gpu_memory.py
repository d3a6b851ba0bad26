"""TensorFlow's GPU memory policy is in place before TensorFlow's runtime starts (no GPU here:
a stand-in CUDA driver, real TensorFlow in a fresh process each, its runtime's start watched).

TensorFlow reads ``TF_FORCE_GPU_ALLOW_GROWTH`` when its runtime creates the GPU devices, and
``tf.config`` settings only before that; DALI needs the memory TensorFlow would otherwise take
at start-up (daliaug.cuda)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daliaug import cuda

ROOT = Path(__file__).parents[1]

DRIVER = """
import ctypes
_cdll = ctypes.CDLL
def _with_driver(name, *args, **kwargs):  # a stand-in libcuda: the driver probe finds it
    return object() if name == "libcuda.so.1" else _cdll(name, *args, **kwargs)
ctypes.CDLL = _with_driver
"""

WATCH = """
import os
from tensorflow.python.eager import context
_start = context.Context.ensure_initialized
_seen = {}
def _watched(self):
    if self._context_handle is None and "growth" not in _seen:
        _seen["growth"] = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")
    return _start(self)
context.Context.ensure_initialized = _watched
"""

REPORT = """
import json, daliaug.cuda
print(json.dumps({"at_start": _seen.get("growth"), "policy": daliaug.cuda.GROWTH,
                  "started": daliaug.cuda.tf_runtime_started()}))
"""

STARTS = {
    "a tf op": "import tensorflow as tf\ntf.constant(1.0)",
    "a strategy": "import tensorflow as tf\ntf.distribute.MirroredStrategy(['/cpu:0'])",
    "make_dataset": (
        "import numpy as np, daliaug\n"
        "x = np.zeros((4, 8, 8, 3), np.uint8)\n"
        "ds = daliaug.make_dataset({'source': {'type': 'arrays'}, 'image_size': 8, "
        "'batch_size': 2, 'backend': 'tf'}, x=x, y=np.arange(4) % 2)\n"
        "next(iter(ds))"
    ),
}


def run(code: str, env: dict[str, str] | None = None) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != cuda.GROWTH_VARIABLE}
    environment.update({"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT), **(env or {})})
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("start", STARTS)
def test_import_daliaug_turns_memory_growth_on_before_tensorflows_runtime_starts(
    start: str,
) -> None:
    """``import daliaug`` first, then whatever starts TensorFlow (a model's first op, a
    strategy, make_dataset itself): the runtime starts with memory growth on."""
    code = DRIVER + "import daliaug\nimport tensorflow\n" + WATCH + STARTS[start] + "\n" + REPORT
    assert run(code) == {"at_start": "true", "policy": "set", "started": True}


@pytest.mark.slow
def test_the_users_own_setting_is_kept() -> None:
    code = DRIVER + "import daliaug\nimport tensorflow\n" + WATCH + STARTS["a tf op"] + REPORT
    found = run(code, {cuda.GROWTH_VARIABLE: "false"})
    assert found == {"at_start": "false", "policy": "user", "started": True}


@pytest.mark.slow
def test_too_late_when_tensorflow_started_before_import_daliaug() -> None:
    """Nothing is set that the runtime would no longer read; the GPU dataset warns then
    (tests/engines/test_tf_gpu_rules.py)."""
    code = DRIVER + "import tensorflow\n" + WATCH + STARTS["a tf op"] + "\nimport daliaug\n"
    found = run(code + REPORT)
    assert found == {"at_start": None, "policy": "too late", "started": True}


@pytest.mark.slow
def test_nothing_is_set_without_a_cuda_driver() -> None:
    assert not cuda.cuda_driver()  # this machine
    found = run("import daliaug\nimport tensorflow\n" + WATCH + STARTS["a tf op"] + REPORT)
    assert found == {"at_start": None, "policy": "no driver", "started": True}


@pytest.mark.slow
def test_the_gpu_dataset_applies_the_policy_before_it_starts_the_runtime() -> None:
    """Where the variable is not set (TensorFlow imported first, or the driver not found at
    import), the GPU dataset turns memory growth on through ``tf.config`` before it starts the
    runtime itself (TensorFlow's GPU lists stubbed with one GPU; DALI then fails to build its
    GPU pipeline here, after the policy)."""
    code = """
import json
import numpy as np
import tensorflow as tf
import daliaug
from daliaug.outputs.tfdata import dali_dataset as bridge
from daliaug.cuda import tf_runtime_started
from daliaug.engine_names import Choice
from daliaug.run import Run
from daliaug.sources.arrays import array_samples

gpu = tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
lists = tf.config.list_physical_devices
tf.config.list_physical_devices = lambda kind=None: [gpu] if kind == "GPU" else lists(kind)
tf.config.get_visible_devices = lambda kind=None: [gpu]
tf.config.get_logical_device_configuration = lambda device: None
tf.config.experimental.get_memory_growth = lambda device: False
calls = []
tf.config.experimental.set_memory_growth = lambda device, on: calls.append(tf_runtime_started())
config = daliaug.load_config({"source": {"type": "arrays"}, "image_size": 8, "batch_size": 2})
samples = array_samples(np.zeros((4, 8, 8, 3), np.uint8), np.arange(4) % 2)
try:
    bridge.dali_dataset(Run.of(config, samples, Choice("dali", "gpu")))
except Exception:
    pass
print(json.dumps({"runtime_started_at_policy": calls}))
"""
    assert run(code) == {"runtime_started_at_policy": [False]}


def test_growth_policy_outcomes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cuda.GROWTH_VARIABLE, raising=False)
    monkeypatch.setattr(cuda, "cuda_driver", lambda: False)
    assert cuda.grow_gpu_memory() == "no driver" and cuda.GROWTH_VARIABLE not in os.environ
    monkeypatch.setattr(cuda, "cuda_driver", lambda: True)
    monkeypatch.setattr(cuda, "tf_runtime_started", lambda: True)
    assert cuda.grow_gpu_memory() == "too late" and cuda.GROWTH_VARIABLE not in os.environ
    monkeypatch.setattr(cuda, "tf_runtime_started", lambda: False)
    assert cuda.grow_gpu_memory() == "set" and os.environ[cuda.GROWTH_VARIABLE] == "true"
    assert cuda.grow_gpu_memory() == "user"
