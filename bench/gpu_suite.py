"""The short GPU run, the most important numbers first (driven by ``bash bench/gpu_suite.sh``;
run with ``KERAS_BACKEND=jax``):

1. ``daliaug selftest --require-gpu --json``: the GPU path as users run it, and which decoder
   took each JPEG decode window (:mod:`daliaug.tools.decoders`);
2. throughput, workloads (b) and (c): daliaug's ``DaliLoader`` (outputs left on the GPU) and
   its JAX output at the defaults, then every row at its best point of a small
   ``num_threads`` x ``hw_decoder_load`` sweep: daliaug's two, DALI's own hand-written
   rn50-style pipeline on the same files for (b) and DALI's ``auto_aug`` pipeline for (c),
   and for (b) DALI's decoder alone with the pipeline's windows (the ceiling); before them,
   a few batches of each workload through ``DaliLoader`` with nvImageCodec's log read, to
   count the images per decoder (a window on the CPU fails the run); daliaug's runs at the
   defaults judged host-bound or not as ``daliaug doctor`` judges (:func:`bound`);
3. the fit overhead (:mod:`bench.fit_overhead`): ResNet-50 on Keras' JAX backend fed by
   ``make_dataset`` against one constant batch on the device.

Every point is a fresh pipeline in this process, measured as :mod:`bench.run` measures
(:func:`bench.worker.measure`; shorter windows). Writes ``gpu-suite-<date>.json`` (machine,
cores, versions, every raw figure) and ``.md`` under ``--out`` and prints the table last.
``--dry-run`` stands DALI's CPU operators in for the GPU, with tiny data, windows and model,
so the whole suite runs on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import machine
from bench.run import GPU_EPOCH_SCALE, Timing, timing
from bench.tools import TOOLS, Unavailable
from bench.worker import measure
from bench.workloads import WORKLOADS, Data, prepare
from daliaug.config import HW_DECODER_LOAD, Config

ROWS = {
    "b": ("loader-gpu", "jax", "dali-rn50", "decode-gpu-roi"),
    "c": ("loader-gpu", "jax", "dali-autoaug-gpu"),
}
"""Each workload's rows, daliaug's first; the last is the reference (DALI's own)."""
DALIAUG = ("loader-gpu", "jax")
"""The rows measured at the config's defaults too."""
BASELINE = {"b": "dali-rn50", "c": "dali-autoaug-gpu"}
GPU_TIMING = Timing(warmup=2, warmup_seconds=1.0, seconds=3.0, max_images=10**9)
TARGETS = {"b": 0.9, "c": 0.8}
"""daliaug's best (JAX output) against DALI's own best, at least (issue 31)."""
B_RATE = 10_000
FIT_OVERHEAD = 0.05


def selftest(dry_run: bool, out: Path, timeout: float) -> dict[str, Any]:
    """``daliaug selftest --json`` in its own process; in a dry run with TensorFlow hidden (as
    on the GPU host, which has none) and one training step."""
    if dry_run:
        command = [
            "-c",
            "import sys; sys.modules['tensorflow'] = None; from daliaug.cli import main; "
            "sys.exit(main(['selftest', '--json', '--steps', '1']))",
        ]
    else:
        command = ["-m", "daliaug.cli", "selftest", "--require-gpu", "--json"]
    try:
        done = subprocess.run(
            [sys.executable, *command], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": f"no answer within {timeout:.0f} s"}
    (out / "selftest.log").write_text(done.stderr)
    start = done.stdout.find("{")
    report = json.loads(done.stdout[start : done.stdout.rindex("}") + 1]) if start >= 0 else None
    return {"exit": done.returncode, "report": report}


def decoders(name: str, data: Data, device: str, batches: int = 3) -> dict[str, Any]:
    """The images per decoder of a few batches of workload ``name`` through ``DaliLoader`` at
    the defaults (nvImageCodec's log read; DALI's prefetching decodes a few batches more)."""
    from daliaug.tools.decoders import account, decoder_log

    tool = dataclasses.replace(TOOLS["loader-gpu"], device=device)
    with decoder_log() as log:
        batch_sizes = tool.build(WORKLOADS[name], data, None)()
        for _ in range(batches):
            next(batch_sizes)
        batch_sizes.close()
    counted = account(log[0])
    return {**counted.as_dict(), "summary": counted.summary()}


def point(name: str, workload: str, data: Data, device: str, clock: Timing, **at: Any) -> dict:
    """One measurement of tool ``name`` at ``threads`` (``None``: the default) and
    ``hw_decoder_load``."""
    tool = dataclasses.replace(TOOLS[name], device=device)
    loaded = {**WORKLOADS[workload].config, "hw_decoder_load": at["hw_decoder_load"]}
    chosen = dataclasses.replace(WORKLOADS[workload], config=loaded)
    run: dict[str, Any] = {"tool": name, **at}
    try:
        epoch = tool.build(chosen, data, at["threads"])
        settings = (clock.warmup, clock.warmup_seconds, clock.seconds, clock.max_images)
        run.update(measure(epoch, *settings, device=device))
    except Unavailable as e:
        run["unavailable"] = str(e)
    except Exception as e:  # one failing row must not cost the others
        run["error"] = f"{type(e).__name__}: {e}"
    return run


def throughput(args: argparse.Namespace, device: str) -> dict[str, Any]:
    """Per workload and row: the run at the defaults (daliaug's rows) and the sweep's runs."""
    results: dict[str, Any] = {}
    for workload in args.workload:
        scale = 1 if args.dry_run else GPU_EPOCH_SCALE
        data = prepare(workload, args.dry_run, scale=scale)
        clock = timing(workload, True) if args.dry_run else GPU_TIMING
        rows: dict[str, Any] = {"decoders": decoders(workload, data, device)}
        for name in ROWS[workload]:
            row: dict[str, Any] = {}
            if name in DALIAUG:
                at = {"threads": None, "hw_decoder_load": HW_DECODER_LOAD}
                row["defaults"] = point(name, workload, data, device, clock, **at)
                row["bound"] = bound(row["defaults"])
            row["sweep"] = [
                point(name, workload, data, device, clock, threads=t, hw_decoder_load=load)
                for t in args.threads
                for load in args.loads
            ]
            rows[name] = row
            print(f"  ({workload}) {name}: {best_text(row)}", file=sys.stderr, flush=True)
        results[workload] = rows
    return results


def bound(run: dict[str, Any]) -> str | None:
    """``daliaug doctor``'s judgement of a run at the defaults: host-bound or not, and the knob
    (no GPU utilisation here: the bench reads none)."""
    from daliaug.tools.doctor import input_bound

    if "images_per_s" not in run:
        return None
    cores = len(os.sched_getaffinity(0))
    busy = 100 * run["cpu_seconds"] / (run["seconds"] * cores)
    defaults = Config.model_validate({"source": {"type": "arrays"}, "image_size": 1})
    judged = input_bound(
        run["images_per_s"],
        busy,
        cores,
        defaults.dali_threads("gpu"),
        None,
        defaults.hw_decoder_load,
        defaults.prefetch_depth("gpu"),
    )
    return judged.message


def fit(args: argparse.Namespace, device: str) -> dict[str, Any]:
    from bench.fit_overhead import fit_overhead

    data = prepare("b", args.dry_run, scale=1 if args.dry_run else GPU_EPOCH_SCALE)
    if args.dry_run:
        return fit_overhead(data, device, batch_size=8, steps=2, warmup=1, image_size=32)
    return fit_overhead(data, device)


def best(row: dict[str, Any]) -> dict[str, Any] | None:
    """The fastest measured run of a row (its defaults included)."""
    runs = [r for r in [row.get("defaults"), *row["sweep"]] if r and "images_per_s" in r]
    return max(runs, key=lambda r: r["images_per_s"], default=None)


def best_text(row: dict[str, Any]) -> str:
    top = best(row)
    if top is None:
        failed = row["sweep"][0] if row["sweep"] else row.get("defaults", {})
        return f"not measured ({failed.get('unavailable') or failed.get('error')})"
    return (
        f"{top['images_per_s']:,.0f} images/s at {top['threads'] or 'default'} threads, "
        f"hw_decoder_load {top['hw_decoder_load']:g}"
    )


def _rate(run: dict[str, Any] | None) -> float | None:
    return run.get("images_per_s") if run else None


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top and bottom else None


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(target, measured, status)`` rows: PASS, MISS, NOT MEASURED, or DRY RUN."""
    rows = []
    speed = result["throughput"]

    def judge(name: str, value: float | None, ok: bool, shown: str) -> None:
        status = (
            "DRY RUN"
            if result["dry_run"]
            else "NOT MEASURED"
            if value is None
            else ("PASS" if ok else "MISS")
        )
        rows.append((name, shown if value is not None else "n/a", status))

    if "b" in speed:
        rate = _rate(speed["b"]["jax"].get("defaults"))
        judge(
            f"(b) JAX output at defaults >= {B_RATE:,}/s",
            rate,
            (rate or 0) >= B_RATE,
            f"{rate or 0:,.0f}",
        )
    for workload, share in TARGETS.items():
        if workload not in speed:
            continue
        mine, theirs = best(speed[workload]["jax"]), best(speed[workload][BASELINE[workload]])
        ratio = _ratio(_rate(mine), _rate(theirs))
        label = f"({workload}) JAX output best / {TOOLS[BASELINE[workload]].label} best >= {share}x"
        judge(label, ratio, (ratio or 0) >= share, f"{ratio or 0:.2f}x")
    windows = [speed[w]["decoders"] for w in speed]
    cpu = sum(w["cpu"] + w["failed"] for w in windows) if windows else None
    judge("decode windows on the CPU fallback: 0", cpu, cpu == 0, f"{cpu}")
    fitted = result.get("fit") or {}
    over = fitted.get("overhead")
    judge(
        f"fit overhead <= {FIT_OVERHEAD:.0%}",
        over,
        (over or 1) <= FIT_OVERHEAD,
        f"{(over or 0):.1%}",
    )
    return rows


def table(result: dict[str, Any]) -> str:
    """Markdown: the checks, then images/s per workload and row, then the targets."""
    described = result["machine"]
    where = "DRY RUN: DALI's CPU operators, tiny data" if result["dry_run"] else "GPU"
    lines = [
        f"# daliaug GPU suite ({where}), {described['date']}",
        "",
        f"- {described['gpu']}; {described['cpu']}, {described['cores_usable']} usable cores; "
        f"commit {described['commit']}; {result['seconds']:.0f} s in all.",
    ]
    test = result["selftest"]
    checks = (test.get("report") or {}).get("checks", [])
    passed = sum(c["passed"] is True for c in checks)
    failed = [c["name"] for c in checks if c["passed"] is False]
    lines.append(
        f"- selftest: exit {test.get('exit')}, {passed} checks passed"
        + (f", failed: {', '.join(failed)}" if failed else "")
        + (f" ({test['error']})" if "error" in test else "")
    )
    for workload, rows in result["throughput"].items():
        lines.append(f"- ({workload}) decoders: {rows['decoders']['summary']}")
        for name in DALIAUG:
            if rows[name].get("bound"):
                lines.append(f"- ({workload}) {TOOLS[name].label}: {rows[name]['bound']}")
    lines += ["", "| workload | pipeline | at defaults | best (threads, hw_decoder_load) |"]
    lines.append("| --- | --- | ---: | --- |")
    for workload, rows in result["throughput"].items():
        for name in ROWS[workload]:
            row = rows[name]
            at = _rate(row.get("defaults"))
            shown = f"{at:,.0f}" if at else "-"
            lines.append(f"| ({workload}) | {TOOLS[name].label} | {shown} | {best_text(row)} |")
    fitted = result.get("fit") or {}
    if "images_per_s" in fitted:
        rates = fitted["images_per_s"]
        lines += [
            "",
            f"Fit ({fitted['model']}, batch {fitted['batch_size']}, JAX): constant batch "
            f"{rates['constant']:,.0f} images/s, make_dataset {rates['make_dataset']:,.0f}: "
            f"overhead {fitted['overhead']:.1%}",
        ]
    elif "error" in fitted:
        lines += ["", f"Fit: {fitted['error']}"]
    lines += ["", "| target | measured | status |", "| --- | ---: | --- |"]
    lines += [f"| {t} | {m} | {s} |" for t, m, s in verdicts(result)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_suite")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--workload", nargs="+", choices=sorted(ROWS), default=["b", "c"])
    parser.add_argument("--threads", type=int, nargs="+", help="default: 6 and all usable cores")
    parser.add_argument("--loads", type=float, nargs="+", default=[0.65, 0.99])
    parser.add_argument("--selftest-timeout", type=float, default=240)
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu"))
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    args.threads = args.threads or ([1, 2] if args.dry_run else sorted({min(6, cores), cores}))
    device = "cpu" if args.dry_run else "gpu"
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    result: dict[str, Any] = {"dry_run": args.dry_run, "machine": machine.describe()}
    result["sweep"] = {"threads": args.threads, "hw_decoder_load": args.loads}
    print("(i) selftest", file=sys.stderr, flush=True)
    result["selftest"] = selftest(args.dry_run, args.out, args.selftest_timeout)
    print("(ii) throughput", file=sys.stderr, flush=True)
    result["throughput"] = throughput(args, device)
    print("(iii) fit overhead", file=sys.stderr, flush=True)
    try:
        result["fit"] = fit(args, device)
    except Exception as e:  # reported in the table; the numbers before it stand
        result["fit"] = {"error": f"{type(e).__name__}: {e}"}
    result["seconds"] = time.perf_counter() - started
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"gpu-suite-{'dry-' if args.dry_run else ''}{stamp}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
    text = table(result)
    base.with_suffix(".md").write_text(text)
    print(text)
    missed = [s for _, _, s in verdicts(result) if s == "MISS"]
    windows_on_cpu = any(rows["decoders"]["cpu_fallback"] for rows in result["throughput"].values())
    if windows_on_cpu and not args.dry_run:
        print("FAIL: decode windows went to the CPU decoder (see the decoders lines)", flush=True)
    return 1 if (windows_on_cpu and not args.dry_run) or missed else 0


if __name__ == "__main__":
    sys.exit(main())
