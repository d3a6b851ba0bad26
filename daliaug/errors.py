"""Exceptions that carry a user-facing message and a CLI exit code."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

_PACKAGE = str(Path(__file__).parent) + os.sep


class DaliaugError(Exception):
    """Base class: the message is meant for the user, the exit code for the CLI."""

    exit_code = 1


class ConfigError(DaliaugError, ValueError):
    """The configuration is invalid; the message names each bad field and value."""

    exit_code = 2


class CacheError(ConfigError):
    """The folder daliaug keeps its files in (``DALIAUG_CACHE``) cannot take them: the message
    names the variable, the path and the fix."""


class DataError(DaliaugError, ValueError):
    """The data is missing, empty, unreadable or corrupt; the message names the path."""

    exit_code = 3


class BackendError(DaliaugError, RuntimeError):
    """The requested backend (GPU, DALI, TensorFlow) is not available here."""

    exit_code = 4


class BackendWarning(UserWarning):
    """The backend runs somewhere other than it could (for example DALI on the CPU although a
    GPU is present); the message names the fix."""


class CacheWarning(UserWarning):
    """daliaug goes on without its cache (``DALIAUG_CACHE`` cannot take a file it only keeps to
    save time); the message names the variable, the path and the fix."""


class DataWarning(UserWarning):
    """Some data was left out (``source.on_error: skip``); the message says how much and where
    the list is."""


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the calling function that points the
    warning at the first line outside daliaug: the user's call (``make_dataset``,
    ``from_keras``, ...), however deep inside daliaug the warning is raised."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def readable(text: str) -> str:
    """``text`` printable anywhere: the bytes of a file name that are not UTF-8 (which Python
    holds as surrogate escapes) shown as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def first_line(error: Exception) -> str:
    """The informative line of an error (for DALI's: what follows "encountered:"), else the
    first non-empty line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if "encountered:" in lines[:-1]:
        return lines[lines.index("encountered:") + 1]
    return lines[0] if lines else repr(error)


_CARRIED = re.compile(r"\b(ConfigError|DataError|BackendError): ([^\n]+)")


def carried_error(error: Exception) -> DaliaugError | None:
    """The daliaug error that ``error`` (TensorFlow's, DALI's) carries in its message, raised
    where daliaug's Python runs inside a framework (an input stream, an external source)."""
    found = _CARRIED.search(str(error))
    if found is None:
        return None
    kind = {"ConfigError": ConfigError, "DataError": DataError, "BackendError": BackendError}
    return kind[found.group(1)](found.group(2).strip())
