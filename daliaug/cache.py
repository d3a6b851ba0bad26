"""Where daliaug keeps files it makes for you (demo data, TFRecord indexes, the decode check's
results), and how it writes them so that processes sharing the cache never see half a file."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def default_cache_dir() -> Path:
    """``$DALIAUG_CACHE`` if set, else ``~/.cache/daliaug``."""
    return Path(os.environ.get("DALIAUG_CACHE") or "~/.cache/daliaug").expanduser()


def write_atomically(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file of its own in the same folder,
    renamed into place: readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w" if isinstance(data, str) else "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def build_folder_atomically(path: Path, build: Callable[[Path], None]) -> Path:
    """Make the folder ``path`` with ``build`` (given a temporary folder beside it), renamed
    into place when complete; if another process completed it first, keep theirs."""
    if path.is_dir():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        build(tmp)
        os.rename(tmp, path)
    except OSError:
        if not path.is_dir():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path
