"""The features of a serialized ``tf.train.Example`` and the kind of each, read from protobuf's
wire format (https://protobuf.dev/programming-guides/encoding/) without TensorFlow, so that a
host with DALI alone can check TFRecords. Only what the check needs: the nesting ``Example.
features`` (1) -> ``Features.feature`` (1, a map entry: key 1, value 2) -> ``Feature``'s one
field of ``bytes_list`` (1), ``float_list`` (2) or ``int64_list`` (3)."""

from __future__ import annotations

from collections.abc import Iterator

KINDS = {1: "bytes_list", 2: "float_list", 3: "int64_list"}
"""``Feature``'s fields, by number."""

_FIXED = {1: 8, 5: 4}
"""Bytes of the fixed-size wire types (64-bit, 32-bit)."""


class Malformed(ValueError):
    """The bytes are not a protobuf message."""


def feature_kinds(example: bytes) -> dict[str, str]:
    """Each feature's name and kind (``bytes_list``, ``float_list``, ``int64_list``, or
    ``empty``); :class:`Malformed` where ``example`` is not an ``Example``."""
    kinds: dict[str, str] = {}
    for features in _messages(example, 1):
        for entry in _messages(features, 1):
            key = b"".join(_messages(entry, 1))
            kind = "empty"
            for value in _messages(entry, 2):
                kind = next((KINDS[n] for n, _ in _fields(value) if n in KINDS), kind)
            try:
                kinds[key.decode()] = kind
            except UnicodeDecodeError:
                raise Malformed("a feature name is not UTF-8") from None
    return kinds


def _messages(buffer: bytes, number: int) -> Iterator[bytes]:
    """The length-delimited values of field ``number`` in ``buffer``."""
    for n, value in _fields(buffer):
        if n == number:
            if not isinstance(value, bytes):
                raise Malformed(f"field {number} is not a message")
            yield value


def _fields(buffer: bytes) -> Iterator[tuple[int, bytes | int]]:
    """Each field of a message: its number and value (the bytes of a length-delimited one,
    else a number; fixed-size values as 0)."""
    at = 0
    while at < len(buffer):
        tag, at = _varint(buffer, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(buffer, at)
            yield number, value
        elif wire == 2:
            length, at = _varint(buffer, at)
            if at + length > len(buffer):
                raise Malformed("a field runs past the message's end")
            yield number, buffer[at : at + length]
            at += length
        elif wire in _FIXED:
            at += _FIXED[wire]
            yield number, 0
        else:
            raise Malformed(f"wire type {wire}")
    if at != len(buffer):
        raise Malformed("a field runs past the message's end")


def _varint(buffer: bytes, at: int) -> tuple[int, int]:
    """The base-128 varint at ``at`` and the offset after it."""
    value = shift = 0
    while at < len(buffer) and shift < 64:
        byte = buffer[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at
    raise Malformed("a varint runs past the message's end")
