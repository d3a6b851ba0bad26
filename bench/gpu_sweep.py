"""The ``mixed`` decoder's ``hw_decoder_load`` against DALI's ``num_threads``, on workload (b):
images/s of the decoder alone with the pipeline's windows (``decode-gpu-roi``) and of the
whole DALI pipeline (``loader-gpu``), for every pair.

    python -m bench.gpu_sweep [--loads 0.65 0.8 0.9 0.99] [--threads 1 2 4 8 16]
                              [--tools decode-gpu-roi loader-gpu] [--quick] [--out DIR]

The share DALI gives the hardware JPEG decoder (A100, H100) is the config's
``hw_decoder_load`` (default :data:`daliaug.config.HW_DECODER_LOAD`); the rest goes to nvJPEG's
CUDA decoder, whose Huffman stage runs on the pipeline's CPU threads, so the best share depends
on the threads. Each pair builds a fresh pipeline in this process and is measured as ``bench.run``
measures (its timing, :func:`bench.worker.measure`: warm-up excluded, the GPU waited for
before each clock). Writes ``gpu-sweep-<date>.json`` and ``.md``. ``--device cpu`` runs the
same on DALI's CPU operators (the load is then ignored): for checking the sweep itself
without a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

from bench import machine
from bench.run import GPU_EPOCH_SCALE, timing
from bench.tools import TOOLS, Unavailable
from bench.worker import measure
from bench.workloads import WORKLOADS, prepare


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Images/s of each tool at each ``(load, threads)``."""
    data = prepare("b", args.quick, scale=GPU_EPOCH_SCALE if args.device == "gpu" else 1)
    clock = timing("b", args.quick)
    runs = []
    for name in args.tools:
        tool = dataclasses.replace(TOOLS[name], device=args.device)
        for load in args.loads:
            for threads in args.threads:
                run = {"tool": name, "hw_decoder_load": load, "threads": threads}
                workload = WORKLOADS["b"].at_batch(clock.batch_size)
                loaded = {**workload.config, "hw_decoder_load": load}
                try:
                    epoch = tool.build(dataclasses.replace(workload, config=loaded), data, threads)
                    settings = (clock.warmup, clock.warmup_seconds, clock.seconds, clock.max_images)
                    run.update(measure(epoch, *settings, device=args.device))
                except Unavailable as e:
                    run["unavailable"] = str(e)
                runs.append(run)
    return runs


def table(runs: list[dict[str, Any]], device: str) -> str:
    """Markdown: one table per tool, loads down, threads across (images/s)."""
    described = machine.describe()
    lines = [
        f"# hw_decoder_load x num_threads, workload (b), DALI on the {device.upper()}",
        "",
        f"- Machine: {described['cpu']}, {described['cores']} cores, GPU: {described['gpu']}; "
        f"commit {described['commit']}.",
    ]
    for tool in dict.fromkeys(r["tool"] for r in runs):
        mine = [r for r in runs if r["tool"] == tool]
        threads = list(dict.fromkeys(r["threads"] for r in mine))
        lines += ["", f"## {TOOLS[tool].label} (images/s)", ""]
        lines.append("| hw_decoder_load | " + " | ".join(f"{t} threads" for t in threads) + " |")
        lines.append("| ---: |" + " ---: |" * len(threads))
        for load in dict.fromkeys(r["hw_decoder_load"] for r in mine):
            cells = [
                f"{r['images_per_s']:,.0f}" if "images_per_s" in r else "n/a"
                for t in threads
                for r in mine
                if r["threads"] == t and r["hw_decoder_load"] == load
            ]
            lines.append(f"| {load} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_sweep")
    parser.add_argument("--loads", type=float, nargs="+", default=[0.65, 0.8, 0.9, 0.99])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--tools", nargs="+", default=["decode-gpu-roi", "loader-gpu"])
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    runs = sweep(args)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"gpu-sweep-{stamp}"
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"machine": machine.describe(), "device": args.device, "runs": runs}
    base.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = table(runs, args.device)
    base.with_suffix(".md").write_text(text)
    print(text)
    return base


if __name__ == "__main__":
    main()
