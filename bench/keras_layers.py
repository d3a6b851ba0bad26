"""Workload (b) as Keras preprocessing layers: the Keras way (the layers mapped over ``tf.data``)
against the same layers compiled by ``daliaug.from_keras``, in one interleaved run.

    python -m bench.keras_layers [--repeats 3] [--stack b|aug_mix] [--out bench/results]

Each tool runs in a worker process of its own (:mod:`bench.worker`, the suite's timing for
(b)); each repeat measures every tool once, the order rotated by one each repeat. Writes
``keras-layers-<date>.json`` (every sample) and ``.md`` (medians; each tool's images/s over the
Keras way's, and the Keras way's CPU time per image over the tool's) under ``--out``. See
:mod:`bench.tools.keras_layers` for the stack.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
from pathlib import Path
from typing import Any

from bench import machine
from bench.report import ratio_of
from bench.run import console, run_group, timing
from bench.workloads import WORKLOADS, prepare

STACKS = {
    "b": (
        ("keras-layers", "from-keras", "from-keras-cpu", "from-keras-tf"),
        "RandomZoom (in), RandomTranslation, RandomFlip, RandomBrightness, RandomContrast, "
        "RandomSaturation, Normalization (fill_mode nearest)",
    ),
    "aug_mix": (
        ("keras-augmix", "from-keras-augmix-cpu", "from-keras-augmix-tf"),
        "RandomFlip, AugMix (Keras' defaults: 3 chains, depth 3, factor 0.3, reflect fill), "
        "Normalization",
    ),
}
"""Each ``--stack``: its tools (the Keras way first, the baseline) and its description."""


def table(cases: list[dict[str, Any]]) -> list[str]:
    """Markdown rows: median images/s and CPU ms/image, and ratios to the Keras way (the
    first case)."""
    base = cases[0]
    lines = [
        "| tool | images/s (median) | IQR | CPU ms/image | images/s vs Keras way | "
        "CPU time: Keras way / tool |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cases:
        if c["status"] != "ok":
            lines.append(f"| {c['label']} | {c['status']}: {c.get('reason', '')} | | | | |")
            continue
        speed, cpu = c["images_per_s"], c["cpu_ms_per_image"]
        ratio = speed["median"] / base["images_per_s"]["median"]
        cpu_ratio = ratio_of(base["cpu_ms_per_image"]["median"], cpu["median"])
        lines.append(
            f"| {c['label']} | {speed['median']:,.0f} | {speed['q1']:,.0f}-{speed['q3']:,.0f} | "
            f"{cpu['median']:.2f} | {ratio:.2f}x | {cpu_ratio:.2f}x |"
        )
    return lines


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m bench.keras_layers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--quick", action="store_true", help="tiny data and windows (smoke test)")
    parser.add_argument("--stack", choices=sorted(STACKS), default="b")
    args = parser.parse_args(argv)
    tools, described = STACKS[args.stack]
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    stack = "" if args.stack == "b" else f"{args.stack.replace('_', '')}-"
    name = f"keras-layers-{stack}{'quick-' if args.quick else ''}{stamp}"
    workload = WORKLOADS["b"]
    with console.status("preparing data (cached after the first run)"):
        data = prepare("b", args.quick, None)
    load_before = os.getloadavg()
    with open(args.out / f"{name}.log", "w") as log:
        cases = run_group(
            [(tool, None) for tool in tools],
            "b",
            data,
            args.repeats,
            timing("b", args.quick),
            log,
            "main",
        )
    result = {
        "command": "python -m bench.keras_layers " + " ".join(argv or []),
        "machine": machine.describe(),
        "workload": workload.title,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "cases": cases,
    }
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
    lines = [
        f"# Workload (b) as Keras layers ({args.stack}): the Keras way vs daliaug.from_keras",
        "",
        f"- Machine: {result['machine'].get('cpu', '')}; medians of {args.repeats} interleaved "
        f"repeats; load average {load_before[0]:.1f} before, {result['loadavg_after'][0]:.1f} "
        "after (the machine is shared).",
        f"- Stack: {described}. See bench/tools/keras_layers.py.",
        "",
        *table(cases),
    ]
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")
    console.print("\n".join(lines))
    return args.out / f"{name}.md"


if __name__ == "__main__":
    main()
