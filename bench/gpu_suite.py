"""The short GPU run, the most important numbers first (driven by ``bash bench/gpu_suite.sh``;
run with ``KERAS_BACKEND=jax``), its results written after every measured point (JSON and
table), so that a stop or a crash keeps everything measured before it:

0. the window-decode canary (:mod:`daliaug.engines.dali.canary`), in a child process, before
   anything decodes a window on the GPU in this process (nvImageCodec#55): where it fails, the
   decode windows are decoded whole (``decode_window: auto``) and the ``roi`` rows are left out;
1. ``daliaug selftest --require-gpu --json`` in its own process: the GPU path as users run it,
   and which decoder took each JPEG decode window (:mod:`daliaug.tools.decoders`);
2. throughput, workloads (b) and (c): daliaug's ``DaliLoader`` (outputs left on the GPU) and
   its JAX output at the defaults (GPU threads: every usable core; ``hw_decoder_load``: the
   default where ``--loads`` holds it, else the first of them), (b)'s loader with whole-image
   decoding too, then every row at each ``num_threads`` x ``hw_decoder_load`` point of a small
   sweep: daliaug's two, DALI's own rn50 pipeline as DALI's examples write it on the same
   files for (b) and DALI's ``auto_aug`` pipeline for (c), and for (b) DALI's decoder alone
   with the pipeline's windows (the ceiling); before them, a few batches of each workload
   through ``DaliLoader`` with nvImageCodec's log and NVML's JPEG engine read, to count the
   images per decoder; daliaug's runs at the defaults judged host-bound or not as ``daliaug
   doctor`` judges (:func:`bound`); then detection, workload (d): :mod:`bench.detection`'s
   daliaug config (COCO JPEGs with boxes, random resized crop to 640 decoded as a window, flip,
   colour jitter, mosaic, boxes moved on the host, batch 32) through ``DaliLoader`` at the
   defaults alone (no sweep), its decoders counted as (b)'s and (c)'s;
3. the fit overhead (:mod:`bench.fit_overhead`): ResNet-50 on Keras' JAX backend fed by
   ``make_dataset`` against one constant batch on the device.

Every point is a fresh pipeline in this process, measured as :mod:`bench.run` measures
(:func:`bench.worker.measure`; shorter windows). The data is built beforehand on another
machine (``--make-data DIR``) and carried to the host (``--data DIR``). Writes
``gpu-suite-<date>.json`` (machine, cores, versions, every raw figure) and ``.md`` under
``--out`` and prints the table last. ``--dry-run`` stands DALI's CPU operators in for the GPU,
with tiny data, batches, windows and model, so the whole suite runs on a machine without a
GPU, and asserts the GPU run's time plan (:func:`time_plan`: at most :data:`BUDGET_S` on 16 cores).
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
from bench.worker import NvmlTrace, measure
from bench.workloads import WORKLOADS, Data, Workload, prepare
from daliaug.config import HW_DECODER_LOAD, Config

ROWS = {
    "b": ("loader-gpu", "jax", "dali-rn50", "decode-gpu-roi"),
    "c": ("loader-gpu", "jax", "dali-autoaug-gpu"),
    "d": ("loader-gpu",),
}
"""Each workload's rows, daliaug's first; the last of (b) and (c) is the reference (DALI's
own); (d), detection, is daliaug's loader alone."""
DALIAUG = ("loader-gpu", "jax")
"""The rows measured at the config's defaults too."""
SWEPT = ("b", "c")
"""The workloads whose rows are measured at every sweep point too ((d): at the defaults
only)."""
BASELINE = {"b": "dali-rn50", "c": "dali-autoaug-gpu"}
GPU_TIMING = Timing(warmup=2, warmup_seconds=1.0, seconds=2.0, max_images=10**9)
TARGETS = {"b": 0.9, "c": 0.8}
"""daliaug's best (JAX output) against DALI's own best, at least (issue 31)."""
B_RATE = 10_000
FIT_OVERHEAD = 0.05
WHOLE = "loader-gpu"
"""(b)'s row also measured with whole images decoded (``decode_window: whole``) where the
canary passed (where it failed, every row decodes whole images)."""

BUDGET_S = 480.0
"""The GPU run's time plan, at most (one command may run 10 minutes; the lease is 15 minutes,
of which its first run spent 1 minute starting the host and sending the kit). Was 360 s until
that run (H200, 2026-11-29) measured the selftest: its stored-reference check builds a GPU
pipeline per case, about 2 s each, and had not finished after 125 s."""
PLAN_CORES = 16
"""The cores of the lent GPU host, for the time plan."""
BUILD_S = 3.0
"""A point's pipeline build and first batches, on top of its clock (planned, not measured)."""
CANARY_S = 45.0
"""The canary's child at most (starting CUDA and DALI, a few windows)."""
DECODERS_S = 10.0
"""The decoder count's few batches, per workload (planned)."""
FIT_S = 80.0
"""The fit overhead's eight fits (two feeds x two recorders x two repeats, 105 steps each),
compilation included (planned; was 60 s for two fits of 35 steps)."""
SELFTEST_S = 200.0
"""The selftest at most: more than 125 s on an H200 (its first GPU run, stopped there)."""


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


def first_canary(dry_run: bool, timeout: float = CANARY_S) -> dict[str, Any]:
    """The window-decode canary in its own process (killed after ``timeout`` seconds), before
    any window is decoded here (on the GPU its outcome is cached for this run's ``decode_window:
    auto``; in a dry run the child decodes on DALI's CPU)."""
    from daliaug.engines.dali import canary

    if dry_run:
        outcome = canary.run_child(canary.child_command("cpu", 0), timeout=timeout)
    else:
        outcome = canary.canary(0, timeout=timeout)
    return dataclasses.asdict(outcome)


def suite_workload(name: str) -> Workload:
    """Workload ``name``: (b) and (c) of :mod:`bench.workloads`, (d) of :mod:`bench.detection`."""
    from bench import detection

    return detection.gpu_workload() if name == "d" else WORKLOADS[name]


def data_for(name: str, quick: bool, cache: Path | None) -> Data:
    """Workload ``name``'s data (written once under ``cache``), its epochs
    :data:`~bench.run.GPU_EPOCH_SCALE` times longer unless ``quick``."""
    from bench import detection

    scale = 1 if quick else GPU_EPOCH_SCALE
    if name == "d":
        return detection.prepare(quick, cache=cache, scale=scale)
    return prepare(name, quick, cache=cache, scale=scale)


def decoders(
    name: str, data: Data, device: str, batch_size: int | None, batches: int = 3
) -> dict[str, Any]:
    """The images per decoder of a few batches (of ``batch_size``; ``None``: the workload's) of
    workload ``name`` through ``DaliLoader`` at the defaults (nvImageCodec's log read, NVML's
    JPEG engine read after each batch; DALI's prefetching decodes a few batches more)."""
    from daliaug.tools.decoders import account, decoder_log
    from daliaug.tools.monitor import Nvml

    nvml = Nvml()
    tool = dataclasses.replace(TOOLS["loader-gpu"], device=device)
    busy = []
    with decoder_log() as log:
        batch_sizes = tool.build(suite_workload(name).at_batch(batch_size), data, None)()
        for _ in range(batches):
            next(batch_sizes)
            busy.append(nvml.jpeg_utilisation())
        batch_sizes.close()
    counted = account(log[0])
    engine = max((b for b in busy if b is not None), default=None)
    summary = f"{counted.summary()}; NVML JPEG engines busy (peak) " + (
        "n/a" if engine is None else f"{engine:.0f}%"
    )
    return {**counted.as_dict(), "jpeg_engine_percent": engine, "summary": summary}


def point(
    name: str, workload: str, data: Data, device: str, clock: Timing, **at: Any
) -> dict[str, Any]:
    """One measurement of tool ``name`` at ``threads`` (``None``: the default) and
    ``hw_decoder_load``."""
    tool = dataclasses.replace(TOOLS[name], device=device)
    window = {"decode_window": at["decode_window"]} if "decode_window" in at else {}
    base = suite_workload(workload).at_batch(clock.batch_size)
    loaded = {**base.config, "hw_decoder_load": at["hw_decoder_load"], **window}
    chosen = dataclasses.replace(base, config=loaded)
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


def default_load(loads: list[float]) -> float:
    """The ``hw_decoder_load`` of the rows at the defaults: the config's default where
    ``--loads`` holds it, else the first of ``--loads``."""
    return HW_DECODER_LOAD if HW_DECODER_LOAD in loads else loads[0]


def points(workload: str, name: str, threads: int, loads: int, windows: bool = True) -> int:
    """How many points row ``name`` of ``workload`` measures (see :func:`throughput`)."""
    extra = (name in DALIAUG) + (workload == "b" and name == WHOLE and windows)
    return extra + (threads * loads if workload in SWEPT else 0)


def throughput(
    args: argparse.Namespace,
    device: str,
    windows: bool,
    results: dict[str, Any],
    save: Any,
    trace: NvmlTrace,
) -> None:
    """Per workload and row, into ``results``: the run at the defaults (daliaug's rows; (b)'s
    loader with whole images decoded too, where ``windows``: the canary passed) and, for the
    :data:`SWEPT` workloads, the sweep's runs, each with NVML's readings from ``trace``,
    ``save`` called after each point."""
    for workload in args.workload:
        data = data_for(workload, args.dry_run, args.data)
        clock = timing(workload, True) if args.dry_run else GPU_TIMING
        rows = results[workload] = {"decoders": counted(workload, data, device, clock)}
        save()
        for name in ROWS[workload]:
            row: dict[str, Any] = {"sweep": []}
            rows[name] = row
            if name in DALIAUG:
                at = {"threads": None, "hw_decoder_load": default_load(args.loads)}
                row["defaults"] = seen(point(name, workload, data, device, clock, **at), trace)
                row["bound"] = bound(row["defaults"])
                save()
                if workload == "b" and name == WHOLE and windows:
                    at["decode_window"] = "whole"
                    row["whole"] = seen(point(name, workload, data, device, clock, **at), trace)
                    save()
            for t in args.threads if workload in SWEPT else []:
                for load in args.loads:
                    at = {"threads": t, "hw_decoder_load": load}
                    run = point(name, workload, data, device, clock, **at)
                    row["sweep"].append(seen(run, trace))
                    save()
            print(f"  ({workload}) {name}: {best_text(row)}", file=sys.stderr, flush=True)


def seen(run: dict[str, Any], trace: NvmlTrace) -> dict[str, Any]:
    """``run`` with NVML's GPU and JPEG-engine utilisation over its clock (where it has one)."""
    if "clock_unix" in run:
        run["nvml"] = trace.during(run["clock_unix"])
    return run


def counted(workload: str, data: Data, device: str, clock: Timing) -> dict[str, Any]:
    """:func:`decoders` at ``clock``'s batch, or why the count failed (its windows then never
    judged on the GPU alone: see :func:`verdicts`), so that the rows after it are still
    measured."""
    try:
        return decoders(workload, data, device, clock.batch_size)
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
        return {"error": error, "cpu_fallback": False, "summary": f"not counted ({error})"}


def time_plan(
    workloads: list[str], threads: int, loads: int, selftest_s: float
) -> dict[str, float]:
    """The GPU run's seconds by part, planned: the canary and the selftest at their limits,
    each point at :data:`GPU_TIMING`'s clock and :data:`BUILD_S`, the decoder counts and the
    fit as planned; ``total``."""
    count = sum(points(w, n, threads, loads) for w in workloads for n in ROWS[w])
    per_point = GPU_TIMING.warmup_seconds + GPU_TIMING.seconds + BUILD_S
    plan = {
        "canary": CANARY_S,
        "selftest": selftest_s,
        "decoders": DECODERS_S * len(workloads),
        "points": count * per_point,
        "fit": FIT_S,
    }
    return {**plan, "total": sum(plan.values()), "point_count": count}


def bound(run: dict[str, Any]) -> str | None:
    """``daliaug doctor``'s judgement of a run at the defaults: host-bound or not, and the knob
    (GPU utilisation: NVML's mean over the run's clock, where :func:`seen` read one; the first
    GPU run, 2026-11-29, passed none here although ``nvidia-ml-py`` was installed: its "no
    NVML" meant this, not the host)."""
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
        (run.get("nvml") or {}).get("gpu_percent_mean"),
        defaults.hw_decoder_load,
        defaults.prefetch_depth("gpu"),
    )
    return judged.message


def fit(args: argparse.Namespace, device: str) -> dict[str, Any]:
    from bench.fit_overhead import fit_overhead

    data = data_for("b", args.dry_run, args.data)
    if args.dry_run:
        return fit_overhead(data, device, batch_size=8, steps=2, warmup=1, image_size=32)
    return fit_overhead(data, device)


def best(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fastest measured run of a row (its defaults included; not its whole-image run)."""
    row = row or {"sweep": []}
    runs = [r for r in [row.get("defaults"), *row["sweep"]] if r and "images_per_s" in r]
    return max(runs, key=lambda r: r["images_per_s"], default=None)


def best_text(row: dict[str, Any]) -> str:
    top = best(row)
    if top is None:
        failed = row["sweep"][0] if row["sweep"] else row.get("defaults") or {}
        return f"not measured ({failed.get('unavailable') or failed.get('error') or 'not yet'})"
    return (
        f"{top['images_per_s']:,.0f} images/s at {top['threads'] or 'default'} threads, "
        f"hw_decoder_load {top['hw_decoder_load']:g}"
    )


def _rate(run: dict[str, Any] | None) -> float | None:
    return run.get("images_per_s") if run else None


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top and bottom else None


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(target, measured, status)`` rows: PASS, MISS, UNKNOWN (nothing showed which decoder
    took the windows), NOT MEASURED, or DRY RUN."""
    rows = []
    speed = result.get("throughput", {})

    def judge(name: str, value: float | None, ok: bool | None, shown: str) -> None:
        status = (
            "DRY RUN"
            if result["dry_run"]
            else "NOT MEASURED"
            if value is None
            else ("UNKNOWN" if ok is None else "PASS" if ok else "MISS")
        )
        rows.append((name, shown if value is not None else "n/a", status))

    if "b" in speed:
        rate = _rate(speed["b"].get("jax", {}).get("defaults"))
        judge(
            f"(b) JAX output at defaults >= {B_RATE:,}/s",
            rate,
            (rate or 0) >= B_RATE,
            f"{rate or 0:,.0f}",
        )
    for workload, share in TARGETS.items():
        if workload not in speed:
            continue
        mine, theirs = (
            best(speed[workload].get("jax")),
            best(speed[workload].get(BASELINE[workload])),
        )
        ratio = _ratio(_rate(mine), _rate(theirs))
        label = f"({workload}) JAX output best / {TOOLS[BASELINE[workload]].label} best >= {share}x"
        judge(label, ratio, (ratio or 0) >= share, f"{ratio or 0:.2f}x")
    windows = [speed[w]["decoders"] for w in speed]
    cpu = sum(w.get("cpu", 0) + w.get("failed", 0) for w in windows) if windows else None
    seen = all(
        "error" not in w and (w.get("unknown", 0) == 0 or w.get("jpeg_engine_percent"))
        for w in windows
    )
    judge("decode windows on the CPU fallback: 0", cpu, cpu == 0 and (seen or None), f"{cpu}")
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
        f"commit {described['commit']}; {result.get('seconds', 0):.0f} s in all"
        + ("." if result.get("finished") else " so far (stopped, or still running)."),
    ]
    outcome = result.get("canary")
    if outcome:
        said = "passed" if outcome["passed"] else "FAILED: windows decoded whole"
        lines.append(f"- window-decode canary {said} ({outcome['reason']})")
    test = result.get("selftest", {})
    checks = (test.get("report") or {}).get("checks", [])
    passed = sum(c["passed"] is True for c in checks)
    failed = [c["name"] for c in checks if c["passed"] is False]
    lines.append(
        f"- selftest: exit {test.get('exit')}, {passed} checks passed"
        + (f", failed: {', '.join(failed)}" if failed else "")
        + (f" ({test['error']})" if "error" in test else "")
    )
    for workload, rows in result.get("throughput", {}).items():
        lines.append(f"- ({workload}) decoders: {rows['decoders']['summary']}")
        for name in DALIAUG:
            if rows.get(name, {}).get("bound"):
                lines.append(f"- ({workload}) {TOOLS[name].label}: {rows[name]['bound']}")
        whole = _rate(rows.get(WHOLE, {}).get("whole"))
        if whole:
            lines.append(f"- ({workload}) {TOOLS[WHOLE].label}, whole images: {whole:,.0f}/s")
    lines += ["", "| workload | pipeline | at defaults | best (threads, hw_decoder_load) |"]
    lines.append("| --- | --- | ---: | --- |")
    for workload, rows in result.get("throughput", {}).items():
        for name in [n for n in ROWS[workload] if n in rows]:
            row = rows[name]
            at = _rate(row.get("defaults"))
            shown = f"{at:,.0f}" if at else "-"
            lines.append(f"| ({workload}) | {TOOLS[name].label} | {shown} | {best_text(row)} |")
    fitted = result.get("fit") or {}
    if "images_per_s" in fitted:
        lines += ["", f"Fit ({fitted['model']}, batch {fitted['batch_size']}, JAX):"]
        recorders = fitted.get("recorders") or {"sync": fitted}  # older results: one recorder
        for name, measured in recorders.items():
            rates = measured["images_per_s"]
            lines.append(
                f"- {name} step recorder: constant batch {rates['constant']:,.0f} images/s, "
                f"make_dataset {rates['make_dataset']:,.0f}: overhead {measured['overhead']:.1%}"
            )
    elif "error" in fitted:
        lines += ["", f"Fit: {fitted['error']}"]
    lines += ["", "| target | measured | status |", "| --- | ---: | --- |"]
    lines += [f"| {t} | {m} | {s} |" for t, m, s in verdicts(result)]
    return "\n".join(lines) + "\n"


def write(result: dict[str, Any], base: Path, started: float) -> str:
    """The result so far as ``base``.json and .md (each replaced whole); the table."""
    result["seconds"] = time.perf_counter() - started
    text = table(result)
    replace_whole(base, result, text)
    return text


def replace_whole(base: Path, result: dict[str, Any], text: str) -> None:
    """``result`` as ``base``.json and ``text`` as ``base``.md, each replaced whole (a reader,
    or a stop, never sees half a file)."""
    for suffix, data in ((".json", json.dumps(result, indent=1, default=str)), (".md", text)):
        tmp = base.with_suffix(suffix + ".tmp")
        tmp.write_text(data)
        tmp.replace(base.with_suffix(suffix))


def check_plan(args: argparse.Namespace) -> dict[str, float]:
    """The GPU run's time plan (:func:`time_plan`) with these arguments on
    :data:`PLAN_CORES` cores; a dry run fails when it is over :data:`BUDGET_S`."""
    threads = len(args.threads or [PLAN_CORES])  # default: one point, every core
    plan = time_plan(args.workload, threads, len(args.loads), args.selftest_timeout)
    print(
        f"time plan on {PLAN_CORES} cores: {plan['total']:.0f} s of {BUDGET_S:.0f} "
        f"({plan['point_count']:.0f} points)",
        file=sys.stderr,
        flush=True,
    )
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_suite")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--workload", nargs="+", choices=sorted(ROWS), default=sorted(ROWS))
    parser.add_argument(
        "--threads", type=int, nargs="+", help="default: all usable cores (the GPU default)"
    )
    parser.add_argument("--loads", type=float, nargs="+", default=[0.65, HW_DECODER_LOAD])
    parser.add_argument("--selftest-timeout", type=float, default=SELFTEST_S)
    parser.add_argument("--data", type=Path, help="the data folder built by --make-data")
    parser.add_argument("--make-data", action="store_true", help="build --data here and stop")
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu"))
    args = parser.parse_args(argv)
    if args.make_data:
        for workload in args.workload:
            data_for(workload, False, args.data)
        return 0
    if not args.dry_run and args.data is not None and not (args.data / "bench").is_dir():
        print(f"no data in {args.data}: build it with --make-data and carry it", file=sys.stderr)
        return 3
    cores = len(os.sched_getaffinity(0))
    plan = check_plan(args)
    args.threads = args.threads or ([1, 2] if args.dry_run else [cores])
    device = "cpu" if args.dry_run else "gpu"
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"gpu-suite-{'dry-' if args.dry_run else ''}{stamp}"
    result: dict[str, Any] = {"dry_run": args.dry_run, "machine": machine.describe()}
    result["sweep"] = {"threads": args.threads, "hw_decoder_load": args.loads}
    result["time_plan"] = plan

    def save() -> None:
        write(result, base, started)

    print("(0) window-decode canary", file=sys.stderr, flush=True)
    result["canary"] = first_canary(args.dry_run)
    save()
    print("(i) selftest", file=sys.stderr, flush=True)
    result["selftest"] = selftest(args.dry_run, args.out, args.selftest_timeout)
    save()
    print("(ii) throughput", file=sys.stderr, flush=True)
    result["throughput"] = {}
    trace = NvmlTrace()
    throughput(args, device, result["canary"]["passed"], result["throughput"], save, trace)
    trace.stop.set()
    print("(iii) fit overhead", file=sys.stderr, flush=True)
    try:
        result["fit"] = fit(args, device)
    except Exception as e:  # reported in the table; the numbers before it stand
        result["fit"] = {"error": f"{type(e).__name__}: {e}"}
    result["finished"] = True
    text = write(result, base, started)
    print(text)
    missed = [s for _, _, s in verdicts(result) if s == "MISS"]
    windows_on_cpu = any(rows["decoders"]["cpu_fallback"] for rows in result["throughput"].values())
    if windows_on_cpu and not args.dry_run:
        print("FAIL: decode windows went to the CPU decoder (see the decoders lines)", flush=True)
    over = args.dry_run and plan["total"] > BUDGET_S
    if over:
        print(f"FAIL: the GPU run's time plan is over {BUDGET_S:.0f} s", flush=True)
    return 1 if (windows_on_cpu and not args.dry_run) or missed or over else 0


if __name__ == "__main__":
    sys.exit(main())
