"""The GPU probe: what the first GPU suite left open, in at most 6 minutes on a 16-core H100 or
H200 (``bash bench/gpu_probe.sh``; the device calls: ``bench/notes/gpu-probe.md``).

Every step is a process of its own, run one after another (:data:`PLAN`), each killed at its
planned seconds (x :data:`SLACK`, never past the budget), each measured point written to
``gpu-probe-<date>.json`` and ``.md`` as soon as its process reports it, so a crash or a kill
keeps every number before it:

0. the window-decode canary (:func:`bench.gpu_suite.first_canary`, nvImageCodec#55) before
   anything decodes a window; where it fails, daliaug's points decode whole images and the
   points that decode windows with DALI's own operators are skipped;
1. DALI against the stored TensorFlow reference (:func:`daliaug.parity.reference.check_reference`,
   windows decoded whole on the GPU, as ``daliaug selftest`` checks them), the ``elastic`` cases
   first, each case's difference or error and seconds written as it runs, in a budget of its
   own;
2. DALI's rn50-style pipeline (:func:`bench.tools.gpu_tools.dali_rn50`) first and again last,
   to see the host drift;
3. workload (b) through ``DaliLoader`` (outputs left on the GPU) with the baseline's daliaug
   and the working tree's, interleaved (baseline, current, baseline, current): the baseline is
   ``git archive``'s copy of ``daliaug/`` at a commit (``bash bench/gpu_probe.sh --prepare``,
   here, before the lease), first on the child's ``PYTHONPATH`` (``python -P``: the working
   directory's own ``daliaug/`` is not on ``sys.path``); each child says which ``daliaug`` it
   imported;
4. the front-end grid, by hand on (b)'s files: {``fn.readers.file``, an external source of file
   names and ``fn.io.file.read``, an external source of bytes read on the host} x
   {``fn.decoders.image_random_crop`` as DALI's rn50 example decodes, ``fn.decoders.image_slice``
   on the decode windows daliaug's feed gives epoch 0}, each then resized to 224;
5. workload (d), detection (:mod:`bench.detection`), baseline and current interleaved as (b).

NVML (``nvidia-ml-py``, where it imports) is read in this process throughout
(:class:`bench.worker.NvmlTrace`): each point's GPU and JPEG-engine utilisation is the mean and
peak of the readings inside its timed window (``clock_unix``). The plan's seconds
(:func:`time_plan`) sum to at most :data:`BUDGET_S`; the table is printed last.

``--dry-run``: DALI's CPU operators, tiny data (batches of 8), short clocks and budgets; it fails
when the GPU run's plan is over budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from bench.gpu_suite import (
    BUILD_S,
    GPU_TIMING,
    data_for,
    first_canary,
    point,
    replace_whole,
    seen,
    suite_workload,
)
from bench.run import Timing, timing
from bench.tools import Epoch
from bench.worker import NvmlTrace
from bench.workloads import Data

ROOT = Path(__file__).parents[1]
BUDGET_S = 360.0
"""The probe's time plan, at most: 6 minutes of a 15-minute lease."""
START_S = 5.0
"""A process's start, planned: Python, DALI and daliaug imported, CUDA's context made."""
CANARY_S = 30.0
"""The canary's child at most (it took a few seconds on the H200)."""
REFERENCE_S = 160.0
"""The stored-reference check at most: about 2 s per case on the H200 (2026-11-29), 68 cases
on the GPU (66 on DALI's CPU, which has no remap for ``elastic``'s two)."""
SLACK = 1.5
"""A measuring step is killed at this many times its planned seconds."""
LONG = Timing(warmup=2, warmup_seconds=1.0, seconds=3.0, max_images=10**9)
"""The A/B points' and rn50's clock: 3 s after 1 s of warm-up."""
BASELINE_COMMIT = "fb09615"
"""The default baseline: the last landed commit when the probe was written."""
ELASTIC = ("elastic", "elastic, fill 40")
"""The reference cases run first: ``elastic`` on DALI's GPU, fixed after the H200 run."""
FRONTS = ("readers.file", "external source + io.file.read", "host bytes")
DECODERS = ("image_random_crop", "image_slice on daliaug's windows")
DRY = {"budget": 30.0, "reference": 60.0}
"""A dry run's limits, seconds: each measuring step's and the reference check's (on 2 shared
cores they took 1-3 s and 4 s; the limits only stop a hang)."""


@dataclasses.dataclass(frozen=True)
class Step:
    """One process of the probe: its ``kind``, workload, which daliaug it imports, and the
    points it measures at ``clock``."""

    name: str
    kind: str
    workload: str = "b"
    code: str = "current"
    points: int = 1
    clock: Timing = LONG

    @property
    def seconds(self) -> float:
        """Its planned seconds on the GPU host."""
        if self.kind == "canary":
            return CANARY_S
        if self.kind == "reference":
            return REFERENCE_S
        point_s = BUILD_S + self.clock.warmup_seconds + self.clock.seconds
        return START_S + self.points * point_s


def _pair(workload: str, clock: Timing) -> list[Step]:
    return [
        Step(f"({workload}) {code} {i}", "loader", workload, code, clock=clock)
        for i in (1, 2)
        for code in ("baseline", "current")
    ]


PLAN = [
    Step("canary", "canary"),
    Step("reference", "reference"),
    Step("rn50 first", "rn50"),
    *_pair("b", LONG),
    Step("front-end grid", "grid", points=len(FRONTS) * len(DECODERS), clock=GPU_TIMING),
    *_pair("d", GPU_TIMING),
    Step("rn50 last", "rn50"),
]


def time_plan(plan: list[Step] = PLAN) -> dict[str, float]:
    """Seconds per step on the GPU host, the probe's own start and ``total``."""
    steps = {s.name: s.seconds for s in plan}
    return {"start": START_S, **steps, "total": START_S + sum(steps.values())}


# The children: one step each, run as ``python -P -m bench.gpu_probe --child SPEC``.


def emit(record: dict[str, Any]) -> None:
    """One measured point (or case) to the parent, at once."""
    print("PROBE " + json.dumps(record, default=str), flush=True)


def daliaug_windows(data: Data, batch_size: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(b)'s epoch 0 as daliaug's feed makes it: each sample's file in order, and its decode
    window (``(x, y)`` starts and ``(w, h)`` shapes, pixels)."""
    from daliaug.engine_names import Choice
    from daliaug.engines.dali.pipeline import RESIZES
    from daliaug.engines.feed import EpochFeed
    from daliaug.run import Run

    config = suite_workload("b").at_batch(batch_size).daliaug_config(data)
    samples = data.samples()
    feed = EpochFeed(Run.of(config, samples, Choice("dali", "cpu")).spec, samples, resizes=RESIZES)
    paths, starts, shapes = [], [], []
    for batch in feed.batches(0, ("index", "warp")):
        cut = feed.layout.unpack(batch["warp"], lambda a, s: a.reshape(s), batched=True)
        paths += [samples.paths[i] for i in batch["index"]]
        starts.append(cut["crop_start"])
        shapes.append(cut["crop_shape"])
    return paths, np.concatenate(starts), np.concatenate(shapes)


def grid_epoch(front: str, decoder: str, data: Data, device: str, batch_size: int) -> Epoch:
    """Epochs of a hand-written DALI pipeline: ``front`` (one of :data:`FRONTS`) gives the
    encoded files of daliaug's epoch-0 order, ``decoder`` (one of :data:`DECODERS`) decodes
    them as DALI's rn50 example does (:func:`~bench.tools.gpu_tools.example_decoder`), then a
    triangular resize to 224."""
    from nvidia.dali import fn, pipeline_def, types

    from bench.tools.gpu_tools import example_decoder, pipeline_epochs, random_crop

    workload = suite_workload("b").at_batch(batch_size)
    config = workload.daliaug_config(data)
    eq, gpu = workload.equivalent, device == "gpu"
    paths, starts, shapes = daliaug_windows(data, batch_size)
    steps = len(paths) // batch_size
    reads, slices = front != FRONTS[0], decoder == DECODERS[1]
    state = {"batch": 0}

    def host_inputs() -> list[list[np.ndarray]]:
        """The batch's inputs from the host: its files (names or bytes) unless DALI's reader
        reads them, its windows where they are decoded."""
        i = state["batch"] % steps
        state["batch"] += 1
        cut = slice(i * batch_size, (i + 1) * batch_size)
        given = []
        if front == FRONTS[1]:
            given.append([np.frombuffer(p.encode(), np.uint8) for p in paths[cut]])
        elif front == FRONTS[2]:
            given.append([np.fromfile(p, np.uint8) for p in paths[cut]])
        return given + ([list(starts[cut]), list(shapes[cut])] if slices else [])

    @pipeline_def(
        batch_size=batch_size,
        num_threads=config.dali_threads(device),
        device_id=0 if gpu else None,
        prefetch_queue_depth=config.prefetch_depth(device),
        seed=0,
    )
    def graph() -> Any:
        count = reads + 2 * slices
        given = fn.external_source(host_inputs, num_outputs=count, batch=True) if count else []
        if reads:
            files, *given = given
            encoded = fn.io.file.read(files) if front == FRONTS[1] else files
        else:
            encoded, _ = fn.readers.file(files=paths, random_shuffle=False, name="files")
        if not slices:
            return random_crop(encoded, eq, gpu, config.hw_decoder_load)
        window = {"normalized_anchor": False, "normalized_shape": False, "axis_names": "WH"}
        load = config.hw_decoder_load
        images = fn.decoders.image_slice(encoded, *given, **window, **example_decoder(gpu, load))
        return fn.resize(images, size=list(eq.size), interp_type=types.INTERP_TRIANGULAR)

    pipe = graph()
    pipe.build()
    return pipeline_epochs(pipe, steps)


def measured(build: Callable[[], Epoch], clock: Timing, device: str) -> dict[str, Any]:
    """:func:`bench.worker.measure` of the epochs ``build`` makes, or the error that stopped it."""
    from bench.worker import measure

    try:
        settings = (clock.warmup, clock.warmup_seconds, clock.seconds, clock.max_images)
        return measure(build(), *settings, device=device)
    except Exception as e:  # one failing point must not cost the others
        return {"error": f"{type(e).__name__}: {e}"}


def reference_child(spec: dict[str, Any]) -> None:
    """The stored-reference check, each case emitted with its seconds as it ran."""
    from daliaug.parity.reference import SHIPPED, check_reference
    from daliaug.parity.report import Result

    last = [time.perf_counter()]

    def heard(row: Result | str, name: str) -> None:
        now = time.perf_counter()
        said = {"error": row} if isinstance(row, str) else row.as_dict()
        emit({"case": name, **said, "seconds": now - last[0]})
        last[0] = now

    window = "whole" if spec["device"] == "gpu" else None
    report = check_reference(SHIPPED, spec["device"], window, first=ELASTIC, on_case=heard)
    failed = [r.name for r in report.results if not r.passed]
    emit({"finished": True, "rows": len(report.results), "failed": failed, "errors": report.errors})


def child(spec: dict[str, Any]) -> None:
    """One step (:class:`Step`) in this process, from the parent's ``spec``."""
    import daliaug

    emit({"daliaug": str(Path(daliaug.__file__).parent)})
    device, clock = spec["device"], Timing(**spec["clock"])
    if spec["kind"] == "reference":
        reference_child(spec)
        return
    given = spec["data"]
    annotations = given["annotations"] and Path(given["annotations"])
    data = Data(None, Path(given["directory"]), given["repeat"], annotations)
    at = {"threads": None, "hw_decoder_load": spec["load"]}
    if spec["kind"] == "loader":
        at["decode_window"] = "roi" if spec["windows"] else "whole"
        emit(point("loader-gpu", spec["workload"], data, device, clock, **at))
    elif not spec["windows"]:  # DALI's own decoders below decode windows
        emit({"skipped": "the canary failed: DALI's window decodes not run"})
    elif spec["kind"] == "rn50":
        emit(point("dali-rn50", "b", data, device, clock, **at))
    else:
        for front in FRONTS:
            for decoder in DECODERS:
                epoch = partial(grid_epoch, front, decoder, data, device, clock.batch_size)
                emit({"front": front, "decoder": decoder, **measured(epoch, clock, device)})


# The parent.


class Probe:
    """The steps run one after another, each point kept in :attr:`result` and written at once."""

    def __init__(self, args: argparse.Namespace, base: Path, baseline: Path) -> None:
        self.args, self.base, self.baseline = args, base, baseline
        self.started = time.perf_counter()
        self.lock = threading.Lock()
        self.nvml = NvmlTrace()
        self.device = "cpu" if args.dry_run else "gpu"
        commit = baseline / "COMMIT"
        self.result: dict[str, Any] = {
            "dry_run": args.dry_run,
            "machine": machine.describe(),
            "time_plan": time_plan(),
            "budget_s": BUDGET_S,
            "baseline": {
                "path": str(baseline),
                "commit": commit.read_text().strip() if commit.is_file() else None,
            },
            "nvml": self.nvml.nvml.note or "read",
            "steps": {},
        }

    def save(self) -> None:
        with self.lock:
            self.result["seconds"] = time.perf_counter() - self.started
            replace_whole(self.base, self.result, table(self.result))

    def limit(self, step: Step) -> float:
        """The seconds ``step`` may take: its plan x :data:`SLACK` (a dry run's: fixed), never
        past the budget (x :data:`SLACK`)."""
        if self.args.dry_run:
            return DRY["reference"] if step.kind == "reference" else DRY["budget"]
        own = step.seconds if step.kind in ("canary", "reference") else step.seconds * SLACK
        left = BUDGET_S * SLACK - (time.perf_counter() - self.started)
        return min(own, left)

    def run(self, step: Step, spec: dict[str, Any]) -> None:
        """``step`` in a child process, each point it reports added to the result (with NVML's
        readings over its clock) and saved."""
        record: dict[str, Any] = {"kind": step.kind, "code": step.code, "planned_s": step.seconds}
        record["points"] = points = []
        self.result["steps"][step.name] = record
        limit = self.limit(step)
        if limit <= 0:
            record["skipped"] = "over the probe's budget"
            self.save()
            return
        paths = [str(ROOT)] + [
            p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)
        ]
        if step.code == "baseline":
            paths.insert(0, str(self.baseline))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        began = time.perf_counter()
        named = re.sub(r"[^A-Za-z0-9._-]+", "-", step.name).strip("-")
        with (self.args.out / f"{self.base.name}-{named}.log").open("w") as log:
            command = self.command(spec)
            proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
            reader = threading.Thread(target=self._hear, args=(proc, step, record, points))
            reader.start()
            try:
                record["exit"] = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                record["stopped"] = f"killed at its limit, {limit:.0f} s"
            reader.join()
        record["seconds"] = time.perf_counter() - began
        self.save()

    def command(self, spec: dict[str, Any]) -> list[str]:
        """A step's child: this module in ``-P`` mode (the working directory's ``daliaug/``
        is not on ``sys.path``, so ``PYTHONPATH`` says which is imported)."""
        return [sys.executable, "-P", "-m", "bench.gpu_probe", "--child", json.dumps(spec)]

    def _hear(self, proc: subprocess.Popen, step: Step, record: dict, points: list) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith("PROBE "):
                continue
            said = json.loads(line[len("PROBE ") :])
            if "daliaug" in said:
                record["daliaug"] = said["daliaug"]
                wanted = (self.baseline if step.code == "baseline" else ROOT) / "daliaug"
                if Path(said["daliaug"]).resolve() != wanted:
                    record["error"] = f"imported daliaug from {said['daliaug']}, not {wanted}"
                continue
            points.append(seen(said, self.nvml))
            self.save()


def spec_of(step: Step, probe: Probe, datas: dict[str, Data], windows: bool) -> dict[str, Any]:
    """What a step's child needs: its kind, device, data, clock, load and whether windows
    may be decoded (the canary passed)."""
    from daliaug.config import HW_DECODER_LOAD

    clock = timing(step.workload, True) if probe.args.dry_run else step.clock
    data = datas[step.workload]
    return {
        "kind": step.kind,
        "workload": step.workload,
        "device": probe.device,
        "clock": dataclasses.asdict(clock),
        "data": {
            "directory": str(data.directory),
            "repeat": data.repeat,
            "annotations": data.annotations and str(data.annotations),
        },
        "load": HW_DECODER_LOAD,
        "windows": windows,
    }


def _rate(run: dict[str, Any]) -> str:
    if "images_per_s" not in run:
        return run.get("error") or run.get("skipped") or "not measured"
    cpu = 1000 * run["cpu_seconds"] / run["images"]
    nvml = run.get("nvml", {})
    gpu = nvml.get("gpu_percent_mean")
    shown = (
        f"; GPU {gpu:.0f}% JPEG {nvml.get('jpeg_percent_mean', float('nan')):.0f}% (NVML means)"
        if gpu is not None
        else ""
    )
    return f"{run['images_per_s']:,.0f}/s, {cpu:.2f} CPU ms/image{shown}"


def _median(steps: dict[str, Any], prefix: str) -> float | None:
    rates = [
        p["images_per_s"]
        for name, s in steps.items()
        if name.startswith(prefix)
        for p in s["points"]
        if "images_per_s" in p
    ]
    return statistics.median(rates) if rates else None


def _reference(record: dict[str, Any]) -> str:
    cases = [p for p in record["points"] if "case" in p]
    errors = [p["case"] for p in cases if "error" in p]
    failed = [p["case"] for p in cases if p.get("passed") is False]
    elastic = [p for p in cases if p["case"] in ELASTIC]
    said = f"{len(cases)} cases in {sum(p['seconds'] for p in cases):.0f} s"
    said += (
        f", out of tolerance: {', '.join(failed) or 'none'}, errors: {', '.join(errors) or 'none'}"
    )
    said += "; elastic: " + (
        ", ".join(f"{p['case']} {'error' if 'error' in p else p['passed']}" for p in elastic)
        or "not run (DALI's CPU has no remap)"
    )
    done = any(p.get("finished") for p in record["points"])
    return said + ("; finished" if done else "; NOT finished")


def table(result: dict[str, Any]) -> str:
    """Markdown: one row per step, the grid, the A/B ratios and rn50's drift."""
    described = result["machine"]
    where = "DRY RUN: DALI's CPU operators, tiny data" if result["dry_run"] else "GPU"
    steps = result["steps"]
    lines = [
        f"# daliaug GPU probe ({where}), {described['date']}",
        "",
        f"- {described['gpu']}; {described['cpu']}, {described['cores_usable']} usable cores; "
        f"commit {described['commit']}; baseline {result['baseline']['commit']}; "
        f"{result.get('seconds', 0):.0f} s of a {result['budget_s']:.0f} s plan "
        f"({result['time_plan']['total']:.0f} s planned); NVML: {result['nvml']}",
    ]
    canary = result.get("canary")
    if canary:
        lines.append(f"- canary: {'passed' if canary['passed'] else 'FAILED'} ({canary['reason']})")
    lines += [
        "",
        "| step | code | planned s | took s | result |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for name, record in steps.items():
        if record["kind"] == "reference":
            shown = _reference(record)
        elif record["kind"] == "grid":
            shown = f"{len(record['points'])} points (below)"
        else:
            shown = "; ".join(_rate(p) for p in record["points"]) or "no point"
        shown += "".join(f"; {record[k]}" for k in ("stopped", "skipped", "error") if k in record)
        if record.get("exit"):  # a crash: negative, the signal's number
            shown += f"; exited {record['exit']} (see its log)"
        took = record.get("seconds")
        lines.append(
            f"| {name} | {record['code']} | {record['planned_s']:.0f} | "
            f"{'-' if took is None else f'{took:.0f}'} | {shown} |"
        )
    grid = [p for s in steps.values() if s["kind"] == "grid" for p in s["points"]]
    if grid:
        lines += ["", "| front end | " + " | ".join(DECODERS) + " |", "| --- | ---: | ---: |"]
        for front in FRONTS:
            cells = [
                _rate(p) for d in DECODERS for p in grid if (p["front"], p["decoder"]) == (front, d)
            ]
            lines.append(f"| {front} | " + " | ".join(cells) + " |")
    lines.append("")
    for workload in ("b", "d"):
        old, new = _median(steps, f"({workload}) baseline"), _median(steps, f"({workload}) current")
        if old and new:
            ratio = f"{new:,.0f} / {old:,.0f} = {new / old:.3f}x"
            lines.append(f"- ({workload}) current / baseline, medians: {ratio}")
    first, last = _median(steps, "rn50 first"), _median(steps, "rn50 last")
    if first and last:
        lines.append(
            f"- rn50 drift, last / first: {last:,.0f} / {first:,.0f} = {last / first:.3f}x"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_probe")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--data", type=Path, help="the data folder built by bench.gpu_suite")
    parser.add_argument("--baseline", type=Path, default=ROOT / ".gpu-baseline")
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    baseline = args.baseline.resolve()
    if not (baseline / "daliaug" / "__init__.py").is_file():
        print(f"no baseline in {baseline}: bash bench/gpu_probe.sh --prepare", file=sys.stderr)
        return 3
    plan = time_plan()
    print(f"time plan: {plan['total']:.0f} s of {BUDGET_S:.0f}", file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    probe = Probe(args, args.out / f"gpu-probe-{'dry-' if args.dry_run else ''}{stamp}", baseline)
    datas = {w: data_for(w, args.dry_run, args.data) for w in ("b", "d")}
    windows = True
    for step in PLAN:
        print(f"probe: {step.name}", file=sys.stderr, flush=True)
        if step.kind == "canary":
            probe.result["canary"] = first_canary(args.dry_run, timeout=CANARY_S)
            windows = probe.result["canary"]["passed"]
            probe.save()
            continue
        probe.run(step, spec_of(step, probe, datas, windows))
    probe.nvml.stop.set()
    probe.result["finished"] = True
    probe.save()
    print(table(probe.result))
    over = plan["total"] > BUDGET_S
    if over:
        print(f"FAIL: the probe's time plan is over {BUDGET_S:.0f} s", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
