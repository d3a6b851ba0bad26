"""TensorFlow's decode check: which files of a list TensorFlow cannot decode (eagerly, in a
thread pool; TensorFlow's decoders release the GIL)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import tensorflow as tf

from daliaug.errors import first_line


def _reason(path: str) -> str | None:
    try:
        data = tf.io.read_file(os.fsencode(path))  # the name's bytes, UTF-8 or not
        tf.io.decode_image(data, channels=3, expand_animations=False)
    except (tf.errors.OpError, ValueError) as e:
        return first_line(e)
    return None


def undecodable(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` TensorFlow cannot decode, with TensorFlow's reason."""
    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        for path, reason in zip(paths, pool.map(_reason, paths), strict=True):
            if reason is not None:
                yield path, reason
