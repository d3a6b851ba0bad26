"""``bash bench/gpu_suite.sh``: its dry run end to end on this machine (DALI's CPU operators
standing in for the GPU, tiny sizes), and its verdicts and table on a result made up here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.gpu_suite import (
    BUDGET_S,
    ROWS,
    SELFTEST_S,
    default_load,
    points,
    table,
    time_plan,
    verdicts,
)
from tests.helpers import gpu_dry_run

ROOT = Path(__file__).parents[1]


def run(rate: float, **extra: object) -> dict:
    return {"images_per_s": rate, "threads": 16, "hw_decoder_load": 0.99, **extra}


def made_up(jax_b: float, rn50: float, cpu_windows: int, overhead: float) -> dict:
    """A GPU result with these figures (test input, not a measurement)."""
    decoders = {"cpu": cpu_windows, "failed": 0, "cpu_fallback": cpu_windows > 0, "summary": "s"}
    row = {"defaults": run(1000.0), "sweep": [run(900.0)]}
    return {
        "dry_run": False,
        "seconds": 300.0,
        "machine": {
            "date": "d",
            "gpu": "NVIDIA H100",
            "cpu": "Xeon",
            "cores_usable": 16,
            "commit": "c",
        },
        "selftest": {"exit": 0, "report": {"checks": [{"name": "x", "passed": True}]}},
        "throughput": {
            "b": {
                "decoders": decoders,
                "loader-gpu": row,
                "jax": {"defaults": run(jax_b), "sweep": [run(jax_b * 0.9)]},
                "dali-rn50": {"sweep": [run(rn50), run(rn50 / 2)]},
                "decode-gpu-roi": {"sweep": [run(2 * rn50)]},
            },
        },
        "fit": {
            "model": "ResNet-50",
            "batch_size": 256,
            "images_per_s": {"constant": 3000.0, "make_dataset": 3000.0 * (1 - overhead)},
            "overhead": overhead,
        },
    }


def test_the_targets_are_judged_from_the_best_points() -> None:
    rows = {t: s for t, _, s in verdicts(made_up(12_000, 12_500, 0, 0.03))}
    assert rows["(b) JAX output at defaults >= 10,000/s"] == "PASS"
    (ratio,) = [t for t in rows if t.startswith("(b) JAX output best")]
    assert rows[ratio] == "PASS"  # 12,000 / 12,500 = 0.96
    assert rows["decode windows on the CPU fallback: 0"] == "PASS"
    assert rows["fit overhead <= 5%"] == "PASS"
    missed = {t: s for t, _, s in verdicts(made_up(8_000, 12_500, 5, 0.2))}
    assert set(missed.values()) == {"MISS"}


def test_the_table_ends_with_the_targets() -> None:
    text = table(made_up(12_000, 12_500, 0, 0.03))
    assert text.index("| workload | pipeline |") < text.index("| target | measured | status |")
    assert "| (b) | hand-written DALI, rn50-style" in text and "12,500 images/s" in text
    assert text.rstrip().endswith("| PASS |")
    assert "overhead 3.0%" in text


def test_the_fit_recorders_differ_only_in_keras_async_dispatch() -> None:
    """Keras 3 dispatches batch-end callbacks asynchronously only when each overriding one is
    ``async_safe``: the ``sync`` recorder turns that off (a wait per step), ``async`` not."""
    import keras
    from keras.src import backend

    from daliaug.tools.doctor import step_recorder

    dispatch = {
        safe: keras.callbacks.CallbackList([step_recorder(async_safe=safe)])._async_train
        for safe in (True, False)
    }
    assert dispatch == {True: backend.IS_THREAD_SAFE, False: False}
    recorder = step_recorder(async_safe=True)
    for batch in (2, 0, 1):  # Keras' callback threads may run them out of order
        recorder.on_train_batch_end(batch)
    assert len(recorder.times) == 3 and recorder.times[2] < recorder.times[0]  # by step


@pytest.mark.slow
def test_the_dry_run_runs_end_to_end(tmp_path: Path) -> None:
    done, out = gpu_dry_run("gpu_suite.sh", tmp_path, "--threads", "1", "--loads", "0.99")
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("gpu-suite-dry-*.json")
    result = json.loads(path.read_text())
    assert result["dry_run"] and result["machine"]["cores_usable"] >= 1
    assert result["canary"]["passed"] and result["finished"]  # the real child, on DALI's CPU
    assert result["time_plan"]["total"] <= BUDGET_S
    assert "time plan on 16 cores" in done.stderr
    assert {"keras", "jax", "nvidia-dali-cuda120"} <= set(result["machine"]["versions"])
    assert result["selftest"]["exit"] == 0 and result["selftest"]["report"]["checks"]
    for workload, names in ROWS.items():
        rows = result["throughput"][workload]
        assert rows["decoders"]["cpu"] > 0  # DALI's CPU decoder, counted from its log
        for name in names:
            runs = [rows[name].get("defaults"), *rows[name]["sweep"]]
            assert all(r is None or r["images_per_s"] > 0 for r in runs), (workload, name)
    assert result["fit"]["images_per_s"]["constant"] > 0
    for recorder in ("async", "sync"):  # both, each repeat of each
        assert all(len(v) == 2 for v in result["fit"]["recorders"][recorder]["runs"].values())
    assert done.stdout.rstrip().endswith("| DRY RUN |")  # the table comes last
    assert path.with_suffix(".md").read_text() in done.stdout


def test_the_host_cost_tool_times_each_part_and_the_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import host_cost

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    argv = ["--quick", "--repeats", "2", "--workload", "b", "c", "d", "--out", str(tmp_path)]
    base = host_cost.main(argv)
    result = json.loads(base.with_suffix(".json").read_text())
    for workload in ("b", "c", "d"):
        run = result["workloads"][workload]
        parts = run["us_per_image"]
        whole = {"total, feed thread, wall", "total, feed thread CPU", "total, pipeline thread CPU"}
        boxes = {"boxes"} if workload == "d" else set()  # detection's boxes, moved per chunk
        assert set(parts) == {"order", "parameters", "plan", "files", *boxes, *whole}
        assert all(len(v) == 2 and min(v) > 0 for v in run["samples"].values())
        assert run["warp_width"] > 0
    assert "| total, pipeline thread CPU |" in base.with_suffix(".md").read_text()


def test_runs_at_the_defaults_are_judged_as_the_doctor_judges() -> None:
    from bench.gpu_suite import bound

    cores = len(os.sched_getaffinity(0))
    # Every usable core busy for the whole window: host-bound.
    busy = {"images_per_s": 3000.0, "cpu_seconds": 3.0 * cores, "seconds": 3.0}
    assert bound(busy).startswith("host-bound")
    assert bound({"error": "x"}) is None
    idle = {"images_per_s": 3000.0, "cpu_seconds": 0.3, "seconds": 3.0}
    assert "GPU busy: unknown (no NVML)" in bound(idle)
    assert "GPU busy 40%" in bound({**idle, "nvml": {"gpu_percent_mean": 40.0}})  # NVML read
    result = made_up(12_000, 12_500, 0, 0.03)
    result["throughput"]["b"]["jax"]["bound"] = bound(busy)
    assert "- (b) daliaug JAX output (make_dataset, framework jax): host-bound" in table(result)


STUB_RUN = """
import sys, time
from bench import gpu_suite as suite
from bench.workloads import Data

def point(name, workload, data, device, clock, **at):
    time.sleep(0.2)
    return {"tool": name, **at, "images_per_s": 100.0, "threads": at["threads"]}

def fit(args, device):
    time.sleep(600)  # killed meanwhile

suite.first_canary = lambda dry_run: {"passed": True, "reason": "stub", "cached": False}
suite.selftest = lambda dry_run, out, timeout: {"exit": 0, "report": {"checks": []}}
suite.data_for = lambda *a, **k: Data(None, None, 1)
suite.decoders = lambda *a: {"cpu": 0, "failed": 0, "cpu_fallback": False, "summary": "stub"}
suite.point, suite.fit, suite.bound = point, fit, lambda run: None
sys.exit(suite.main(["--dry-run", "--out", sys.argv[1], "--threads", "1", "--loads", "0.5"]))
"""


def test_a_stopped_run_keeps_every_point_measured(tmp_path: Path) -> None:
    """A stand-in suite (points of 0.2 s, a fit that never ends) killed with SIGKILL: its
    JSON and table hold what was measured, each row's loads the ones asked for."""
    child = subprocess.Popen(
        [sys.executable, "-c", STUB_RUN, str(tmp_path)], cwd=ROOT, stderr=subprocess.PIPE
    )
    try:
        measured = []
        for _ in range(300):
            time.sleep(0.1)
            found = list(tmp_path.glob("gpu-suite-dry-*.json"))
            if found:
                speed = json.loads(found[0].read_text()).get("throughput", {})
                measured = [r for w in speed.values() for k, r in w.items() if k != "decoders"]
                if len(speed.get("b", {})) > 3:
                    break
        else:
            pytest.fail(child.stderr.read1().decode() if child.poll() is not None else "no result")
    finally:
        child.kill()
        child.wait()
    (path,) = tmp_path.glob("gpu-suite-dry-*.json")
    result = json.loads(path.read_text())
    assert result["canary"]["passed"] and not result.get("finished")
    runs = [
        run
        for rows in result["throughput"].values()
        for name, row in rows.items()
        if name != "decoders"
        for run in [row.get("defaults"), row.get("whole"), *row["sweep"]]
        if run
    ]
    assert len(runs) >= 3 and {r["hw_decoder_load"] for r in runs} == {0.5}
    assert measured  # read while it ran
    text = path.with_suffix(".md").read_text()
    assert "so far (stopped, or still running)" in text and "| (b) |" in text


def test_the_gpu_runs_time_plan_fits_and_counts_every_point() -> None:
    plan = time_plan(["b", "c", "d"], threads=1, loads=2, selftest_s=SELFTEST_S)
    assert plan["point_count"] == 20  # (b): 4 + 3 + 2 + 2, (c): 3 + 3 + 2, (d): 1
    assert plan["total"] <= BUDGET_S
    assert time_plan(["b", "c"], threads=1, loads=2, selftest_s=SELFTEST_S)["point_count"] == 19
    assert time_plan(["b", "c", "d"], threads=2, loads=2, selftest_s=SELFTEST_S)["total"] > BUDGET_S
    assert points("d", "loader-gpu", threads=2, loads=3) == 1  # at the defaults, no sweep


def test_a_failed_decoder_count_is_never_a_pass() -> None:
    result = made_up(12_000, 12_500, 0, 0.03)
    result["throughput"]["d"] = {
        "decoders": {"error": "E", "cpu_fallback": False, "summary": "not counted (E)"},
        "loader-gpu": {"defaults": run(800.0), "sweep": []},
    }
    rows = {t: s for t, _, s in verdicts(result)}
    assert rows["decode windows on the CPU fallback: 0"] == "UNKNOWN"
    text = table(result)
    assert "- (d) decoders: not counted (E)" in text and "| (d) | daliaug DALI-GPU" in text


def test_the_detection_data_needs_no_scikit_learn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.gpu_suite import data_for, suite_workload

    monkeypatch.setitem(sys.modules, "sklearn", None)  # not installed in CI
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    data = data_for("d", True, tmp_path)
    samples = data.samples()
    assert len(samples) == 16 * 8 and samples.has_boxes
    config = suite_workload("d").daliaug_config(data)
    assert config.source.type == "coco" and config.source.images == data.directory
    assert config.image_size == (640, 640) and config.batch_size == 32


def test_the_defaults_rows_take_a_load_given() -> None:
    assert default_load([0.65, 0.99]) == 0.99 and default_load([0.3]) == 0.3
