"""Write a folder of class sub-folders into sharded TFRecord files, with a progress bar."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from daliaug.cli.common import console, plain, positive_int
from daliaug.sources.directory import DirectorySource


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", type=Path, help="folder with one sub-folder per class")
    parser.add_argument("out", type=Path, help="folder to write the .tfrecord shards into")
    parser.add_argument(
        "--shards", type=positive_int, default=4, help="number of files (default 4)"
    )
    parser.add_argument("--prefix", default="data", help="shard file name prefix (default data)")


def run(args: argparse.Namespace) -> int:
    from daliaug.tools.convert import write_tfrecords

    with console.status(plain(f"listing {args.data}")):
        samples = DirectorySource(path=args.data).samples()
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress("writing TFRecords", *columns, console=console) as progress:
        task = progress.add_task("convert", total=len(samples))
        files = write_tfrecords(
            samples, args.out, args.shards, args.prefix, lambda k: progress.advance(task, k)
        )
    console.print(
        f"wrote {len(samples)} records of {samples.num_classes} classes "
        f"to {len(files)} files in {args.out}"
    )
    return 0
