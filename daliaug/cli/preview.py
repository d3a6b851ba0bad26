"""Write a PNG grid of samples as they are beside their augmented versions (masks overlaid for
segmentation); DALI without TensorFlow, or TensorFlow for backend: tf."""

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
from daliaug.tools.preview import grid_path, preview


def register(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("preview.png"),
        help="PNG to write (in a folder: its preview.png)",
    )
    parser.add_argument(
        "--count", type=positive_int, default=4, help="number of samples, one per row (default 4)"
    )
    parser.add_argument(
        "--versions",
        type=positive_int,
        default=3,
        help="augmented versions of each sample, beside it (default 3)",
    )
    add_data_argument(parser)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    replaced = grid_path(args.out).exists()
    with console.status("decoding and augmenting samples"):
        path = preview(config, args.count, args.out, args.versions)
    console.print(
        f"wrote {args.count} samples, each beside {args.versions} augmented versions, to {path}"
        + (" (replacing the file there)" if replaced else "")
    )
    return 0
