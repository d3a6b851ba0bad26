"""Compare daliaug's own paths in two checkouts on this machine, interleaved (before/after a
change: one machine state for both, which separate runs of the suite do not give).

    python -m bench.ab OLD_CHECKOUT [--tools dali-cpu loader-cpu daliaug-tf] [--repeats 5]

Each tool runs in a worker process started in each checkout (``bench.worker`` with that
checkout's ``daliaug``), on the same data and timing as the suite; the repeats alternate
between the checkouts, the order rotated every repeat. Writes ``ab-<date>.md`` and ``.json``
under ``--out`` with median images/s and CPU ms/image per checkout and their ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import subprocess
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine
from bench.report import ratio_of
from bench.run import Worker, console, timing
from bench.worker import cpu_ms
from bench.workloads import WORKLOADS, prepare

DEFAULT_TOOLS = ("dali-cpu", "loader-cpu", "daliaug-tf")


def _commit(root: Path) -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True)
    return run.stdout.decode().strip() or "?"


def compare(workload: str, tools: tuple[str, ...], roots: dict[str, Path], repeats: int, log: Any):
    data = prepare(workload, False, None)
    settings = timing(workload, False)
    # fields at their defaults are left out, so that an older checkout's worker takes the spec
    data_spec = {
        f.name: str(v) if isinstance(v, Path) else v
        for f in dataclasses.fields(data)
        if (v := getattr(data, f.name)) != f.default
    }
    cases = [(tool, side) for tool in tools for side in roots]
    workers = {}
    for tool, side in cases:
        spec = {"tool": tool, "workload": workload, "threads": None, "data": data_spec}
        worker = Worker({**spec, **vars(settings)}, log, timeout=600, root=roots[side])
        first = worker.read()
        if "ready" not in first:
            worker.stop()
            raise SystemExit(f"{tool} in {roots[side]}: {first}")
        workers[tool, side] = worker
    samples: dict[tuple[str, str], list[dict]] = {case: [] for case in cases}
    for repeat in range(repeats):
        order = cases[repeat % len(cases) :] + cases[: repeat % len(cases)]
        for case in order:
            sample = workers[case].send("measure")
            samples[case].append(sample)
            console.print(
                f"  [{repeat + 1}/{repeats}] {case[0]} ({case[1]}): "
                f"{sample['images_per_s']:,.0f} images/s"
            )
    for worker in workers.values():
        worker.stop()
    rows = []
    for tool in tools:
        row: dict[str, Any] = {"tool": tool}
        for side in roots:
            s = samples[tool, side]
            row[side] = {
                "images_per_s": median(x["images_per_s"] for x in s),
                "cpu_ms_per_image": median(cpu_ms(x) for x in s),
            }
        row["ratio"] = row["new"]["images_per_s"] / row["old"]["images_per_s"]
        row["cpu_ratio"] = ratio_of(row["old"]["cpu_ms_per_image"], row["new"]["cpu_ms_per_image"])
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ab")
    parser.add_argument("old", type=Path, help="the checkout to compare with this one")
    parser.add_argument("--tools", nargs="+", default=list(DEFAULT_TOOLS))
    parser.add_argument("--workload", nargs="+", default=["a", "b"], choices=sorted(WORKLOADS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    roots = {"old": args.old.resolve(), "new": machine.ROOT}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    commits = {side: _commit(root) for side, root in roots.items()}
    result = {"machine": machine.describe(), "commits": commits, "workloads": {}}
    with open(args.out / f"ab-{stamp}.log", "w") as log:
        for workload in args.workload:
            console.print(f"[bold]{WORKLOADS[workload].title}[/]")
            rows = compare(workload, tuple(args.tools), roots, args.repeats, log)
            result["workloads"][workload] = rows
    (args.out / f"ab-{stamp}.json").write_text(json.dumps(result, indent=1))
    lines = [
        f"# A/B: {commits['old']} (old) vs {commits['new']} (new), same machine, interleaved",
        "",
        f"- Machine: {result['machine'].get('cpu', '')}; medians of {args.repeats} repeats.",
        "",
        "| workload | tool | old images/s | new images/s | new/old | old CPU ms/img | "
        "new CPU ms/img | CPU-time ratio |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workload, rows in result["workloads"].items():
        for r in rows:
            lines.append(
                f"| {workload} | {r['tool']} | {r['old']['images_per_s']:,.0f} | "
                f"{r['new']['images_per_s']:,.0f} | {r['ratio']:.2f}x | "
                f"{r['old']['cpu_ms_per_image']:.3f} | {r['new']['cpu_ms_per_image']:.3f} | "
                f"{r['cpu_ratio']:.2f}x |"
            )
    (args.out / f"ab-{stamp}.md").write_text("\n".join(lines) + "\n")
    console.print("\n".join(lines))


if __name__ == "__main__":
    main()
