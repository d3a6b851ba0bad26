"""Resource sampling for ``daliaug doctor`` and the benchmarks: CPU, memory and GPU, of this
process and its descendants (not of the machine, whose other load would blur the figures).

Stdlib only (``/proc``, Linux); GPU figures come from NVML when ``pynvml`` (the
``nvidia-ml-py`` package) imports and finds a device, else they are ``None`` with a note why.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str]:
    """``/proc/PID/stat`` after the command name (field 3 onwards)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def children(pid: int) -> list[int]:
    """Living descendants of ``pid`` (from each process's parent id in ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat_fields(int(entry.name))[1]), []).append(
                    int(entry.name)
                )
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a living process (all its threads)."""
    try:
        f = _stat_fields(pid)
        return (int(f[11]) + int(f[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def process_rss(pid: int) -> int:
    """Resident set size of a living process in bytes (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_cpu_seconds(kids: list[int] | None = None) -> float:
    """CPU seconds of this process, its reaped children and its living descendants ``kids``.

    This process's own share has nanosecond resolution (``time.process_time``), so short
    timing windows of a fast in-process pipeline never read as zero; descendants are counted
    in clock ticks."""
    t = os.times()
    alive = sum(
        process_cpu_seconds(k) for k in (kids if kids is not None else children(os.getpid()))
    )
    return time.process_time() + t.children_user + t.children_system + alive


class Nvml:
    """GPU utilisation and per-process device memory through NVML, when available."""

    def __init__(self, device_index: int = 0) -> None:
        self.handle: Any = None
        self.note = ""
        try:
            import pynvml

            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self.nvml = pynvml
        except ImportError:
            self.note = "no GPU figures: pynvml (nvidia-ml-py) is not installed"
        except Exception as e:  # NVMLError: no driver or no device
            self.note = f"no GPU figures: NVML unavailable ({e})"

    @property
    def available(self) -> bool:
        return self.handle is not None

    def utilisation(self) -> float | None:
        """GPU busy percentage over NVML's last sample period."""
        if self.handle is None:
            return None
        return float(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

    def jpeg_utilisation(self) -> float | None:
        """The hardware JPEG decoders' busy percentage over NVML's last sample period;
        ``None`` without NVML, or where this GPU or driver reports none."""
        query = getattr(self.nvml, "nvmlDeviceGetJpgUtilization", None) if self.handle else None
        if query is None:
            return None
        try:
            return float(query(self.handle)[0])
        except Exception:  # NVMLError_NotSupported: a GPU without JPEG engines
            return None

    def memory_used(self, pids: list[int] | None = None) -> int | None:
        """Device memory used by ``pids`` (bytes), or by the whole device when NVML lists no
        processes (as in some containers)."""
        if self.handle is None:
            return None
        if pids:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
            used = [p.usedGpuMemory or 0 for p in procs if p.pid in pids]
            if used:
                return int(sum(used))
        return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)


@dataclass
class Sample:
    """One reading: seconds since the monitor started, CPU %, GPU %, memory."""

    t: float
    cpu_percent: float
    """CPU time of this process and its descendants over the last interval, in percent of all
    the cores it may run on (100: every core busy with this process)."""
    gpu_percent: float | None
    rss_bytes: int
    gpu_bytes: int | None


@dataclass
class Monitor:
    """Samples every ``interval`` seconds in a background thread while running (``with``).

    ``cpu_percent`` and ``rss_bytes`` count this process and its descendants (the pool
    workers of a benchmark); ``mark(name)`` records when a phase starts, for timelines.
    """

    interval: float = 0.2
    gpu: Nvml | None = None
    samples: list[Sample] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.perf_counter()
        self._kids: list[int] = []

    def __enter__(self) -> Monitor:
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def now(self) -> float:
        return time.perf_counter() - self.started

    def mark(self, name: str) -> None:
        self.marks.append((self.now(), name))

    def _run(self) -> None:
        pid, rounds = os.getpid(), 0
        cores = len(os.sched_getaffinity(0))
        cpu0, wall0 = tree_cpu_seconds(self._kids), time.perf_counter()
        while not self._stop.wait(self.interval):
            if rounds % 10 == 0:  # scanning /proc for new children is the costly part
                self._kids = children(pid)
            rounds += 1
            cpu1, wall1 = tree_cpu_seconds(self._kids), time.perf_counter()
            cpu = 100.0 * (cpu1 - cpu0) / max(1e-9, (wall1 - wall0) * cores)
            cpu0, wall0 = cpu1, wall1
            pids = [pid, *self._kids]
            gpu = self.gpu if self.gpu is not None and self.gpu.available else None
            self.samples.append(
                Sample(
                    self.now(),
                    cpu,
                    gpu.utilisation() if gpu else None,
                    sum(process_rss(p) for p in pids),
                    gpu.memory_used(pids) if gpu else None,
                )
            )

    def peak_rss(self) -> int:
        return max((s.rss_bytes for s in self.samples), default=process_rss(os.getpid()))

    def peak_gpu_bytes(self) -> int | None:
        values = [s.gpu_bytes for s in self.samples if s.gpu_bytes is not None]
        return max(values) if values else None

    def mean(self, attribute: str, start: float = 0.0, end: float = float("inf")) -> float | None:
        """Mean of a sample attribute over ``[start, end)`` seconds, ``None`` without readings."""
        values = [
            getattr(s, attribute)
            for s in self.samples
            if start <= s.t < end and getattr(s, attribute) is not None
        ]
        return sum(values) / len(values) if values else None
