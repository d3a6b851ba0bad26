"""The OpenCV engine's decode check: which files of a list its decoders cannot decode (in a
thread pool; libjpeg-turbo and OpenCV release the GIL)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from daliaug.engines import undecodable_in_threads
from daliaug.engines.opencv.image import decode
from daliaug.errors import first_line


def _reason(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            decode(f.read(), 3)
    except (OSError, ValueError) as e:
        return first_line(e)
    return None


def undecodable(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` the OpenCV engine cannot decode, with the reason."""
    return undecodable_in_threads(_reason, paths)
