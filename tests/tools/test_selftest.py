"""The self-test's CPU side: what it names as missing for the GPU path (stand-in hosts), its
table, ``--json`` and exit code 4 (a stand-in report), the epoch comparison (DALI on the CPU
against the TensorFlow backend, the GPU's stand-in here), the per-epoch costs and the memory
row. The whole command on this machine: tests/tools/test_cli.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from daliaug.cli import main
from daliaug.tools import selftest
from daliaug.tools.selftest import Check, Host, Report, missing
from tests.test_install import pins

GPU_HOST = Host(
    driver=True,
    gpu="NVIDIA H100 80GB HBM3, driver 570.1",
    dali="2.4.0",
    dali_gpus=1,
    tensorflow="2.21.0",
    tf_cuda=True,
    tf_gpus=1,
    plugin=None,
)


def test_a_complete_gpu_host_misses_nothing() -> None:
    assert missing(GPU_HOST) == []


@pytest.mark.parametrize(
    ("change", "what", "fix"),
    [
        ({"driver": False, "gpu": None, "dali_gpus": 0, "tf_gpus": 0}, "CUDA driver", "nvidia-smi"),
        ({"dali_gpus": 0}, "a GPU DALI can use", "CUDA_VISIBLE_DEVICES"),
        ({"dali": None, "dali_gpus": 0}, "DALI is not installed", "nvidia-dali-cuda120==2.4"),
        ({"tf_gpus": 0}, "TensorFlow's GPU build (it sees no GPU)", "tensorflow[and-cuda]"),
        ({"tf_cuda": False, "tf_gpus": 0}, "TensorFlow's GPU build (not", "tensorflow[and-cuda]"),
        ({"tensorflow": None, "tf_gpus": 0}, "TensorFlow is not installed", "tensorflow[and-cuda]"),
        (
            {"plugin": "ImportError: libdali_tf_current.so: cannot open"},
            "DALI's TensorFlow plugin (ImportError",
            "CUDA_HOME=$SITE/nvidia/cuda_runtime",
        ),
    ],
)
def test_each_missing_piece_is_named_with_its_fix(change: dict, what: str, fix: str) -> None:
    (found,) = missing(dataclasses.replace(GPU_HOST, **change))
    assert found.what.startswith(what) and fix in found.fix


def test_the_fixes_install_what_pyproject_pins() -> None:
    pinned = pins()
    assert f"'tensorflow[and-cuda]{pinned['tensorflow']}'" in selftest.TF_FIX
    assert f"'nvidia-dali-cuda120{pinned['nvidia-dali-cuda120']}'" in selftest.DALI_FIX
    plugin = "nvidia-dali-tf-plugin-cuda120"
    assert f"'{plugin}{pinned[plugin]}'" in selftest.PLUGIN_FIX


def stand_in_report(host: Host) -> Report:
    report = Report("cpu", host)
    report.checks += [
        Check("DALI", True, "2.4.0, sees 0 GPU(s)"),
        Check("one epoch, gpu vs cpu", None, "skipped: no GPU"),
        Check("images/s", True, "make_dataset: 1,000 images/s", {"make_dataset": 1000.0}),
    ]
    return report


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, report: Report, *args: str
) -> tuple[int, str, str]:
    from daliaug.cli.common import console

    monkeypatch.setattr(selftest, "selftest", lambda steps, progress: report)
    monkeypatch.setattr(console, "width", 200)  # made at import: COLUMNS read then, or never
    code = main(["selftest", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_and_the_table_last(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    report = stand_in_report(GPU_HOST)
    code, out, err = run_cli(monkeypatch, capsys, report, "--json")
    assert code == 0
    found = json.loads(out)
    assert found["host"] == dataclasses.asdict(GPU_HOST) and found["missing"] == []
    assert [c["name"] for c in found["checks"]] == [c.name for c in report.checks]
    assert found["checks"][2]["values"] == {"make_dataset": 1000.0}
    assert found["growth_policy"]["found"] in ("set", "user", "no driver", "too late")
    rows = [line for line in err.splitlines() if "│" in line]
    assert [r.split("│")[1].strip() for r in rows] == [c.name for c in report.checks]
    assert err.rstrip().endswith("passed")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"driver": False, "gpu": None, "dali_gpus": 0, "tf_gpus": 0}, ["CUDA driver"]),
        ({"tf_gpus": 0}, ["TensorFlow's GPU build", "pip install 'tensorflow[and-cuda]"]),
        ({"plugin": "ImportError: no plugin"}, ["DALI's TensorFlow plugin", "CUDA_HOME="]),
    ],
)
def test_require_gpu_exits_4_naming_what_is_missing_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys, change: dict, named: list[str]
) -> None:
    report = stand_in_report(dataclasses.replace(GPU_HOST, **change))
    code, _, err = run_cli(monkeypatch, capsys, report, "--require-gpu")
    assert code == 4
    message = " ".join(err[err.index("selftest --require-gpu") :].split())
    assert all(name in message for name in named), message
    assert err.index("images/s") < err.index("selftest --require-gpu")  # the table first


def test_require_gpu_passes_on_a_complete_gpu_host(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    report = dataclasses.replace(stand_in_report(GPU_HOST), device="gpu")
    code, _, err = run_cli(monkeypatch, capsys, report, "--require-gpu")
    assert code == 0 and "--require-gpu" not in err


def test_require_gpu_names_tensorflows_absence_as_a_skip_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The lent GPU host has DALI and JAX, no TensorFlow: its checks through make_dataset are
    skipped by name, and only --require-tensorflow makes that a failure."""
    host = dataclasses.replace(GPU_HOST, tensorflow=None, tf_cuda=False, tf_gpus=0, plugin="x")
    report = dataclasses.replace(stand_in_report(host), device="gpu")
    selftest._environment(report)
    assert [m.tensorflow for m in report.missing] == [True]
    code, _, err = run_cli(monkeypatch, capsys, report, "--require-gpu")
    assert code == 0 and "--require-gpu" not in err
    assert "checks through make_dataset skipped" in " ".join(err.split())
    code, _, err = run_cli(monkeypatch, capsys, report, "--require-gpu", "--require-tensorflow")
    assert code == 4 and "TensorFlow is not installed" in " ".join(err.split())


@pytest.mark.parametrize("passed", [True, False])
def test_the_canary_row_says_how_windows_are_decoded(
    monkeypatch: pytest.MonkeyPatch, passed: bool
) -> None:
    from daliaug.engines.dali import canary

    outcome = canary.Canary(passed, "ran" if passed else "killed by SIGSEGV", cached=True)
    monkeypatch.setattr(canary, "canary", lambda device_id: outcome)
    row = selftest.canary_check()
    assert row.passed is (True if passed else None)  # a failed canary is worked around
    assert row.detail.endswith("(cached)" if passed else "decodes whole images on this GPU")


@pytest.mark.slow
def test_the_epoch_comparison_sees_the_same_samples_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DALI on the CPU against the TensorFlow backend (on a GPU host: DALI on the GPU against
    the CPU path), then the second engine's order disturbed."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    config = selftest.numbered_config(tmp_path, batch_size=32)
    check = selftest.compare_epochs(config, "cpu", "tf")
    assert check.passed, check.detail
    assert check.values["samples"] == 200 and {"decoder", "pipeline"} <= set(check.values)
    assert "200 samples in the same order" in check.detail
    epoch = selftest._epoch

    def reversed_second(dataset) -> tuple[np.ndarray, np.ndarray]:
        labels, images = epoch(dataset)
        reversed_second.calls += 1
        return (labels[::-1], images[::-1]) if reversed_second.calls == 2 else (labels, images)

    reversed_second.calls = 0
    monkeypatch.setattr(selftest, "_epoch", reversed_second)
    check = selftest.compare_epochs(config, "cpu", "tf")
    assert check.passed is False and "samples differ from position 0" in check.detail


def test_epoch_costs_time_each_epochs_first_batch() -> None:
    import tensorflow as tf

    dataset = tf.data.Dataset.range(40).batch(8)
    check = selftest.epoch_costs(dataset, rate=1000.0, on_gpu=False)
    values = check.values
    assert check.name == "5 epochs, one after another" and check.passed
    assert len(values["first_batch_extra_s"]) == len(values["batch_s"]) == 5
    assert values["memory_bytes"] == [None] * 5 and values["memory_grows"] is None
    assert 0 <= values["share_of_reference_epoch"] < 1 and "budget" not in check.detail


def test_epoch_costs_flag_memory_that_grows_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorflow as tf

    memory = iter(2**30 + i * 2**27 for i in range(5))  # 128 MiB more after each epoch
    monkeypatch.setattr(selftest, "_device_memory", lambda: next(memory))
    check = selftest.epoch_costs(tf.data.Dataset.range(16).batch(8), 1000.0, on_gpu=True)
    assert check.values["memory_grows"] and not check.values["within_budget"]
    assert "over; please report it" in check.detail and "1,024 -> 1,152" in check.detail


@pytest.mark.parametrize(
    ("growth", "value", "passed", "detail"),
    [
        ("set", "true", True, "memory growth on before TensorFlow started"),
        ("user", "false", True, "your policy: TF_FORCE_GPU_ALLOW_GROWTH=false"),
        ("no driver", None, None, "no CUDA driver"),
    ],
)
def test_the_memory_row_says_whose_policy_holds(
    monkeypatch: pytest.MonkeyPatch, growth: str, value: str | None, passed, detail: str
) -> None:
    monkeypatch.setattr(selftest, "GROWTH", growth)
    if value is None:
        monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    else:
        monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", value)
    check = selftest.memory_policy_check([])
    assert check.passed is passed and detail in check.detail
    warned = selftest.memory_policy_check(["TensorFlow's runtime started before daliaug"])
    assert warned.passed is False and "BackendWarning" in warned.detail
