"""The stored TF reference (daliaug/parity/reference.npz): it still matches the current TF
backend, covers every transform and shipped pipeline, and DALI matches it without TensorFlow
(on the CPU here, on the GPU where DALI sees one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from daliaug.engines.select import dali_gpu_count
from daliaug.parity import check_reference
from daliaug.parity.reference import load_reference
from daliaug.parity.run import run_tf
from daliaug.transforms import TRANSFORMS

ROOT = Path(__file__).parents[1]
REFERENCE = ROOT / "daliaug" / "parity" / "reference.npz"
REGENERATE = "daliaug parity --write-reference daliaug/parity/reference.npz"


@pytest.mark.slow
def test_reference_matches_the_current_tf_backend(tmp_path: Path) -> None:
    """Recomputed TF outputs equal the stored ones. Up to 1 grey level on at most 0.1% of the
    values is allowed: another CPU may round TensorFlow's vectorized float math differently,
    while any change to what the backend computes moves far more."""
    files, cases, _ = load_reference(REFERENCE, tmp_path)
    for case in cases:
        now = run_tf(case.config, files.subset(case.inputs), case.rows)
        diff = np.abs(now.astype(np.int16) - case.outputs)
        assert diff.max() <= 1 and np.mean(diff > 0) <= 0.001, (
            f"{case.name}: the TF backend no longer reproduces the stored reference; if the "
            f"change is intended, regenerate it: {REGENERATE}"
        )


def test_reference_covers_every_transform_and_pipeline(tmp_path: Path) -> None:
    _, cases, _ = load_reference(REFERENCE, tmp_path)
    used = {t.type for c in cases if c.kind == "transform" for t in c.config.transforms}
    assert used == set(TRANSFORMS) - {"normalize"}, f"regenerate: {REGENERATE}"
    pipelines = {c.name for c in cases if c.kind == "pipeline"}
    assert pipelines == {p.name for p in (ROOT / "pipelines").glob("*.yaml")}, REGENERATE
    assert any(c.kind == "decoder" for c in cases)
    # small enough to keep in the repository: about 30 kB per transform example (three 64x64
    # outputs) and 100 kB per shipped 224x224 pipeline
    assert REFERENCE.stat().st_size < 3_000_000


@pytest.mark.slow
def test_dali_cpu_matches_the_reference() -> None:
    report = check_reference(REFERENCE, "cpu")
    assert report.passed, report.as_dict()


def test_opencv_matches_the_reference() -> None:
    """The OpenCV engine against the stored TF outputs: every transform, every shipped
    pipeline, the JPEG decoder."""
    report = check_reference(REFERENCE, "cpu", engine="opencv")
    assert len(report.results) > 60 and report.passed, report.as_dict()


@pytest.mark.gpu
@pytest.mark.skipif(dali_gpu_count() == 0, reason="DALI sees no GPU")
def test_dali_gpu_matches_the_reference() -> None:
    report = check_reference(REFERENCE, "gpu")
    assert report.passed, report.as_dict()


def test_a_case_that_fails_to_run_is_named_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One case whose engine raises (as DALI's GPU remap did on its first GPU run) fails the
    report under its own name; every other case is still compared."""
    from daliaug.errors import DataError
    from daliaug.parity import reference
    from daliaug.parity.report import table
    from daliaug.tools.selftest import _parity

    def engine(config, samples, rows, outputs, which):
        if any(t.type == "hue" for t in config.transforms):
            raise DataError("DALI failed on a batch: Assert on ndim failed")
        return np.zeros(4)

    monkeypatch.setattr(reference, "engine_differences", engine)
    report = check_reference(REFERENCE, "cpu")
    assert not report.passed
    assert report.errors == {"hue": "DataError: DALI failed on a batch: Assert on ndim failed"}
    assert len(report.results) > 50 and all(r.passed for r in report.results)
    assert "hue" in list(table(report).columns[0].cells)
    selftest = SimpleNamespace(device="cpu", checks=[])
    _parity(selftest)
    (check,) = selftest.checks
    assert not check.passed and "failed to run: hue: DataError" in check.detail


@pytest.mark.slow
def test_check_reference_needs_no_tensorflow(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = (
        "import sys; sys.modules['tensorflow'] = None;"
        " from daliaug.cli import main;"
        f" sys.exit(main(['parity', '--check-reference', {str(REFERENCE)!r}, '--device', 'cpu',"
        f" '--json', {str(out)!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    assert report["passed"] and "JPEG decoders" in result.stderr
    assert {r["kind"] for r in report["results"]} == {"transform", "pipeline", "decoder"}
