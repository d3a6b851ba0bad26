"""The code is ruff-clean (lint and format), as the project asks of every change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_ruff(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
