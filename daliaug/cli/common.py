"""Pieces shared by the sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from daliaug.config import Config, load_config
from daliaug.errors import readable

console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
"""Where the commands print: stderr, with no markup, so that a path or message holding text like
``[bold]`` or ``[/x]`` prints as it is (styles are given explicitly), and lines not cut to a
width (a path stays whole on one line; tables still fit the terminal)."""


def plain(text: str) -> Text:
    """``text`` as it is (no markup, file names that are not UTF-8 readable), for the places
    rich would otherwise read markup in: status lines."""
    return Text(readable(text))


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", type=Path, help="data for the config's source (replaces its path)"
    )


def config_from_args(args: argparse.Namespace) -> Config:
    """The config named on the command line, its source pointed at ``--data`` if given."""
    config = load_config(args.config)
    if getattr(args, "data", None) is None:
        return config
    return config.model_copy(update={"source": config.source.with_path(args.data)})
