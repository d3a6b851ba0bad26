"""Mosaic on DALI's CPU operators: a mosaic config's images/s through ``DaliLoader`` (NumPy
batches), this checkout against another, interleaved.

    python -m bench.mosaic OLD_CHECKOUT [--repeats 3] [--seconds 15] [--out bench/results]

The config (:data:`CONFIG`): workload (b)'s JPEGs (``bench.workloads.prepare``), random resized
crop to 512x512, horizontal flip, ``mosaic`` on every sample (its labels weighed, so
categorical), batch 32, ``backend: cpu``. Each measurement is a process of its own started on
its checkout's ``daliaug`` (this file run as a script, so that it imports nothing of either
checkout's ``bench``): 2 warm-up batches, then ``--seconds`` of batches, with the process's CPU
time; the checkouts alternate, the order reversed every other repeat. Writes
``mosaic-<date>.md`` and ``.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine

SIDE, BATCH, WARMUP = 512, 32, 2
CONFIG: dict[str, Any] = {
    "image_size": SIDE,
    "batch_size": BATCH,
    "shuffle": True,
    "seed": 0,
    "label_mode": "categorical",
    "transforms": [
        {"type": "random_resized_crop", "scale": [0.3, 1.0]},
        {"type": "flip", "horizontal": 0.5},
        {"type": "mosaic", "probability": 1.0},
    ],
    "backend": "cpu",
}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(folder: str, seconds: float) -> dict[str, Any]:
    """One repeat in this process: the config over ``folder``'s class folders."""
    from daliaug.config import load_config
    from daliaug.outputs.dali_loader import DaliLoader

    config = load_config({**CONFIG, "source": {"type": "directory", "path": folder}})
    loader = DaliLoader(config)

    def batches() -> Any:
        while True:
            for images, _ in loader:
                yield len(images)

    stream = batches()
    for _ in range(WARMUP):
        next(stream)
    images, start, cpu = 0, time.perf_counter(), _cpu_seconds()
    while time.perf_counter() - start < seconds:
        images += next(stream)
    elapsed = time.perf_counter() - start
    return {
        "images_per_s": images / elapsed,
        "cpu_ms_per_image": 1000 * (_cpu_seconds() - cpu) / images,
        "loadavg": os.getloadavg()[0],
    }


def _commit(root: Path) -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True)
    return run.stdout.decode().strip() or "?"


def _measured(root: Path, folder: Path, seconds: float) -> dict[str, Any]:
    """:func:`measure` in a process of its own on ``root``'s ``daliaug``."""
    args = ("--measure", str(folder), "--seconds", str(seconds))
    return machine.run_worker("bench.mosaic", *args, root=root)


def report(samples: dict[str, list[dict[str, Any]]], commits: dict[str, str], cpu: str) -> str:
    """The medians per checkout and their ratio, as Markdown."""
    rate = {side: median(s["images_per_s"] for s in samples[side]) for side in samples}
    ms = {side: median(s["cpu_ms_per_image"] for s in samples[side]) for side in samples}
    rows = [
        f"| {side} ({commits[side]}) | {rate[side]:,.1f} | {ms[side]:.2f} | "
        + ", ".join(f"{s['images_per_s']:,.1f}" for s in samples[side])
        + " |"
        for side in samples
    ]
    loads = [s["loadavg"] for side in samples for s in samples[side]]
    return "\n".join(
        [
            f"# Mosaic on DALI's CPU operators: {commits['new']} vs {commits['old']}",
            "",
            f"{cpu}; {SIDE}x{SIDE}, batch {BATCH}, random resized crop, flip, mosaic on every "
            "sample, `DaliLoader` (NumPy); each repeat a process of its own, the checkouts "
            f"interleaved (`python -m bench.mosaic`); load average {min(loads):.1f}-"
            f"{max(loads):.1f} during the runs.",
            "",
            "| checkout | images/s (median) | CPU ms/image | each repeat |",
            "| --- | ---: | ---: | --- |",
            *rows,
            "",
            f"new / old: **{rate['new'] / rate['old']:.2f}x** images/s, "
            f"**{ms['old'] / ms['new']:.2f}x** less CPU per image.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mosaic")
    parser.add_argument("old", nargs="?", type=Path, help="the checkout to compare with this one")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.seconds)))
        return
    if args.old is None:
        parser.error("give the checkout to compare with")
    from bench import machine
    from bench.workloads import prepare

    folder = prepare("b", False).directory
    assert folder is not None
    roots = {"old": args.old.resolve(), "new": machine.ROOT}
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in roots}
    for repeat in range(args.repeats):
        for side in list(roots) if repeat % 2 == 0 else list(roots)[::-1]:
            sample = _measured(roots[side], folder, args.seconds)
            print(f"{side}: {sample['images_per_s']:,.1f} images/s", file=sys.stderr)
            samples[side].append(sample)
    commits = {side: _commit(root) for side, root in roots.items()}
    described = machine.describe()
    text = report(samples, commits, f"{described['cpu']}, {described['cores_usable']} cores")
    print(text)
    if args.out:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
        base = args.out / f"mosaic-{stamp}"
        base.with_suffix(".md").write_text(text + "\n")
        payload = {"machine": described, "commits": commits, "config": CONFIG, "samples": samples}
        base.with_suffix(".json").write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
