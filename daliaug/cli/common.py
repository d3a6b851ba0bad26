"""Pieces shared by the sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from daliaug.config import Config, load_config

console = Console(stderr=True, highlight=False)


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", type=Path, help="data directory; replaces the config's source.path"
    )


def config_from_args(args: argparse.Namespace) -> Config:
    overrides = {"source": {"path": str(args.data)}} if getattr(args, "data", None) else None
    return load_config(args.config, overrides)
