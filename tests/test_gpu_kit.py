"""``bench/gpu_kit.py``: the plan's figures, and a kit packed, cut, checked and unpacked by
``.gpu/bin/recv`` as the GPU host would (no network: the resolution is the dry run's, run by
hand)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bench import gpu_kit
from bench.gpu_kit import Wheel, pack, plan, write_bin

MIB = 2**20


def test_the_plan_counts_parts_from_the_measured_ratios() -> None:
    wheels = [
        Wheel("tensorflow", "2.21.0", "u", 100 * MIB),
        Wheel("nvidia-cudnn-cu12", "9", "u", 100 * MIB),
        Wheel("nvidia-cufft-cu12", "11", "u", 100 * MIB),
        Wheel("keras", "3", "u", 10 * MIB),
    ]
    figures = plan(wheels, 55)
    assert figures["packed_mib"] == pytest.approx(59.2 + 72.1 + 74.4 + 10)
    assert figures["parts"] == 4 and figures["send_s"] == 4 * gpu_kit.PART_S
    assert figures["download_mib"] == pytest.approx(310)


def test_recv_unpacks_a_kit_and_names_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_kit, "GPU", tmp_path / ".gpu")
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("X = 1\n")
    (site / "pkg" / "blob").write_bytes(os.urandom(3 * MIB))  # incompressible: 3 parts or more
    parts = pack(site, "t", 1)
    write_bin()
    assert parts >= 3 and (tmp_path / ".gpu/bin/t.parts").read_text() == f"{parts}\n"

    def recv() -> subprocess.CompletedProcess:
        env = {**os.environ, "GPU_SITE": str(tmp_path / "host")}
        command = ["bash", ".gpu/bin/recv", "t"]
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )

    done = recv()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "host/pkg/__init__.py").read_text() == "X = 1\n"
    assert "already there" in recv().stdout
    last = tmp_path / f".gpu/t/part-{parts - 1:02d}"
    kept = last.read_bytes()
    last.unlink()
    missing = recv()
    assert missing.returncode == 3 and f"missing parts: {parts - 1:02d}" in missing.stdout
    last.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))
    (tmp_path / "host/.t").unlink()
    assert recv().returncode == 4
