"""Pieces shared by the sub-commands."""

from __future__ import annotations

import argparse
from importlib.resources import files
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


DEMO_CONFIG = str(files("daliaug.pipelines") / "demo.yaml")
"""The shipped demo config: what ``daliaug demo`` trains with, and the default config of the
commands that take one."""


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_config_argument(
    parser: argparse.ArgumentParser, name: str = "config", what: str = "pipeline config"
) -> None:
    parser.add_argument(
        name,
        nargs="?",
        default=DEMO_CONFIG,
        help=f"{what} (YAML or JSON, or a shipped config's name); default: the shipped demo.yaml "
        "on the demo data",
    )


def data_location(text: str) -> str | Path:
    """``--data``: an ``s3://`` URL as written (a path would fold its ``//``), else a path."""
    return text if text.startswith("s3://") else Path(text)


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=data_location,
        help="data for the config's source (replaces its path; an s3:// URL for the "
        "webdataset, file_list and tfrecord sources)",
    )


def is_demo_config(path: str) -> bool:
    """Whether ``path`` is the shipped demo config or an unchanged copy of it (whose source
    path is a placeholder for the demo data)."""
    try:
        return Path(path).read_bytes() == Path(DEMO_CONFIG).read_bytes()
    except OSError:
        return False


def with_demo_data(config: Config) -> Config:
    """``config`` reading the demo's training data (written to the cache on first use)."""
    from daliaug.tools.demo_sources import demo_sources

    with console.status("writing the demo data to the cache (first run only)"):
        train, _ = demo_sources(config.source)
    return config.model_copy(update={"source": train})


def config_from_args(args: argparse.Namespace) -> Config:
    """The config named on the command line, its source pointed at ``--data`` if given, or at
    the demo data for the demo config."""
    config = load_config(args.config)
    if getattr(args, "data", None) is not None:
        return config.model_copy(update={"source": config.source.with_path(args.data)})
    return with_demo_data(config) if is_demo_config(args.config) else config
