"""TensorFlow's decode check: which files of a list TensorFlow cannot decode (eagerly, in a
thread pool; TensorFlow's decoders release the GIL)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import tensorflow as tf

from daliaug.engines import undecodable_in_threads
from daliaug.errors import first_line


def _reason(path: str) -> str | None:
    try:
        data = tf.io.read_file(os.fsencode(path))  # the name's bytes, UTF-8 or not
        tf.io.decode_image(data, channels=3, expand_animations=False)
    except (tf.errors.OpError, ValueError) as e:
        return first_line(e)
    return None


def undecodable(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` TensorFlow cannot decode, with the reason."""
    return undecodable_in_threads(_reason, paths)
