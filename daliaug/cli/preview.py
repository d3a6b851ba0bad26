"""Write a PNG grid of augmented samples (masks overlaid for segmentation); DALI only, no TF."""

from __future__ import annotations

import argparse
from pathlib import Path

from daliaug.cli.common import (
    add_config_argument,
    add_data_argument,
    config_from_args,
    console,
    positive_int,
)
from daliaug.tools.preview import preview


def register(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--out", type=Path, default=Path("preview.png"), help="PNG to write")
    parser.add_argument(
        "--count", type=positive_int, default=16, help="number of samples (default 16)"
    )
    add_data_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    with console.status("decoding and augmenting samples"):
        preview(config, args.count, args.out)
    console.print(f"wrote {args.count} augmented samples to {args.out}")
    return 0
