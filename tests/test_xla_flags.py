"""XLA's command buffers are off before JAX starts its backend beside DALI on a GPU (DALI's
advice: XLA may capture CUDA graphs while DALI runs, NVIDIA/DALI#6449): the command line adds
``--xla_gpu_enable_command_buffer=`` to ``XLA_FLAGS`` (no GPU here: a stand-in CUDA driver,
real JAX in a fresh process, its backend's start watched), keeping the user's flags; the JAX
output warns where JAX started first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daliaug import cuda
from daliaug.errors import BackendWarning
from daliaug.outputs.jax import command_buffers_off
from tests.test_gpu_memory import DRIVER

ROOT = Path(__file__).parents[1]

SCRIPT = (
    DRIVER
    + """
import json, os
from jax._src import xla_bridge
_init, _seen = xla_bridge._init_backend, {}
def _watched(platform):
    _seen.setdefault("flags", os.environ.get("XLA_FLAGS"))
    return _init(platform)
xla_bridge._init_backend = _watched
from daliaug.cli import main
assert main(["validate", "pipelines/demo.yaml"]) == 0
import jax
jax.devices()  # what a command running Keras on JAX does next
print(json.dumps({"at_start": _seen.get("flags")}))
"""
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, cuda.COMMAND_BUFFERS_OFF),
        (
            "--xla_force_host_platform_device_count=1",
            f"--xla_force_host_platform_device_count=1 {cuda.COMMAND_BUFFERS_OFF}",
        ),
        ("--xla_gpu_enable_command_buffer=FUSION", "--xla_gpu_enable_command_buffer=FUSION"),
    ],
)
def test_the_command_line_sets_xla_flags_before_jax_starts(
    given: str | None, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != cuda.XLA_VARIABLE}
    if given is not None:
        env[cuda.XLA_VARIABLE] = given
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"at_start": expected}


def test_jax_started_first_is_a_warning_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(cuda.XLA_VARIABLE, "--xla_force_host_platform_device_count=1")
    monkeypatch.setattr(cuda, "jax_backend_started", lambda: True)
    with pytest.warns(BackendWarning, match="XLA_FLAGS=--xla_gpu_enable_command_buffer= ") as w:
        command_buffers_off()
    assert w[0].filename == __file__  # the user's line
    assert os.environ[cuda.XLA_VARIABLE] == "--xla_force_host_platform_device_count=1"


def test_before_jax_starts_the_flag_is_added_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cuda.XLA_VARIABLE, raising=False)
    monkeypatch.setattr(cuda, "jax_backend_started", lambda: False)
    command_buffers_off()
    assert os.environ[cuda.XLA_VARIABLE] == cuda.COMMAND_BUFFERS_OFF
    monkeypatch.setattr(cuda, "jax_backend_started", lambda: True)
    command_buffers_off()  # set already (by daliaug or the user): nothing to say
