"""Write the config's JSON Schema, which editors (VS Code's YAML extension and others) use to
complete and check config files.

A config names it in a first line ``# yaml-language-server: $schema=PATH``, as the shipped
configs name the copy beside them (``pipelines/config.schema.json``, rewritten by
``daliaug schema --out pipelines/config.schema.json``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from daliaug.cli.common import console
from daliaug.errors import ConfigError
from daliaug.tools.out_paths import make_parent
from daliaug.tools.schema import schema_text


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, help="the JSON file to write (default: printed to standard output)"
    )


def run(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.out is None:
        sys.stdout.write(text)
        return 0
    make_parent(args.out, "--out")
    try:
        args.out.write_text(text)
    except OSError as e:
        raise ConfigError(f"--out {args.out}: cannot write: {e.strerror or e}") from None
    console.print(f"wrote the config's JSON Schema to {args.out}")
    return 0
