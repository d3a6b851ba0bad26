"""The ``daliaug`` command line: one module per sub-command, each with ``register`` and ``run``.

Errors are printed as one clear message and mapped to exit codes: 2 for a bad config, 3 for bad
data, 4 for a missing backend, 1 otherwise (see :mod:`daliaug.errors`); Ctrl-C ends the process
at once with one line, ``interrupted``, and exit code 130, SIGTERM (``kill``) likewise with
``terminated`` and 143. Both first unwind Python's stack, so that no half-written file stays in
the cache.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Sequence
from types import FrameType

from rich.text import Text

from daliaug.cli.common import console
from daliaug.errors import DaliaugError, carried_error, readable
from daliaug.version import __version__

COMMANDS = (
    "demo",
    "validate",
    "schema",
    "preview",
    "convert",
    "check",
    "parity",
    "doctor",
    "selftest",
)


class Formatter(argparse.HelpFormatter):
    """argparse's help, its lines broken between words only: an option's name in a summary
    (``--from-keras``) is never cut at a hyphen."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="daliaug",
        description="GPU image decoding and augmentation for Keras training with NVIDIA DALI.",
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"daliaug {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"daliaug.cli.{name}")
        command = sub.add_parser(
            name,
            help=summary(module.__doc__),
            description=module.__doc__,
            formatter_class=Formatter,
        )
        module.register(command)
        command.set_defaults(run=module.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C's ``KeyboardInterrupt`` is (so that it
    unwinds the same way)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def summary(doc: str) -> str:
    """A command's summary for the top-level help: its docstring's first paragraph, whole."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's info and warning lines
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # where signals can be handled
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.run(args) or 0)
    except DaliaugError as e:
        return _fail(e)
    except KeyboardInterrupt as e:
        word, code = ("terminated", 143) if isinstance(e, Terminated) else ("interrupted", 130)
        console.print(word)
        sys.stderr.flush()
        os._exit(code)  # now: DALI's and TensorFlow's threads are not waited for
    except Exception as e:  # a framework's error that carries one of daliaug's
        carried = carried_error(e)
        if carried is None:
            raise
        return _fail(carried)


def _fail(error: DaliaugError) -> int:
    console.print(Text.assemble(("error:", "bold red"), " ", readable(str(error))), soft_wrap=True)
    return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
