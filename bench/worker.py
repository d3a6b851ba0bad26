"""One tool in a process of its own, so that memory and thread pools never mix across tools.

``python -m bench.worker SPEC`` (SPEC: JSON with ``tool``, ``workload``, ``threads``,
``data`` and the :class:`bench.run.Timing` fields) builds the tool, answers one JSON line on
stdout (``ready``, ``unavailable`` or ``error``), then per line read on stdin: ``measure`` times
one repeat (a fresh epoch: ``warmup`` batches untimed, then batches until ``seconds`` have
passed or ``max_images`` were made), ``stop`` reports peak memory and exits. Anything else the
tool prints goes to stderr, which the parent logs.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import resource
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from bench.tools import TOOLS, Epoch, Unavailable, sync
from bench.workloads import WORKLOADS, Data
from daliaug.tools.monitor import Monitor, Nvml, children, tree_cpu_seconds

NVML_PERIOD = 0.1
"""Seconds between :class:`NvmlTrace`'s readings."""


def measure(
    epoch: Epoch,
    warmup: int,
    warmup_seconds: float,
    seconds: float,
    max_images: int,
    device: str = "cpu",
) -> dict[str, Any]:
    """Time one epoch's batches after ``warmup`` untimed ones (and ``warmup_seconds``); CPU
    time covers the process and its children (pool workers). For a tool on the GPU the queued
    work is waited for before each clock of the timed window is read (:func:`sync`).
    ``clock_unix``: the timed window's bounds in Unix time, for readings taken meanwhile by
    another process (NVML's, in :mod:`bench.gpu_probe`)."""
    start = time.perf_counter()
    batches = epoch()
    try:
        for i in itertools.count():
            if i >= warmup and time.perf_counter() - start >= warmup_seconds:
                break
            if next(batches, None) is None:
                raise RuntimeError(
                    f"the epoch ended during the warm-up ({i} batches): make the epoch longer "
                    "(bench.workloads.prepare's scale)"
                )
        sync(device)
        kids = children(os.getpid())
        cpu0, t0 = tree_cpu_seconds(kids), time.perf_counter()
        images = count = 0
        for size in batches:
            images += size
            count += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds or images >= max_images:
                break
        sync(device)
        elapsed = time.perf_counter() - t0
        ended = time.time()
        if not images:
            raise RuntimeError("the epoch ended with the warm-up: make the epoch longer")
        cpu = tree_cpu_seconds(children(os.getpid())) - cpu0
    finally:
        batches.close()
        gc.collect()
    return {
        "images": images,
        "batches": count,
        "seconds": elapsed,
        "images_per_s": images / elapsed,
        "cpu_seconds": cpu,
        "warmup_seconds": t0 - start,
        "clock_unix": [ended - elapsed, ended],
        "loadavg": os.getloadavg()[0],
    }


class NvmlTrace:
    """NVML's GPU and JPEG-engine utilisation read every :data:`NVML_PERIOD` s on a thread of
    this process (none where ``nvidia-ml-py`` does not import or sees no GPU)."""

    def __init__(self) -> None:
        self.nvml = Nvml()
        self.readings: list[tuple[float, float | None, float | None]] = []
        self.stop = threading.Event()
        if self.nvml.available:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while not self.stop.wait(NVML_PERIOD):
            self.readings.append(
                (time.time(), self.nvml.utilisation(), self.nvml.jpeg_utilisation())
            )

    def during(self, window: list[float]) -> dict[str, Any]:
        """Mean and peak utilisation of the readings inside ``window`` (Unix seconds)."""
        if not self.nvml.available:
            return {"note": self.nvml.note}
        inside = [r for r in list(self.readings) if window[0] <= r[0] <= window[1]]
        out: dict[str, Any] = {"readings": len(inside)}
        for i, name in ((1, "gpu"), (2, "jpeg")):
            values = [r[i] for r in inside if r[i] is not None]
            if values:
                out[f"{name}_percent_mean"] = statistics.fmean(values)
                out[f"{name}_percent_peak"] = max(values)
        return out


def cpu_ms(sample: dict[str, Any]) -> float:
    """CPU milliseconds per image of one :func:`measure` sample."""
    return 1000 * sample["cpu_seconds"] / sample["images"]


def main(spec: dict[str, Any], out: Any) -> None:
    def reply(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    tool = TOOLS[spec["tool"]]
    data = Data(**{k: Path(v) if k != "repeat" and v else v for k, v in spec["data"].items()})
    gpu = Nvml() if tool.device == "gpu" else None
    with Monitor(interval=0.2, gpu=gpu) as monitor:
        started = time.perf_counter()
        try:
            workload = WORKLOADS[spec["workload"]].at_batch(spec["batch_size"])
            epoch = tool.build(workload, data, spec["threads"])
        except Unavailable as e:
            reply({"unavailable": str(e)})
            return
        except Exception:
            reply({"error": traceback.format_exc()})
            return
        reply({"ready": True, "build_seconds": time.perf_counter() - started})
        for line in sys.stdin:
            if line.strip() != "measure":
                break
            try:
                settings = [spec[k] for k in ("warmup", "warmup_seconds", "seconds", "max_images")]
                reply(measure(epoch, *settings, device=tool.device))
            except Exception:
                reply({"error": traceback.format_exc()})
                return
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    reply(
        {
            "peak_rss_bytes": max(monitor.peak_rss(), self_peak),
            "peak_gpu_bytes": monitor.peak_gpu_bytes(),
            "gpu_note": gpu.note if gpu is not None else "",
        }
    )


if __name__ == "__main__":
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints (Keras, TF) go to the log, not into the protocol
    main(json.loads(sys.argv[1]), protocol)
