"""Where daliaug keeps files it makes for you: demo data, TFRecord indexes."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$DALIAUG_CACHE`` if set, else ``~/.cache/daliaug``."""
    return Path(os.environ.get("DALIAUG_CACHE") or "~/.cache/daliaug").expanduser()
