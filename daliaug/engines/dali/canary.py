"""The window-decode canary: a few JPEG decode windows on the GPU, in a child process.

nvImageCodec 0.9 (DALI 2.4's) can crash the process on a GPU JPEG window decode
(NVIDIA/nvImageCodec#55: a segmentation fault on H100 and B200, ``INTERNAL_ERROR`` on A100).
No check inside the process could report such a crash, so before any window is decoded on a
GPU in-process (the pipelines, ``daliaug selftest``, ``bench/gpu_suite.py``) a child process
(``python -X faulthandler -m daliaug.engines.dali.canary_child``) decodes a few windows of 4:2:0
JPEGs it writes itself, as the pipelines decode them. Its outcome is cached per host, DALI and
nvImageCodec version and GPU (``$DALIAUG_CACHE/canary/``), so the child runs once.
``decode_window: auto`` follows it (:func:`window_mode`): where the canary failed, whole images
are decoded and the window cut from them, with one :class:`BackendWarning` giving the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import metadata
from typing import Literal

from daliaug.cache import read_cached, write_cached
from daliaug.engines.select import dali_gpu_count
from daliaug.errors import BackendWarning

WindowMode = Literal["roi", "whole"]

TIMEOUT = 180.0
"""Seconds the child may take (starting CUDA and DALI included) before it counts as hung."""
PASSED = "daliaug canary: windows decoded"
"""What the child prints last when every window decoded."""


@dataclass(frozen=True)
class Canary:
    """The canary's outcome: whether the windows decoded, and why not."""

    passed: bool
    reason: str
    cached: bool = False


def _versions() -> str:
    """DALI's and nvImageCodec's versions (the decode path the canary vouches for)."""
    found = []
    for name in ("nvidia-dali-cuda120", "nvidia-dali-cuda130", "nvidia-nvimgcodec-cu12"):
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ",".join(found)


def cache_key(device_id: int) -> str:
    """The host, the GPU asked for, and the DALI and nvImageCodec versions, hashed."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    text = f"{socket.gethostname()}|{visible}|{device_id}|{_versions()}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def child_command(device: str, device_id: int) -> list[str]:
    """The child: this module run with faulthandler on (a crash prints its Python stack)."""
    module = "daliaug.engines.dali.canary_child"
    return [sys.executable, "-X", "faulthandler", "-m", module, device, str(device_id)]


def run_child(command: Sequence[str], timeout: float = TIMEOUT) -> Canary:
    """Run the canary's child ``command``: passed if it exits 0 having printed
    :data:`PASSED`; else the reason: the signal that killed it, a timeout, or its last
    error lines."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return Canary(False, f"the window-decode canary hung (killed after {timeout:.0f} s)")
    if done.returncode == 0 and PASSED in done.stdout:
        return Canary(True, "GPU window decodes ran in a child process")
    if done.returncode < 0:
        how = f"was killed by {signal.Signals(-done.returncode).name}"
    else:
        how = f"exited with code {done.returncode}"
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if "Error" in line or "error" in line][-2:] or lines[-2:]
    tail = f": {' | '.join(said)}" if said else ""
    return Canary(False, f"the window-decode canary {how}{tail}")


def canary(
    device_id: int = 0, command: Sequence[str] | None = None, timeout: float = TIMEOUT
) -> Canary:
    """The canary's outcome on GPU ``device_id``: cached for this host, GPU and DALI (read
    from ``$DALIAUG_CACHE/canary/<key>.json``), else the child run (``command``: another
    child, for tests; ``timeout``: see :func:`run_child`) and its outcome written there."""
    relative = f"canary/{cache_key(device_id)}.json"
    stored = read_cached(relative)
    with contextlib.suppress(TypeError):  # an unreadable cache entry: run the child again
        if stored is not None:
            return Canary(**{**stored, "cached": True})
    outcome = run_child(command or child_command("gpu", device_id), timeout)
    write_cached(relative, json.dumps(asdict(outcome)), "the window-decode canary's outcome")
    return outcome


@cache
def _gpu_window_mode(device_id: int) -> WindowMode:
    """``roi`` where the canary passed on GPU ``device_id``, else ``whole`` (said once);
    ``roi`` where DALI sees no such GPU (a GPU graph defined here is checked, never run)."""
    if dali_gpu_count() <= device_id:
        return "roi"
    outcome = canary(device_id)
    if outcome.passed:
        return "roi"
    warnings.warn(
        f"decode_window: auto decodes whole images on GPU {device_id} and cuts the windows "
        f"from them (slower): {outcome.reason} (nvImageCodec#55); set decode_window: roi to "
        "force window decodes, or run DALI 2.2 (nvImageCodec 0.8): see the README",
        BackendWarning,
        stacklevel=2,
    )
    return "whole"


def window_mode(decode_window: str, device: str, device_id: int) -> WindowMode:
    """How a decode window is decoded on ``device`` (GPU ``device_id``) under the config's
    ``decode_window``: ``auto`` is ``roi`` on the CPU and follows the canary on the GPU."""
    if decode_window != "auto":
        return decode_window  # type: ignore[return-value]
    return "roi" if device == "cpu" else _gpu_window_mode(device_id)
