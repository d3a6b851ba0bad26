"""The daliaug command line, run as a user would: in a subprocess, except the segmentation
demo, which runs the command's own ``run`` in the test's process (a second TensorFlow and DALI
start saved)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import daliaug_runs

ROOT = Path(__file__).parents[2]


def daliaug(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "daliaug.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_validate_prints_the_normalized_config() -> None:
    result = daliaug("validate", ROOT / "pipelines" / "imagenet_train.yaml")
    assert result.returncode == 0, result.stderr
    assert "random_resized_crop" in result.stdout and "size:\n  - 224" in result.stdout


@pytest.mark.slow
def test_validate_takes_a_shipped_configs_name() -> None:
    result = daliaug("validate", "imagenet_train")
    assert result.returncode == 0, result.stderr
    assert result.stdout == daliaug("validate", ROOT / "pipelines" / "imagenet_train.yaml").stdout
    unknown = daliaug("validate", "imagenet")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    names = "cifar_train, demo, imagenet_randaug_mix, imagenet_train, imagenet_val, segmentation"
    assert f"shipped: {names}" in unknown.stderr


@pytest.mark.slow
def test_validate_bad_config_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "source: {type: directory, path: x}\nimage_size: 32\n"
        "transforms:\n  - {type: rotation, angle: [30, 10]}\n"
    )
    result = daliaug("validate", bad)
    assert result.returncode == 2
    assert "transforms.0.rotation.angle" in result.stderr and "[30.0, 10.0]" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_version_and_help_give_whole_summaries() -> None:
    from daliaug import __version__
    from daliaug.cli import COMMANDS, summary

    version = daliaug("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"daliaug {__version__}"
    shown = daliaug("--help", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    for name in COMMANDS:
        doc = importlib.import_module(f"daliaug.cli.{name}").__doc__
        whole = summary(doc)
        assert whole.endswith("."), (name, whole)  # a sentence, not a line cut short
        assert f"{name} {whole}" in text, name


@pytest.mark.slow
def test_doctor_preview_and_check_on_the_demo_config_use_the_demo_data(tmp_path: Path) -> None:
    """The five commands run in one process (each through ``daliaug.cli.main``, as the script
    runs it): the demo data is written once and every command still finds it by itself."""
    env = {"DALIAUG_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    demo = ROOT / "pipelines" / "demo.yaml"
    out = tmp_path / "grid.png"
    copy = tmp_path / "mine.yaml"  # an unchanged copy is the demo config too; an edited one not
    copy.write_text(demo.read_text())
    edited = tmp_path / "edited.yaml"
    edited.write_text(demo.read_text().replace("\nseed: 0\n", "\nseed: 1\n"))
    preview, check, doctor, checked_copy, checked_edit = daliaug_runs(
        ["preview", "--out", out, "--count", "4"],  # the config left out
        ["check", demo],
        ["doctor", demo, "--steps", "1", "--warmup", "1"],
        ["check", copy],
        ["check", edited],
        env=env,
    )
    assert preview[0] == 0, preview[1]
    assert out.stat().st_size > 10_000 and (tmp_path / "cache" / "demo" / "train").is_dir()
    assert check[0] == 0, check[1]
    assert re.search(r"│\s+800 │", check[1]) and "every file decodes" in check[1]
    assert doctor[0] == 0, doctor[1]
    assert "bounds training" in doctor[1]
    assert checked_copy[0] == 0, checked_copy[1]
    assert checked_edit[0] == 3 and "data/train" in checked_edit[1], checked_edit[1]


@pytest.mark.slow
def test_preview_writes_a_grid(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "grid.png"
    result = daliaug(
        "preview",
        ROOT / "pipelines" / "demo.yaml",
        "--data",
        demo_dir,
        "--out",
        out,
        "--count",
        "6",
    )
    assert result.returncode == 0, result.stderr
    with Image.open(out) as im:
        assert im.size[0] > 200 and im.size[1] > 100


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["missing", "empty", "no_images"])
def test_bad_data_directories_exit_3_naming_the_path(tmp_path: Path, setup: str) -> None:
    data = tmp_path / "data"
    if setup != "missing":
        data.mkdir()
    if setup == "no_images":
        (data / "cats").mkdir()
        (data / "cats" / "notes.txt").write_text("not an image")
    result = daliaug(
        "preview", ROOT / "pipelines" / "demo.yaml", "--data", data, "--out", tmp_path / "g.png"
    )
    assert result.returncode == 3, result.stderr
    assert str(data) in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_corrupt_image_is_named(demo_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for cls in ("a", "b"):
        (data / cls).mkdir(parents=True)
        for i, src in enumerate(sorted((demo_dir / "circle").glob("*.jpg"))[:3]):
            (data / cls / f"{i}.jpg").write_bytes(src.read_bytes())
    broken = data / "b" / "1.jpg"
    broken.write_bytes(b"\xff\xd8\xff" + b"\x00garbage" * 20)  # a JPEG header, then nothing
    result = daliaug(
        "preview", ROOT / "pipelines" / "demo.yaml", "--data", data, "--out", tmp_path / "g.png"
    )
    assert result.returncode == 3, result.stderr
    assert str(broken) in result.stderr and "Traceback" not in result.stderr
    not_an_image = data / "a" / "0.jpg"
    not_an_image.write_bytes(b"GIF89a...")  # in place: its folder's status is kept
    result = daliaug(
        "preview", ROOT / "pipelines" / "demo.yaml", "--data", data, "--out", tmp_path / "g.png"
    )
    assert result.returncode == 3 and str(not_an_image) in result.stderr


@pytest.mark.slow
def test_gpu_backend_without_a_gpu_is_an_error(demo_dir: Path, tmp_path: Path) -> None:
    from daliaug.engines.select import dali_gpu_count

    if dali_gpu_count() > 0:
        pytest.skip("this machine has a GPU")
    config = tmp_path / "gpu.yaml"
    config.write_text((ROOT / "pipelines" / "demo.yaml").read_text() + "backend: gpu\n")
    result = daliaug("preview", config, "--data", demo_dir, "--out", tmp_path / "g.png")
    assert result.returncode == 4 and "backend: gpu" in result.stderr


@pytest.mark.slow
def test_demo_trains_on_user_data(demo_dir: Path) -> None:
    result = daliaug("demo", "--data", demo_dir, "--epochs", "2", "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    assert "images/s" in result.stderr and "validation accuracy" in result.stderr


@pytest.mark.slow
def test_preview_overlays_segmentation_masks(tmp_path: Path) -> None:
    from daliaug.tools.demo_data import write_segmentation_dataset

    data = write_segmentation_dataset(tmp_path / "seg", count=8)
    out = tmp_path / "seg.png"
    result = daliaug(
        "preview",
        ROOT / "pipelines" / "segmentation.yaml",
        "--data",
        data,
        "--out",
        out,
        "--count",
        "4",
    )
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10_000


@pytest.mark.slow
def test_convert_writes_shards_that_train(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "records"
    result = daliaug("convert", demo_dir, out, "--shards", "2")
    assert result.returncode == 0, result.stderr
    assert "wrote 48 records of 4 classes to 2 files" in result.stderr
    assert len(list(out.glob("*.tfrecord"))) == 2 and (out / "daliaug.json").is_file()
    config = tmp_path / "records.yaml"
    config.write_text(
        f"source: {{type: tfrecord, path: {out}, index_dir: {tmp_path / 'idx'}}}\n"
        "image_size: 32\nbatch_size: 8\n"
    )
    result = daliaug("preview", config, "--out", tmp_path / "r.png", "--count", "4")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_demo_segmentation_mean_iou_rises(
    demo_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``daliaug demo`` on the shipped segmentation config: in this process (the command's own
    run, as ``daliaug.cli.main`` calls it; TensorFlow and DALI are started here already, and
    the demo data shared: ``demo_cache``), since the training is what it checks."""
    from daliaug.cli import build_parser

    monkeypatch.setenv("DALIAUG_CACHE", str(demo_cache))
    config = ROOT / "pipelines" / "segmentation.yaml"
    args = build_parser().parse_args(
        ["demo", "--config", str(config), "--epochs", "6", "--backend", "cpu"]
    )
    assert args.run(args) == 0
    stderr = capsys.readouterr().err
    summary = r"validation mean_iou: first epoch ([\d.]+)%, best ([\d.]+)%"
    first, best = (float(v) for v in re.findall(summary, stderr)[0])
    assert best > first + 5, stderr


@pytest.mark.slow
def test_parity_on_user_images_reports_every_comparison(tmp_path: Path) -> None:
    import json

    from tests.helpers import structured_image, write_image_dir

    images = write_image_dir(tmp_path / "mine", {"x": [structured_image(50, 70, 1)]})
    write_image_dir(tmp_path / "mine", {"y": [structured_image(64, 48, 2)]}, fmt="jpg")
    report = tmp_path / "parity.json"
    result = daliaug(
        "parity",
        ROOT / "pipelines" / "cifar_train.yaml",
        "--images",
        images,
        "--seed",
        "3",
        "--json",
        report,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["passed"] and data["seed"] == 3 and data["backends"] == "DALI-CPU vs TF"
    names = [r["name"] for r in data["results"]]
    assert names == [
        "0: rotation",
        "1: shift",
        "2: flip",
        "pipeline",
        "output (float32, NHWC)",
        "JPEG decoders",
        "pipeline on JPEGs",
    ]
    assert "JPEG decoders" in result.stderr and "Traceback" not in result.stderr
    missing = daliaug(
        "parity", ROOT / "pipelines" / "cifar_train.yaml", "--images", tmp_path / "no"
    )
    assert missing.returncode == 3 and str(tmp_path / "no") in missing.stderr


@pytest.mark.slow
def test_selftest_runs_everything_here_and_says_what_was_skipped(tmp_path: Path) -> None:
    """On this machine (no GPU): DALI on the CPU against the stored reference, the plugin,
    epochs, training steps through make_dataset, the GPU part reported as skipped, every check
    passed; --require-gpu then exits with 4 naming the missing driver, --json gives the report.
    One run does both (the checks run before --require-gpu is weighed); that a passed report
    exits 0 without --require-gpu: tests/tools/test_selftest.py."""
    from daliaug.engines.select import dali_gpu_count

    if dali_gpu_count() > 0:
        pytest.skip("this machine has a GPU")
    env = {"DALIAUG_CACHE": str(tmp_path), "COLUMNS": "200"}
    result = daliaug("selftest", "--steps", "3", "--require-gpu", "--json", env=env)
    assert result.returncode == 4, result.stderr
    out = result.stderr
    assert re.search(r"DALI-CPU vs stored TensorFlow reference\s*│ ok", out), out
    assert re.search(r"model\.fit, 3 steps\s*│ ok", out) and "skipped: DALI sees no GPU" in out
    assert re.search(r"DALI's TensorFlow plugin\s*│ ok", out)
    assert re.search(r"5 epochs, one after another\s*│ ok", out)
    message = " ".join(out[out.index("--require-gpu") :].split())
    assert "CUDA driver" in message and "nvidia-smi" in message, message
    report = json.loads(result.stdout)
    assert report["passed"], [c for c in report["checks"] if c["passed"] is False]
    assert report["device"] == "cpu" and report["missing"][0]["what"].startswith("CUDA driver")


@pytest.mark.slow
def test_demo_trains_under_a_mirrored_strategy(demo_dir: Path) -> None:
    env = {"COLUMNS": "200"}
    result = daliaug("demo", "--data", demo_dir, "--epochs", "1", "--replicas", "2", env=env)
    assert result.returncode == 0, result.stderr
    assert "2 replicas" in result.stderr and "per replica" in result.stderr


def test_preview_captions_soft_labels_with_their_weights() -> None:
    from daliaug.tools.preview import caption

    names = ["cat", "dog", "fox"]
    assert caption(np.int32(2), names) == "fox"
    assert caption(np.array([0.25, 0.75, 0.0], np.float32), names) == "dog 0.75 / cat 0.25"
    assert caption(np.array([0.3], np.float32), names[:2]) == "cat 0.70 / dog 0.30"


@pytest.mark.slow
def test_parity_checks_the_opencv_engine_against_the_stored_reference(tmp_path: Path) -> None:
    import json

    report = tmp_path / "parity.json"
    result = daliaug("parity", "--check-reference", "--engine", "opencv", "--json", report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["backends"] == "OpenCV vs stored TF reference" and data["passed"]


def test_data_takes_an_s3_url_as_written(tmp_path: Path) -> None:
    """``--data s3://bucket/prefix`` reaches a source whose path takes URLs unfolded (a path
    would make it ``s3:/bucket/prefix``); a local ``--data`` reaches it too (the webdataset
    source's validation used to refuse the path object)."""
    from daliaug.cli import build_parser
    from daliaug.cli.common import config_from_args

    config = tmp_path / "shards.yaml"
    config.write_text("source: {type: webdataset, path: shards}\nimage_size: 32\n")
    for data, expected in (("s3://bucket/train", "s3://bucket/train"), ("local", "local")):
        args = build_parser().parse_args(["preview", str(config), "--data", data])
        assert str(config_from_args(args).source.path) == expected
