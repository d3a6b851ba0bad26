"""The ``daliaug`` command line: one module per sub-command, each with ``register`` and ``run``.

Errors are printed as one clear message and mapped to exit codes: 2 for a bad config, 3 for bad
data, 4 for a missing backend, 1 otherwise (see :mod:`daliaug.errors`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rich.markup import escape

from daliaug.cli.common import console
from daliaug.errors import DaliaugError

COMMANDS = ("demo", "validate", "preview", "convert", "parity", "doctor", "selftest")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="daliaug",
        description="GPU image decoding and augmentation for Keras training with NVIDIA DALI.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"daliaug.cli.{name}")
        command = sub.add_parser(
            name, help=module.__doc__.splitlines()[0], description=module.__doc__
        )
        module.register(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except DaliaugError as e:
        console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
        return e.exit_code
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
