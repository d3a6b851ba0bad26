"""Faults that used to escape as another library's error or a wrong one: each named with its
cause (the file, the variable, the size and the limit), each run in a process of its own with a
time limit, as a user meets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import structured_image, write_image_dir

ROOT = Path(__file__).parents[1]
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3", "COLUMNS": "250"}


def run(args: list[str], env: dict[str, str] | None = None, timeout: int = 300) -> tuple[int, str]:
    """``python args`` in the repository root: the exit code and stderr (with stdout)."""
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **QUIET, **(env or {})},
    )
    return result.returncode, result.stdout + result.stderr


def cli(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    return run(["-m", "daliaug.cli", *map(str, args)], env)


def folders(root: Path, count: int = 8) -> Path:
    images = [structured_image(40, 48, seed=i) for i in range(count)]
    return write_image_dir(root, {"a": images[::2], "b": images[1::2]}, fmt="jpg")


def test_a_garbage_keras_file_is_called_what_it_is(tmp_path: Path) -> None:
    model = tmp_path / "model.keras"
    model.write_bytes(b"GARBAGE!" * 100)
    data, config = folders(tmp_path / "data"), tmp_path / "config.yaml"
    code, out = cli("convert", "--from-keras", model, data, "-o", config)
    assert code == 2, out
    assert f"{model} is not a saved Keras model" in out and "zip archive" in out
    assert "File not found" not in out and "Traceback" not in out


def test_a_jpeg_declaring_a_huge_size_is_told_the_size_and_the_limit(tmp_path: Path) -> None:
    data = folders(tmp_path / "data")
    bomb = data / "a" / "0000.jpg"
    raw = bytearray(bomb.read_bytes())
    sof = raw.find(b"\xff\xc0")
    raw[sof + 5 : sof + 9] = (20000).to_bytes(2, "big") * 2
    bomb.write_bytes(bytes(raw))
    code, out = cli("check", data, env={"DALIAUG_CACHE": str(tmp_path / "cache")})
    assert code == 3, out
    assert f"{bomb} declares 20000x20000 pixels (400,000,000)" in out
    assert "268,435,456 pixels at most" in out and "broken JPEG header" not in out
