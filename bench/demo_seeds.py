"""Does ``daliaug demo`` learn every time? The demo for several seeds on both CPU paths.

    python -m bench.demo_seeds [--seeds 0 1 2 3 4] [--backend tf cpu] [--out bench/results]

Runs ``daliaug demo --seed S --backend B`` as a user would (a process each, one after another,
the demo data written to the cache beforehand) and reads its per-epoch validation accuracy.
Writes ``demo-seeds-<date>.json`` and ``.md``: per run the best and first-epoch validation
accuracy, the epoch of the best, and the wall time of the whole command (start-up included),
with the machine's load average around it (the machine may be shared).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import machine

TARGET = 0.80
"""The best validation accuracy every run should reach."""

PATHS = {"tf": "TensorFlow ops", "cpu": "DALI on the CPU", "gpu": "DALI on the GPU"}
_EPOCH = re.compile(r"epoch (\d+)/\d+: loss ([\d.]+), accuracy ([\d.]+)%, val_accuracy ([\d.]+)%")
"""One epoch's line of the demo: epoch, loss, training and validation accuracy (%)."""


def epochs_of(lines: list[str]) -> list[dict[str, float]]:
    """Each epoch's numbers from the demo's epoch lines (accuracies as fractions)."""
    found = [m for m in map(_EPOCH.search, lines) if m]
    return [
        {
            "epoch": int(m[1]),
            "loss": float(m[2]),
            "accuracy": float(m[3]) / 100,
            "val_accuracy": float(m[4]) / 100,
        }
        for m in found
    ]


def run_demo(seed: int, backend: str) -> dict[str, Any]:
    """One ``daliaug demo`` process: its epochs, best validation accuracy and wall time."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "daliaug.cli", "demo", "--seed", str(seed), "--backend", backend],
        capture_output=True,
        text=True,
        cwd=machine.ROOT,
        env={**os.environ, "COLUMNS": "200", "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"demo --seed {seed} --backend {backend} failed:\n{done.stderr}")
    lines = [
        line
        for line in done.stderr.splitlines()
        if _EPOCH.search(line) or line.startswith(("augmenting with", "validation accuracy"))
    ]
    epochs = epochs_of(lines)
    val = [e["val_accuracy"] for e in epochs]
    return {
        "seed": seed,
        "backend": backend,
        "best_val_accuracy": max(val),
        "first_val_accuracy": val[0],
        "best_epoch": val.index(max(val)) + 1,
        "epochs": epochs,
        "output": lines,
        "wall_seconds": wall,
        "loadavg_before": load,
        "loadavg_after": os.getloadavg()[0],
    }


def markdown(result: dict[str, Any]) -> str:
    described, runs = result["machine"], result["runs"]
    dirty = " with uncommitted changes" if described["uncommitted"] else ""
    lines = [
        "# daliaug demo: best validation accuracy over seeds",
        "",
        f"- Machine: {described['cpu']}, {described['cores']} cores (shared with other work: "
        f"load average before and after each run in the table), GPU: {described['gpu']}; "
        f"commit {described['commit']}{dirty}.",
        f"- `{result['command']}`: `daliaug demo --seed S --backend B` per run, one after "
        "another, demo data already in the cache; wall time of the whole command, start-up "
        f"included. Chance is 25%; the target is a best validation accuracy of {TARGET:.0%} "
        "in every run.",
        "",
        "| seed | path | best val acc | epoch of best | first-epoch val acc | wall s | load "
        "before / after |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        lines.append(
            f"| {r['seed']} | {PATHS[r['backend']]} | {r['best_val_accuracy']:.1%} | "
            f"{r['best_epoch']} | {r['first_val_accuracy']:.1%} | {r['wall_seconds']:.0f} | "
            f"{r['loadavg_before']:.1f} / {r['loadavg_after']:.1f} |"
        )
    lines.append("")
    for backend in dict.fromkeys(r["backend"] for r in runs):
        mine = [r for r in runs if r["backend"] == backend]
        reached = sum(r["best_val_accuracy"] >= TARGET for r in mine)
        walls = sorted(r["wall_seconds"] for r in mine)
        lines.append(
            f"- {PATHS[backend]}: {reached} of {len(mine)} runs reached {TARGET:.0%}; lowest best "
            f"{min(r['best_val_accuracy'] for r in mine):.1%}; wall time median "
            f"{walls[len(walls) // 2]:.0f} s (range {walls[0]:.0f}-{walls[-1]:.0f} s)."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m bench.demo_seeds", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--backend", nargs="+", choices=sorted(PATHS), default=["tf", "cpu"])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    from daliaug.config import load_config
    from daliaug.tools.demo_sources import demo_sources

    demo_sources(load_config(str(machine.ROOT / "pipelines" / "demo.yaml")).source)
    runs = []
    for seed in args.seeds:
        for backend in args.backend:
            runs.append(run_demo(seed, backend))
            r = runs[-1]
            print(
                f"seed {seed} {PATHS[backend]}: best {r['best_val_accuracy']:.1%} "
                f"(epoch {r['best_epoch']}), {r['wall_seconds']:.0f} s",
                flush=True,
            )
    command = " ".join(
        ["python -m bench.demo_seeds", *(argv if argv is not None else sys.argv[1:])]
    )
    result = {"command": command, "machine": machine.describe(), "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"demo-seeds-{stamp}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1))
    base.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return base.with_suffix(".md")


if __name__ == "__main__":
    main()
