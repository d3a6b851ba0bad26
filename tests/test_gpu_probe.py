"""``bash bench/gpu_probe.sh``: its plan, its dry run end to end on this machine (DALI's CPU
operators standing in for the GPU, tiny data), and a step stopped at its limit."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pytest

from bench import gpu_probe
from bench.gpu_probe import BUDGET_S, DECODERS, FRONTS, PLAN, Probe, Step, time_plan
from tests.helpers import gpu_dry_run

ROOT = Path(__file__).parents[1]


def test_the_plan_fits_six_minutes_and_interleaves_the_code() -> None:
    plan = time_plan()
    assert plan["total"] <= BUDGET_S
    names = [s.name for s in PLAN]
    assert names[:3] == ["canary", "reference", "rn50 first"] and names[-1] == "rn50 last"
    for workload in ("b", "d"):
        codes = [s.code for s in PLAN if s.workload == workload and s.kind == "loader"]
        assert codes == ["baseline", "current"] * 2


@pytest.mark.slow
def test_the_dry_run_runs_end_to_end(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline"
    done, out = gpu_dry_run("gpu_probe.sh", tmp_path, timeout=300, BASELINE=str(baseline))
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("gpu-probe-dry-*.json")
    result = json.loads(path.read_text())
    assert result["finished"] and result["canary"]["passed"]
    assert result["baseline"]["commit"] == "fb09615" and result["time_plan"]["total"] <= BUDGET_S
    steps = result["steps"]
    assert list(steps) == [s.name for s in PLAN if s.kind != "canary"]
    for name, step in steps.items():
        code_root = baseline if step["code"] == "baseline" else ROOT
        assert step["exit"] == 0 and step["daliaug"] == str(code_root / "daliaug"), name
        if step["kind"] != "reference":
            assert all(p["images_per_s"] > 0 for p in step["points"]), name
    cases = [p for p in steps["reference"]["points"] if "case" in p]
    assert cases and all("error" not in p and p["seconds"] >= 0 for p in cases)
    assert steps["reference"]["points"][-1]["finished"]
    assert len(steps["front-end grid"]["points"]) == len(FRONTS) * len(DECODERS)
    assert "(b) current / baseline, medians" in done.stdout
    assert done.stdout.rstrip().endswith(path.with_suffix(".md").read_text().rstrip())


STAND_IN = """
import json, os, signal, sys, time
print("PROBE " + json.dumps({"daliaug": sys.argv[1]}), flush=True)
now = time.time()
run = {"images": 8, "images_per_s": 80.0, "cpu_seconds": 0.1, "clock_unix": [now - 0.1, now]}
print("PROBE " + json.dumps(run), flush=True)
if sys.argv[2] == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(60)  # killed meanwhile
"""


def stand_in(tmp_path: Path, how: str, code: str) -> tuple[dict, str]:
    """A stand-in child that reports one point, then hangs (``how="hang"``) or crashes, run as
    step ``(b) <code> 1`` with a 1 s limit: the step's record as saved, and the table."""

    class StandIn(Probe):
        def command(self, spec: dict) -> list[str]:
            return [sys.executable, "-c", STAND_IN, str(ROOT / "daliaug"), how]

    args = argparse.Namespace(dry_run=True, out=tmp_path)
    probe = StandIn(args, tmp_path / "gpu-probe-dry-x", tmp_path / "baseline")
    probe.run(Step(f"(b) {code} 1", "loader", code=code), {})
    saved = json.loads((tmp_path / "gpu-probe-dry-x.json").read_text())
    return saved["steps"][f"(b) {code} 1"], (tmp_path / "gpu-probe-dry-x.md").read_text()


def test_a_step_stopped_at_its_limit_keeps_what_it_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed at the step's limit, its point kept in the JSON; a baseline step that imported
    the working tree's daliaug is an error."""
    monkeypatch.setitem(gpu_probe.DRY, "budget", 1.0)
    step, text = stand_in(tmp_path, "hang", "baseline")
    assert step["stopped"] == "killed at its limit, 1 s" and step["seconds"] < 30
    assert [p["images_per_s"] for p in step["points"]] == [80.0]
    assert "not" in step["error"] and str(tmp_path / "baseline") in step["error"]
    assert "| (b) baseline 1 | baseline |" in text and "killed at its limit" in text


def test_a_crashed_step_keeps_its_points_and_says_so(tmp_path: Path) -> None:
    step, text = stand_in(tmp_path, "crash", "current")
    assert step["exit"] == -11 and "error" not in step and len(step["points"]) == 1
    assert "80/s" in text and "exited -11 (see its log)" in text


def test_nvml_is_read_over_each_points_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in NVML (no GPU here): the readings inside a clock's window, their mean and
    peak."""
    from bench import worker

    class Reading:
        available, note = True, ""
        values = iter(range(10**6))

        def utilisation(self) -> float:
            return float(next(self.values) % 2 * 100)  # 0, 100, 0, ...

        def jpeg_utilisation(self) -> float | None:
            return None  # a GPU without JPEG engines

    monkeypatch.setattr(worker, "Nvml", Reading)
    trace = worker.NvmlTrace()
    began = time.time()
    time.sleep(12 * worker.NVML_PERIOD)
    seen = trace.during([began, time.time()])
    trace.stop.set()
    assert seen["readings"] >= 4 and seen["gpu_percent_peak"] == 100.0
    assert 0 < seen["gpu_percent_mean"] < 100 and "jpeg_percent_mean" not in seen
    assert trace.during([0.0, began - 1])["readings"] == 0
