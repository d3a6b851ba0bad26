"""Decode every image (and mask) of a config's source, or of a folder, and list the bad ones.

Decodes with the backend the config would train on (DALI on the GPU or CPU; TensorFlow without
DALI), in parallel, with a progress bar; results are cached by path, size and modification time,
so checking unchanged data again only reads the cache. Exit code 3 when a file is bad; the full
list goes to a file next to the cache.
"""

from __future__ import annotations

import argparse

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from daliaug.cli.common import add_config_argument, console, is_demo_config, with_demo_data
from daliaug.config import Config, load_config

SHOWN = 20


def register(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser, "target", "a folder of images, or a pipeline config")


def run(args: argparse.Namespace) -> int:
    from daliaug.tools.check import check, files_to_check

    target: str | Config = args.target
    if is_demo_config(args.target):
        target = with_demo_data(load_config(args.target))
    with console.status(f"listing {args.target}"):
        total = files_to_check(target)
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress("decoding", *columns, console=console, transient=True) as progress:
        task = progress.add_task("check", total=total)
        report = check(target, lambda n: progress.advance(task, n))
    summary = Table(title=f"daliaug check {args.target} ({report.decoder})")
    for column in ("files", "from the cache", "bad", "seconds"):
        summary.add_column(column, justify="right")
    summary.add_row(
        f"{report.files:,}", f"{report.cached:,}", f"{len(report.bad):,}", f"{report.seconds:.1f}"
    )
    console.print(summary)
    if not report.bad:
        console.print("[bold green]every file decodes[/]")
        return 0
    bad = Table(title="bad files")
    bad.add_column("file")
    bad.add_column("reason")
    for path, reason in list(report.bad.items())[:SHOWN]:
        bad.add_row(path, reason)
    console.print(bad)
    more = f" ({len(report.bad) - SHOWN} more not shown)" if len(report.bad) > SHOWN else ""
    console.print(f"all {len(report.bad)} bad files are listed in {report.listed}{more}")
    return 3
