"""Check this host's GPU path in one command: what is here and what is missing, TensorFlow's
GPU memory policy, DALI against the stored reference, one epoch of make_dataset on the GPU
against the CPU path, images/s (make_dataset and decoding alone), GPU memory, the cost of each
epoch, and model.fit steps; a short table last, ``--json`` for bug reports.

Exit code 0 when every check passed (a GPU part skipped for want of a GPU counts as passed
unless --require-gpu, which then exits with 4 naming what is missing and the fix; TensorFlow
not installed only with --require-tensorflow too), 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table
from rich.text import Text

from daliaug.cli.common import console, positive_int
from daliaug.errors import BackendError


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--steps", type=positive_int, default=20, help="training steps (default 20)"
    )
    parser.add_argument(
        "--require-gpu",
        action="store_true",
        help="fail (exit code 4) where the GPU path is incomplete, naming what is missing",
    )
    parser.add_argument(
        "--require-tensorflow",
        action="store_true",
        help="with --require-gpu: TensorFlow is required too (without it a host with DALI "
        "alone skips the checks through make_dataset, by name)",
    )
    parser.add_argument(
        "--json", action="store_true", help="also print the report as JSON on stdout"
    )


def run(args: argparse.Namespace) -> int:
    from daliaug.tools.selftest import selftest

    with console.status("self-test") as status:
        report = selftest(args.steps, lambda step: status.update(step))
    if args.json:
        json.dump(report.as_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    table = Table(title=f"daliaug self-test (DALI on the {report.device.upper()})")
    for column in ("check", "result", "detail"):
        table.add_column(column)
    marks = {
        True: Text("ok", "green"),
        False: Text("FAIL", "bold red"),
        None: Text("skipped", "yellow"),
    }
    for check in report.checks:
        table.add_row(Text(check.name), marks[check.passed], Text(check.detail))
    console.print(table)
    lacking = [m for m in report.missing if args.require_tensorflow or not m.tensorflow]
    if args.require_gpu and (lacking or report.device != "gpu"):
        gaps = "; ".join(str(m) for m in lacking) or "DALI sees no CUDA GPU"
        raise BackendError(f"selftest --require-gpu: the GPU path lacks {gaps}")
    word, style = ("passed", "bold green") if report.passed else ("failed", "bold red")
    console.print(word, style=style)
    return 0 if report.passed else 1
