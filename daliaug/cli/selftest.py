"""Check this host's GPU path in one command: what is here, DALI against the stored reference,
training steps through make_dataset, images/s and GPU memory.

Exit code 0 when every check passed (a GPU part skipped for want of a GPU counts as passed
unless --require-gpu, which then exits with 4), 1 when a check failed.
"""

from __future__ import annotations

import argparse

from rich.table import Table
from rich.text import Text

from daliaug.cli.common import console, positive_int
from daliaug.errors import BackendError


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--steps", type=positive_int, default=20, help="training steps (default 20)"
    )
    parser.add_argument(
        "--require-gpu", action="store_true", help="fail (exit code 4) where DALI sees no GPU"
    )


def run(args: argparse.Namespace) -> int:
    from daliaug.tools.selftest import selftest

    with console.status("self-test") as status:
        report = selftest(args.steps, lambda step: status.update(step))
    table = Table(title=f"daliaug self-test (DALI on the {report.device.upper()})")
    for column in ("check", "result", "detail"):
        table.add_column(column)
    marks = {
        True: Text("ok", "green"),
        False: Text("FAIL", "bold red"),
        None: Text("skipped", "yellow"),
    }
    for check in report.checks:
        table.add_row(check.name, marks[check.passed], check.detail)
    console.print(table)
    if args.require_gpu and report.device != "gpu":
        raise BackendError("selftest --require-gpu: DALI sees no CUDA GPU on this machine")
    word, style = ("passed", "bold green") if report.passed else ("failed", "bold red")
    console.print(word, style=style)
    return 0 if report.passed else 1
