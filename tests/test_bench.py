"""The benchmark suite and ``daliaug doctor`` run end to end on tiny data (no timing checks).

Module level imports nothing heavy: the GPU host runs ``pytest -m gpu`` on this file without
TensorFlow.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
TENSORFLOW_BLOCKED = "raise ImportError('tensorflow is blocked in this test')\n"


def bench(tmp_path: Path, *args: str, env: dict | None = None) -> dict:
    """Run ``python -m bench.run --quick ARGS`` and return its JSON result."""
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "DALIAUG_CACHE": str(tmp_path / "cache"), **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (path,) = out.glob("*.json")
    assert path.with_suffix(".md").is_file() and not (out / "LATEST.md").exists()
    return json.loads(path.read_text())


def run_module(tmp_path: Path, module: str, *args: str) -> None:
    """``python -m MODULE ARGS`` with its own ``DALIAUG_CACHE``, asserted to succeed."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "DALIAUG_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr[-3000:]


def case(result: dict, workload: str, tool: str, group: str = "main") -> dict:
    cases = result["workloads"][workload]["cases"]
    return next(c for c in cases if c["tool"] == tool and c["group"] == group)


def check_measured(c: dict, repeats: int) -> None:
    assert c["status"] == "ok", c.get("reason")
    assert len(c["samples"]) == repeats
    for sample in c["samples"]:
        assert sample["images"] > 0 and sample["images_per_s"] > 0 and sample["cpu_seconds"] > 0
    assert c["images_per_s"]["q1"] <= c["images_per_s"]["median"] <= c["images_per_s"]["q3"]
    assert c["peak_rss_mb"] > 0


@pytest.mark.slow
def test_gpu_suite_runs_without_tensorflow(tmp_path: Path) -> None:
    """The GPU half runs DALI only: here its CPU twins run, the GPU tools say why not."""
    blocked = tmp_path / "blocked" / "tensorflow"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(TENSORFLOW_BLOCKED)
    path = os.pathsep.join([str(blocked.parent), str(ROOT)])
    result = bench(
        tmp_path,
        *("--suite", "gpu", "--repeats", "2", "--scaling-repeats", "1", "--threads", "1"),
        env={"PYTHONPATH": path},
    )
    assert result["suite"] == "gpu" and {"cpu", "cores", "versions"} <= set(result["machine"])
    check_measured(case(result, "a", "loader-cpu"), 2)
    check_measured(case(result, "b", "decode-cpu"), 2)
    check_measured(case(result, "b", "loader-cpu", "scaling"), 1)
    stages = [s["stage"] for s in result["stages"]["workloads"]["b"]]
    assert stages[0] == "read files" and any("daliaug's finish" in s for s in stages)
    assert any(s.startswith("(compare) fn.color_twist") for s in stages)
    gpu = case(result, "b", "loader-gpu")
    if gpu["status"] != "ok":
        assert gpu["status"] == "unavailable" and "GPU" in gpu["reason"]


@pytest.mark.gpu
def test_gpu_suite_measures_the_gpu(tmp_path: Path) -> None:
    result = bench(tmp_path, "--suite", "gpu", "--repeats", "1", "--scaling-repeats", "0")
    check_measured(case(result, "b", "loader-gpu"), 1)
    check_measured(case(result, "b", "decode-gpu"), 1)


def test_an_epoch_shorter_than_the_warm_up_is_named_and_gpu_epochs_are_longer(
    tmp_path: Path,
) -> None:
    """On an H200 DALI's decoder alone finished an epoch inside the warm-up, and the bench
    said only ``StopIteration``: now it says what to change, and the GPU suites' epochs are
    longer."""
    from bench.run import GPU_EPOCH_SCALE, SUITES
    from bench.worker import measure
    from bench.workloads import prepare

    with pytest.raises(RuntimeError, match="epoch ended during the warm-up"):
        measure(lambda: (n for n in (8, 8)), 5, 0.0, 1.0, 10**6)
    assert SUITES["gpu"].epoch_scale == SUITES["gpu-tf"].epoch_scale == GPU_EPOCH_SCALE > 1
    assert SUITES["cpu"].epoch_scale == 1
    cpu, gpu = (prepare("b", True, tmp_path, scale=s) for s in (1, GPU_EPOCH_SCALE))
    assert gpu.repeat == GPU_EPOCH_SCALE * cpu.repeat
    assert len(gpu.samples()) == GPU_EPOCH_SCALE * len(cpu.samples())


@pytest.mark.slow
def test_cpu_suite_and_targets(tmp_path: Path) -> None:
    """Workload (a)'s own tools (daliaug's default path, ImageDataGenerator, Keras' layers in
    ``tf.data``), the OpenCV engine's NumPy loader and the report's judgement; DALI-CPU and the
    TF engine run in the (c) test, the scaling round (a second worker per tool at another
    thread count) in test_gpu_suite_runs_without_tensorflow."""
    tools = ("daliaug", "idg", "tfdata-layers", "opencv-numpy")
    result = bench(
        tmp_path,
        *("--workload", "a", "--tools", *tools),
        *("--repeats", "1", "--scaling-repeats", "0", "--no-stages"),
    )
    for tool in tools:
        check_measured(case(result, "a", tool), 1)
    assert {c["group"] for c in result["workloads"]["a"]["cases"]} == {"main"}
    from bench.report import QUICK, evaluate, summary

    verdicts = {row["target"]: row["status"] for row in evaluate(result)}
    assert verdicts["default vs ImageDataGenerator, 1 process"] == QUICK  # a smoke test judges none
    assert verdicts["default vs hand-tuned tf.data"] == "NOT MEASURED"
    assert not re.search(r"\b(PASS|MISS)\b", summary(result))
    full = {**result, "quick": False}
    assert {row["status"] for row in evaluate(full) if "ratio" in row} <= {"PASS", "MISS"}
    check_reports_a_clock_too_coarse(result)


def check_reports_a_clock_too_coarse(result: dict) -> None:
    """A CPU time that reads as zero (a window shorter than a clock tick) gives a ``nan`` ratio
    in the report, never a crash (CI once measured daliaug at 97,000 images/s for 20 ms)."""
    from bench.report import evaluate, markdown

    for c in result["workloads"]["a"]["cases"]:
        if "cpu_ms_per_image" in c:
            c["cpu_ms_per_image"]["median"] = 0.0
    rows = [row for row in evaluate(result) if "cpu_ratio" in row]
    assert rows and all(row["cpu_ratio"] != row["cpu_ratio"] for row in rows)  # NaN
    assert "nan" in markdown(result, {})


@pytest.mark.slow
def test_tf_stage_profile() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.tf_stages", "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout)["workloads"]["b"]
    assert [r["stage"] for r in rows][:1] == ["read file"]
    assert all(r["cpu_ms_per_image"] > 0 for r in rows)


@pytest.mark.slow
def test_backend_choice_per_source_kind(tmp_path: Path) -> None:
    out = tmp_path / "results"
    kinds = ("--kinds", "arrays", "segmentation", "--outputs", "numpy", "--out", str(out))
    run_module(tmp_path, "bench.choose", "--quick", "--repeats", "2", *kinds)
    (report,) = out.glob("choose-quick-*.md")
    table = report.read_text()
    assert "| arrays |" in table and "| segmentation |" in table
    assert "| source kind | NumPy DALI-CPU | NumPy OpenCV | fastest, NumPy |" in table


def test_equivalent_parameters_come_from_the_configs() -> None:
    from bench.workloads import WORKLOADS

    a, b = WORKLOADS["a"].equivalent, WORKLOADS["b"].equivalent
    assert (a.rotation, a.shift, a.flip, a.fill, a.size) == (
        45,
        (0.1, 0.1),
        True,
        "nearest",
        (32, 32),
    )
    assert a.std == (255.0,) * 3 and a.crop_scale is None
    assert b.crop_scale == (0.08, 1.0) and b.size == (224, 224) and b.brightness == 0.4
    assert b.zoom[0] == pytest.approx(0.08**0.5) and a.batch_size == b.batch_size == 128


@pytest.mark.slow
def test_doctor_reports_the_bound_and_a_timeline(demo_dir: Path, tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "daliaug.cli",
            "doctor",
            str(ROOT / "pipelines" / "demo.yaml"),
            "--data",
            str(demo_dir),
            "--steps",
            "2",
            "--warmup",
            "1",
            "--timeline",
            str(timeline),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bounds training" in result.stderr and "(iii) model.fit" in result.stderr
    assert timeline.stat().st_size > 0


@pytest.mark.slow
def test_gpu_tf_suite_runs_here_and_says_why_its_gpu_tools_cannot(tmp_path: Path) -> None:
    """What users run on a GPU host (make_dataset through the plugin, alone and feeding
    ResNet-50, the decoder alone with the pipeline's windows): unavailable here, each saying
    why; the tuned tf.data pipeline on the same host is measured."""
    result = bench(
        tmp_path,
        *("--suite", "gpu-tf", "--workload", "b", "--repeats", "1", "--scaling-repeats", "0"),
        "--no-stages",  # the DALI stage profile: test_gpu_suite_runs_without_tensorflow
    )
    check_measured(case(result, "b", "tfdata-tuned"), 1)
    for tool in ("dali-gpu", "dali-gpu-fit", "decode-gpu-roi", "decode-gpu", "loader-gpu"):
        found = case(result, "b", tool)
        assert found["status"] == "unavailable" and "GPU" in found["reason"], found


def test_the_decoder_alone_decodes_the_pipelines_own_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``decode-gpu-roi`` on DALI's CPU decoder (its GPU twin differs only in the device):
    each sample's decoded size is the decode window the same epoch gives it in make_dataset,
    epoch after epoch."""
    import numpy as np
    from nvidia.dali.pipeline import Pipeline

    from bench.tools import gpu_tools
    from bench.workloads import WORKLOADS, prepare
    from daliaug.engines.dali.pipeline import RESIZES
    from daliaug.engines.feed import EpochFeed
    from tests.helpers import spec_of

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    data = prepare("b", quick=True)
    shapes = []
    run = Pipeline.run

    def recorded(pipe: Pipeline, *args, **kwargs) -> tuple:
        outputs = run(pipe, *args, **kwargs)
        shapes.extend(tuple(s[:2]) for s in outputs[0].shape())
        return outputs

    monkeypatch.setattr(Pipeline, "run", recorded)
    epoch = gpu_tools.decode_roi(WORKLOADS["b"], data, 1, "cpu")
    sizes = [size for _ in range(2) for size in epoch()]
    config = WORKLOADS["b"].daliaug_config(data, num_threads=1)
    feed = EpochFeed(spec_of(config), data.samples(), resizes=RESIZES)
    windows = [
        feed.layout.unpack(batch["warp"], np.reshape, batched=True)["crop_shape"]
        for e in range(2)
        for batch in feed.batches(e, ("warp",))
    ]
    assert sizes == [len(w) for w in windows]
    expected = [(int(h), int(w)) for batch in windows for w, h in batch.reshape(-1, 2)]
    assert shapes == expected


@pytest.mark.slow
def test_the_hw_decoder_load_sweep_writes_every_pair(tmp_path: Path) -> None:
    """On DALI's CPU decoder here (the load only matters to the GPU's hardware decoder)."""
    from bench import gpu_sweep

    os.environ["DALIAUG_CACHE"] = str(tmp_path / "cache")
    try:
        base = gpu_sweep.main(
            [
                *("--device", "cpu", "--loads", "0.65", "0.99", "--threads", "1", "2"),
                *("--tools", "decode-gpu-roi", "--quick", "--out", str(tmp_path)),
            ]
        )
    finally:
        del os.environ["DALIAUG_CACHE"]
    runs = json.loads(base.with_suffix(".json").read_text())["runs"]
    pairs = [(r["hw_decoder_load"], r["threads"]) for r in runs]
    assert pairs == [(0.65, 1), (0.65, 2), (0.99, 1), (0.99, 2)]
    assert all(r["images_per_s"] > 0 for r in runs)
    table = base.with_suffix(".md").read_text()
    assert "| 0.65 |" in table and "| 0.99 |" in table and "2 threads" in table


def test_gpu_tools_wait_for_the_gpu_before_each_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import worker

    events = []
    monkeypatch.setattr(worker, "sync", lambda device: events.append(f"sync {device}"))

    def epoch():
        for _ in range(6):
            events.append("batch")
            yield 4

    sample = worker.measure(epoch, 2, 0.0, 10.0, 12, device="gpu")
    assert events == ["batch", "batch", "sync gpu", "batch", "batch", "batch", "sync gpu"]
    assert sample["images"] == 12


def test_the_training_step_tool_trains_on_each_batch() -> None:
    """The ResNet-50 tool's loop, with a tiny model on the CPU."""
    import keras
    import numpy as np
    import tensorflow as tf

    from bench.tools.gpu_tools import training_epoch

    x = np.random.default_rng(0).random((12, 8, 8, 3), np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, np.arange(12) % 2)).batch(5)
    model = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [w.copy() for w in model.get_weights()]
    assert list(training_epoch(dataset, model)()) == [5, 5, 2]
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))


def test_the_gpu_suite_script_runs_what_users_run() -> None:
    script, env = ((ROOT / "bench" / name).read_text() for name in ("gpu_suite.sh", "gpu_env.sh"))
    for text in (script, env):
        assert subprocess.run(["bash", "-n", "-c", text], timeout=600).returncode == 0
    assert "-m bench.gpu_suite" in script and "source bench/gpu_env.sh" in script
    assert "KERAS_BACKEND=jax" in env
    driver = (ROOT / "bench" / "gpu_suite.py").read_text()
    assert '"selftest", "--require-gpu", "--json"' in driver
    from bench.run import SUITES
    from bench.tools import TOOLS

    for tool in (*SUITES["gpu-tf"].tools, *SUITES["gpu-tf"].scaling):
        assert "b" in TOOLS[tool].workloads, tool


def test_demo_seeds_reads_the_demos_epoch_lines() -> None:
    from bench.demo_seeds import epochs_of

    line = "epoch 7/30: loss 0.812, accuracy 71.5%, val_accuracy 66.0%, 480 images/s"
    assert epochs_of(["pipeline alone: 1,259 images/s", line]) == [
        {"epoch": 7, "loss": 0.812, "accuracy": 0.715, "val_accuracy": 0.66}
    ]


@pytest.mark.slow
def test_workload_c_runs_every_cpu_tool(tmp_path: Path) -> None:
    """Workload (c) (RandAugment, MixUp): daliaug's paths, Keras 3 layers in tf.data and the
    hand-written DALI ``auto_aug`` pipeline all build and yield batches; its targets are
    judged (not in a smoke test)."""
    tools = ("daliaug", "dali-cpu", "daliaug-tf", "keras-randaug", "dali-autoaug-cpu")
    result = bench(
        tmp_path,
        *("--workload", "c", "--tools", *tools),
        *("--repeats", "1", "--scaling-repeats", "0", "--no-stages"),
    )
    for tool in tools:
        check_measured(case(result, "c", tool), 1)
    from bench.report import QUICK, evaluate

    verdicts = {row["target"]: row["status"] for row in evaluate(result)}
    assert verdicts["default vs tf.data + Keras 3 layers"] == QUICK
    assert verdicts["daliaug DALI-CPU vs hand-written DALI auto_aug"] == QUICK


@pytest.mark.slow
def test_keras_io_mixup_row_runs_both_pipelines_on_the_same_arrays(tmp_path: Path) -> None:
    """keras-io's own tf.data MixUp and daliaug's default path: the same batches' shapes and
    soft labels, and one interleaved run written as Markdown and JSON."""
    from bench.keras_io_mixup import BATCH, arrays, daliaug_default, keras_io

    x, y = arrays()
    for dataset in (keras_io(x, y), daliaug_default(x, y)):
        images, labels = next(iter(dataset))
        assert images.shape == (BATCH, 28, 28, 1) and labels.shape == (BATCH, 10)
        assert abs(float(images.numpy().max()) - 1.0) < 0.05  # [0, 1], as keras-io's
        assert abs(float(labels.numpy().sum(1).mean()) - 1.0) < 1e-5
    args = ["--repeats", "1", "--seconds", "0.2", "--out", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, "-m", "bench.keras_io_mixup", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (report,) = tmp_path.glob("keras-io-mixup-*.md")
    assert "keras-io tf.data MixUp" in report.read_text()


@pytest.mark.slow
def test_pixel_op_costs_are_measured_on_both_cpu_engines(tmp_path: Path) -> None:
    from bench.pixel_ops import main

    main(["--quick", "--out", str(tmp_path)])
    (path,) = tmp_path.glob("pixel-ops-*.json")
    result = json.loads(path.read_text())
    assert set(result["dali_cpu"]) == set(result["tf_xla"])
    assert {"recolour", "perspective, reflect", "equalize", "where 30%"} <= set(result["dali_cpu"])
    (report,) = tmp_path.glob("pixel-ops-*.md")
    assert "| equalize |" in report.read_text()


def test_graph_ops_counts_both_gpu_graphs_without_a_gpu(tmp_path: Path) -> None:
    """bench.graph_ops defines daliaug's GPU graph and DALI's own rn50-style one for (b) and
    counts each device's operators: daliaug's CPU side at most 6, one decoder each."""
    from bench import graph_ops

    base = graph_ops.main(["--workload", "b", "--out", str(tmp_path)])
    found = json.loads(base.with_suffix(".json").read_text())["workloads"]["b"]
    assert found["daliaug"]["cpu"] <= 6 and found["daliaug"]["mixed"] == 1
    assert found["theirs"]["mixed"] == 1 and found["theirs"]["cpu"] >= 2
    assert "| b | daliaug (build_pipeline) |" in base.with_suffix(".md").read_text()


@pytest.mark.slow
def test_start_times_every_tool_and_check_at_a_small_tree(tmp_path: Path) -> None:
    """``bench.start`` over 300 files: every tool's and check's first and later starts run
    (the background check let finish after its first start), DALI's and daliaug's COCO
    readers over the COCO file written beside the tree, daliaug's YOLO source over the
    label files made beside it and its VOC source over the XML files made beside it too, the
    record and tables written."""
    out = str(tmp_path)
    args = ("--files", "300", "--repeats", "1", "--coco", "--yolo", "--voc", "--out", out)
    run_module(tmp_path, "bench.start", *args)
    (record,) = tmp_path.glob("start-*.json")
    (row,) = json.loads(record.read_text())["rows"]
    assert row["files"] == 300 and row["check_finished"]
    tools = ("scandir", "dali", "tf.data", "daliaug full", "daliaug background", "dali coco")
    boxes = ("daliaug coco background", "daliaug yolo background", "daliaug voc background")
    for tool in (*tools, "yolo labels", *boxes):
        assert row[tool]["first"] > 0 and row[tool]["later"] > 0, tool
    assert row["memory"]["background"]["samples"] == 300
    text = record.with_suffix(".md").read_text()
    assert "| 300 |" in text and "## COCO" in text and "## YOLO" in text and "## Pascal VOC" in text


@pytest.mark.slow
def test_start_over_shards_on_s3_counts_what_each_start_asks(tmp_path: Path) -> None:
    """``bench.start_shards`` at a tiny size: every start runs, and with listing files a first
    start GETs only its folder's listing file, no shard."""
    size = ("--shards", "3", "--per-shard", "4", "--repeats", "1")
    run_module(tmp_path, "bench.start_shards", *size, "--out", str(tmp_path / "out"))
    (record,) = (tmp_path / "out").glob("start-shards-*.json")
    (row,) = json.loads(record.read_text())["rows"]
    whole, files = row["shards read"], row["listing files"]
    assert whole["first_whole_bytes"] >= 3 * row["shard_bytes"]  # each shard read whole
    assert files["first_whole_gets"] == 1  # the folder's listing file, nothing else whole
    assert 0 < files["first_whole_bytes"] < row["shard_bytes"]
    assert files["later_whole_gets"] == whole["later_whole_gets"] == 0  # this host's cache
    assert files["first_range_gets"] == whole["first_range_gets"] == 12  # the first batch
    assert "| 3 (12) |" in record.with_suffix(".md").read_text()


@pytest.mark.slow
def test_the_gpu_reader_checkpoint_trial_runs_dry(tmp_path: Path) -> None:
    """``bench.gpu_reader_checkpoint``'s two halves, DALI on the CPU standing in for the GPU:
    the TFRecords prepared, every restore giving the same batches (DALI's reader, and DALI's
    JAX iterator resumed mid-epoch), the record written."""
    records = tmp_path / "records"
    run_module(tmp_path, "bench.gpu_reader_checkpoint", "--prepare", str(records))
    out = tmp_path / "out"
    run_module(
        tmp_path,
        "bench.gpu_reader_checkpoint",
        "--dry-run",
        "--data",
        str(records),
        "--out",
        str(out),
    )
    (record,) = out.glob("gpu-reader-checkpoint-dry-*.json")
    found = json.loads(record.read_text())
    assert found["passed"] and found["batches_per_epoch"] == 6
    assert [c["k"] for c in found["cases"]] == [1, 3, 6, 8, 11]
    assert found["iterators_passed"], found["iterator_cases"]
    assert [c["k"] for c in found["iterator_cases"]] == [1, 3]
