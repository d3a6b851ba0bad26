"""What a result was measured on: machine, load, package versions, date and commit (stdlib)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from daliaug.tools.monitor import Nvml

PACKAGES = (
    "tensorflow",
    "keras",
    "nvidia-dali-cuda120",
    "nvidia-dali-cuda130",
    "nvidia-dali-tf-plugin-cuda120",
    "numpy",
    "scipy",
    "pillow",
    "nvidia-ml-py",
    "nvidia-nvimgcodec-cu12",
    "nvidia-nvimgcodec-cu13",
    "nvidia-nvjpeg-cu12",
    "nvidia-nvjpeg-cu13",
    "jax",
    "jaxlib",
    "daliaug",
)
ROOT = Path(__file__).parents[1]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _gpu() -> str | None:
    nvml = Nvml()
    if not nvml.available:
        return None
    name = nvml.nvml.nvmlDeviceGetName(nvml.handle)
    memory = nvml.nvml.nvmlDeviceGetMemoryInfo(nvml.handle).total / 2**30
    return f"{name.decode() if isinstance(name, bytes) else name}, {memory:.0f} GiB"


def describe() -> dict[str, Any]:
    """The machine and software a run happens on."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": _memory_gib(),
        "gpu": _gpu(),
        "platform": platform.platform(),
        "versions": versions(),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "uncommitted": _git("diff", "--name-only", "HEAD").splitlines(),
    }


def run_worker(*args: str) -> Any:
    """``python -m ARGS`` in a process of its own (from the repository root, TensorFlow's
    info logs off); the JSON its last line of output holds."""
    run = subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        check=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])
