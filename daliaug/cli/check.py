"""Decode every image (and mask) of a config's source, or of a folder, and list the bad ones.

Decodes with the backend the config would train on (DALI on the GPU or CPU; TensorFlow without
DALI), in parallel, with a progress bar; results are cached by path, size and modification time,
so checking unchanged data again only reads the cache. Exit code 3 when a file is bad; the full
list goes to a file next to the cache. What the folders hold besides images (other file types,
links to folders that are not followed) is named too, and so is each bad annotation (a box
outside its image, an unknown class) and each note (an image without annotations).

``--write-listings`` first writes the listing files of a config's data beside it (a folder of
WebDataset shards' or of TFRecords listed as columns, a file list's of ``s3://`` images), so
that every later start, on any host that sees the same files, reads them instead of the data
(:mod:`daliaug.sources.listing_files`).
"""

from __future__ import annotations

import argparse

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from daliaug.cli.common import (
    add_config_argument,
    console,
    is_demo_config,
    plain,
    with_demo_data,
)
from daliaug.config import Config, load_config
from daliaug.errors import readable

SHOWN = 20


def register(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser, "target", "a folder of images, or a pipeline config")
    parser.add_argument(
        "--write-listings",
        action="store_true",
        help="first write the listing files of the config's data beside it (daliaug-listing.json "
        "in each folder of WebDataset shards or listed TFRecords, <list>.listing.json beside a "
        "file list of s3:// images), so that every start, on any host, reads them instead of "
        "the shards, records or images",
    )


def run(args: argparse.Namespace) -> int:
    from daliaug.tools.check import check, files_to_check, write_listings

    target: str | Config = args.target
    if is_demo_config(args.target):
        target = with_demo_data(load_config(args.target))
    if args.write_listings:
        with console.status(plain("writing the listing files")):
            written = write_listings(target)
        console.print(readable(f"wrote {len(written):,} listing files beside the data"))
    with console.status(plain(f"listing {args.target}")):
        total = files_to_check(target)
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress("decoding", *columns, console=console, transient=True) as progress:
        task = progress.add_task("check", total=total)
        report = check(target, lambda n: progress.advance(task, n))
    summary = Table(title=readable(f"daliaug check {args.target} ({report.decoder})"))
    for column in ("files", "from the cache", "bad", "seconds"):
        summary.add_column(column, justify="right")
    summary.add_row(
        f"{report.files:,}", f"{report.cached:,}", f"{len(report.bad):,}", f"{report.seconds:.1f}"
    )
    console.print(summary)
    if report.note:
        console.print(report.note)
    if report.ignored:
        console.print(f"not checked: {len(report.ignored)} entries that are not images")
        _print_files(report.ignored)
    if report.notes:
        console.print(f"notes: {len(report.notes)} samples or annotations worth a look")
        _print_files(report.notes)
    if not report.bad:
        console.print("every file decodes", style="bold green")
        return 0
    console.print("bad files:")
    _print_files(report.bad)
    console.print(f"all {len(report.bad)} bad files are listed in {readable(str(report.listed))}")
    return 3


def _print_files(reasons: dict[str, str]) -> None:
    """The first :data:`SHOWN` files with their reasons: a table on a terminal, else one whole
    line each (never cut to the terminal's width)."""
    shown = list(reasons.items())[:SHOWN]
    if console.is_terminal:
        table = Table("file", "reason")
        for path, reason in shown:
            table.add_row(readable(path), readable(reason))
        console.print(table)
    else:
        for path, reason in shown:
            console.print(readable(f"{path}: {reason}"), soft_wrap=True)
    if len(reasons) > SHOWN:
        console.print(f"({len(reasons) - SHOWN} more not shown)")
