"""The samples' host columns as TensorFlow constants, made once per sample set and column: the
datasets of a strategy's replicas, each over all the samples (:mod:`daliaug.outputs.tfdata.
replicas`), capture the one tensor (``tf.data`` captures an eager tensor by reference), not a
copy each."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import tensorflow as tf

_HELD: dict[tuple[int, str], tf.Tensor] = {}


def held_constant(samples: object, name: str, values: Callable[[], Any]) -> tf.Tensor:
    """``values()`` as a constant, made once for column ``name`` of ``samples`` and dropped
    with them (made anew where a graph is being built: a graph's constant is its own)."""
    if not tf.executing_eagerly():
        return tf.constant(values())
    key = (id(samples), name)
    held = _HELD.get(key)
    if held is None:
        held = _HELD[key] = tf.constant(values())
        weakref.finalize(samples, _HELD.pop, key, None)
    return held
