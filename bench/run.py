"""Run the benchmark suite: every tool on each workload, interleaved, one process per tool.

    python -m bench.run --workload a b --repeats 5 --out bench/results

Per workload, each case (a tool at a thread setting) gets its own worker process
(:mod:`bench.worker`); each repeat measures every case once, in an order rotated by one each
repeat, so that slow drifts in machine load spread over all tools. Each measurement is a fresh
epoch with warm-up batches excluded. The scaling curve (``--threads``) runs as a second round
of cases at other thread settings. Results: ``<suite>-<date>.json`` with every raw sample,
``.md`` table and PNG plots, and ``LATEST.md`` (see :mod:`bench.report`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any, TextIO

from rich.console import Console

from bench import machine
from bench.tools import TOOLS
from bench.worker import cpu_ms
from bench.workloads import QUICK_BATCH_SIZE, WORKLOADS, Data, prepare

console = Console(stderr=True, highlight=False)


@dataclass(frozen=True)
class Suite:
    tools: tuple[str, ...]
    scaling: tuple[str, ...]
    threads: tuple[int, ...]
    epoch_scale: int = 1
    """Epochs this many times the CPU suite's (see :func:`bench.workloads.prepare`)."""


GPU_EPOCH_SCALE = 16
"""The GPU suites' epochs against the CPU suite's: on an H200, DALI's decoder alone finished
(b)'s 8,000-image epoch inside the 2 s warm-up."""

SUITES = {
    "cpu": Suite(
        tools=(
            "daliaug",
            "dali-gpu",
            "dali-cpu",
            "loader-cpu",
            "daliaug-tf",
            "opencv",
            "opencv-numpy",
            "idg",
            "idg-daliaug",
            "idg-pool",
            "tfdata-layers",
            "tfdata-tuned",
            "keras-randaug",
            "dali-autoaug-cpu",
            "decode-cpu",
        ),
        scaling=(
            "daliaug",
            "dali-cpu",
            "loader-cpu",
            "daliaug-tf",
            "idg-pool",
            "tfdata-layers",
            "tfdata-tuned",
        ),
        threads=(1, 2),
    ),
    # A GPU host without TensorFlow: DALI pipelines only, driven by DaliLoader.
    "gpu": Suite(
        tools=(
            "loader-gpu",
            "loader-cpu",
            "dali-autoaug-gpu",
            "dali-autoaug-cpu",
            "decode-gpu",
            "decode-cpu",
        ),
        scaling=("loader-gpu", "loader-cpu"),
        threads=(1, 2, 4, 8, 16),
        epoch_scale=GPU_EPOCH_SCALE,
    ),
    # A GPU host with TensorFlow's CUDA build: what users run (make_dataset through DALI's
    # plugin, alone and feeding a ResNet-50 step), a tuned tf.data pipeline on the same host,
    # and DALI's decoder alone, with and without the pipeline's windows.
    "gpu-tf": Suite(
        tools=(
            "dali-gpu",
            "dali-gpu-fit",
            "tfdata-tuned",
            "loader-gpu",
            "decode-gpu-roi",
            "decode-gpu",
        ),
        scaling=("dali-gpu", "decode-gpu-roi", "tfdata-tuned"),
        threads=(1, 2, 4, 8, 16),
        epoch_scale=GPU_EPOCH_SCALE,
    ),
}


@dataclass(frozen=True)
class Timing:
    """How one measurement runs."""

    warmup: int
    """Untimed batches at the start of each epoch..."""
    warmup_seconds: float
    """...and untimed seconds at least, so that start-up bursts are drained."""
    seconds: float
    max_images: int
    batch_size: int | None = None
    """The batch the tools run at (``None``: the workload's own)."""


def timing(workload: str, quick: bool) -> Timing:
    if quick:
        return Timing(
            warmup=1, warmup_seconds=0.0, seconds=0.2, max_images=256, batch_size=QUICK_BATCH_SIZE
        )
    if workload == "a":
        return Timing(warmup=5, warmup_seconds=1.0, seconds=2.5, max_images=10**9)
    return Timing(warmup=2, warmup_seconds=2.0, seconds=6.0, max_images=10**9)


class Worker:
    """A :mod:`bench.worker` process: one JSON line per command."""

    def __init__(
        self, spec: dict[str, Any], log: TextIO, timeout: float, root: Path = machine.ROOT
    ) -> None:
        """``root``: the checkout whose ``bench`` and ``daliaug`` the worker runs."""
        self.timeout = timeout
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=root,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"},
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            return {"error": f"worker gave no answer within {self.timeout:.0f} s or died"}
        return json.loads(line)

    def send(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"error": "worker exited"}
        return self.read()

    def stop(self) -> dict[str, Any]:
        final = self.send("stop") if self.proc.poll() is None else {}
        self.proc.wait(timeout=60)
        return final


def summarize(values: list[float]) -> dict[str, float]:
    """Median and interquartile range (``q1``, ``q3`` by linear interpolation)."""
    ordered = sorted(values)

    def quantile(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return {"median": median(ordered), "q1": quantile(0.25), "q3": quantile(0.75)}


def _case_result(name: str, threads: int | None, group: str) -> dict[str, Any]:
    tool = TOOLS[name]
    effective = tool.threads(threads)
    return {
        "tool": name,
        "label": tool.label,
        "role": tool.role,
        "device": tool.device,
        "parallelism": tool.parallelism,
        "threads": "-"
        if tool.parallelism == "none"
        else "auto"
        if effective is None
        else effective,
        "group": group,
        "status": "ok",
        "samples": [],
    }


def run_group(
    cases: list[tuple[str, int | None]],
    workload: str,
    data: Data,
    repeats: int,
    settings: Timing,
    log: TextIO,
    group: str,
    unavailable: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Measure ``cases`` (tool, threads) ``repeats`` times each, interleaved and rotated; the
    tools in ``unavailable`` (its reason by tool, from an earlier group) start no worker."""
    results = [_case_result(name, threads, group) for name, threads in cases]
    unavailable = unavailable or {}
    workers: dict[int, Worker] = {}
    data_spec = {k: str(v) if isinstance(v, Path) else v for k, v in vars(data).items()}
    for i, (name, threads) in enumerate(cases):
        if name in unavailable:
            results[i].update(status="unavailable", reason=unavailable[name])
            continue
        console.print(f"  starting {name} (threads {results[i]['threads']})")
        log.write(f"\n===== {workload} {name} threads={threads} =====\n")
        log.flush()
        spec = {
            "tool": name,
            "workload": workload,
            "threads": threads,
            "data": data_spec,
            **vars(settings),
        }
        worker = Worker(spec, log, timeout=600)
        first = worker.read()
        if "ready" in first:
            results[i]["build_seconds"] = first["build_seconds"]
            workers[i] = worker
            continue
        results[i]["status"] = "unavailable" if "unavailable" in first else "error"
        results[i]["reason"] = first.get("unavailable") or first.get("error", "")
        console.print(f"    {results[i]['status']}: {results[i]['reason'].splitlines()[-1]}")
        worker.stop()
    active = list(workers)
    for repeat in range(repeats):
        shift = repeat % max(1, len(active))
        for i in active[shift:] + active[:shift]:
            if results[i]["status"] != "ok":
                continue
            sample = workers[i].send("measure")
            if "error" in sample:
                results[i].update(status="error", reason=sample["error"])
                console.print(f"    {cases[i][0]} failed: {sample['error'].splitlines()[-1]}")
                continue
            results[i]["samples"].append(sample)
            console.print(
                f"  [{repeat + 1}/{repeats}] {results[i]['label']} "
                f"(threads {results[i]['threads']}): {sample['images_per_s']:,.0f} images/s"
            )
    for i, worker in workers.items():
        final = worker.stop()
        results[i]["peak_rss_mb"] = final.get("peak_rss_bytes", 0) / 2**20
        gpu_bytes = final.get("peak_gpu_bytes")
        results[i]["peak_gpu_mb"] = None if gpu_bytes is None else gpu_bytes / 2**20
        if final.get("gpu_note"):
            results[i]["gpu_note"] = final["gpu_note"]
    for result in results:
        if result["samples"]:
            result["images_per_s"] = summarize([s["images_per_s"] for s in result["samples"]])
            result["cpu_ms_per_image"] = summarize([cpu_ms(s) for s in result["samples"]])
    return results


def run_workload(name: str, args: argparse.Namespace, suite: Suite, log: TextIO) -> dict:
    settings = timing(name, args.quick)
    workload = WORKLOADS[name].at_batch(settings.batch_size)
    console.print(f"[bold]{workload.title}[/]")
    with console.status("preparing data (cached after the first run)"):
        data = prepare(name, args.quick, args.cache, suite.epoch_scale)
    chosen = [t for t in suite.tools if name in TOOLS[t].workloads]
    if args.tools:
        chosen = [t for t in chosen if t in args.tools]
    load_before = os.getloadavg()
    cases: list[dict[str, Any]] = run_group(
        [(t, None) for t in chosen], name, data, args.repeats, settings, log, "main"
    )
    if args.scaling_repeats > 0:
        done = {(c["tool"], c["threads"]) for c in cases}
        extra = [
            (t, n)
            for t in suite.scaling
            if t in chosen
            for n in args.threads or suite.threads
            if (t, n) not in done
        ]
        unavailable = {c["tool"]: c["reason"] for c in cases if c["status"] == "unavailable"}
        cases += run_group(
            extra, name, data, args.scaling_repeats, settings, log, "scaling", unavailable
        )
    return {
        "title": workload.title,
        "config": workload.config,
        "equivalent": vars(workload.equivalent),
        "data": {
            "arrays": str(data.arrays) if data.arrays else None,
            "directory": str(data.directory) if data.directory else None,
            "repeat": data.repeat,
            "epoch_samples": len(data.samples()),
        },
        "timing": vars(settings),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "cases": cases,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["a", "b"])
    parser.add_argument("--suite", choices=sorted(SUITES), default="cpu")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per case (default 5)")
    parser.add_argument(
        "--scaling-repeats", type=int, default=3, help="repeats per scaling case; 0 skips them"
    )
    parser.add_argument("--threads", type=int, nargs="+", help="scaling curve thread settings")
    parser.add_argument("--tools", nargs="+", choices=sorted(TOOLS), help="only these tools")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--cache", type=Path, help="data cache (default: daliaug's cache)")
    parser.add_argument("--quick", action="store_true", help="tiny data and windows (smoke test)")
    parser.add_argument("--no-stages", action="store_true", help="skip the DALI stage profile")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    from bench import report, stages, tf_stages

    args = parse_args(argv)
    suite = SUITES[args.suite]
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    name = f"{args.suite}-{'quick-' if args.quick else ''}{stamp}"
    result: dict[str, Any] = {
        "suite": args.suite,
        "command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        "machine": machine.describe(),
        "loadavg_before": os.getloadavg(),
        "workloads": {},
    }
    with open(args.out / f"{name}.log", "w") as log:
        for workload in args.workload:
            result["workloads"][workload] = run_workload(workload, args, suite, log)
        if not args.no_stages:
            with console.status("profiling DALI stages"):
                result["stages"] = stages.profile_all(args, log)
            if args.suite == "cpu" and "b" in args.workload:
                with console.status("profiling the TF backend's stages"):
                    result["tf_stages"] = tf_stages.profile_all(args, log)
    result["loadavg_after"] = os.getloadavg()
    path = args.out / f"{name}.json"
    path.write_text(json.dumps(result, indent=1))
    report.write(result, path, latest=args.suite == "cpu" and not args.quick)
    console.print(report.summary(result))
    return path


if __name__ == "__main__":
    main()
