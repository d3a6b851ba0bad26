"""The features of a serialized ``tf.train.Example``, read from protobuf's wire format
(https://protobuf.dev/programming-guides/encoding/) without TensorFlow, so that a host with
DALI alone can check and list TFRecords. Only what daliaug needs: the nesting ``Example.
features`` (1) -> ``Features.feature`` (1, a map entry: key 1, value 2) -> ``Feature``'s one
field of ``bytes_list`` (1), ``float_list`` (2) or ``int64_list`` (3), each a list of values
(field 1; integers packed or not)."""

from __future__ import annotations

from collections.abc import Iterator

KINDS = {1: "bytes_list", 2: "float_list", 3: "int64_list"}
"""``Feature``'s fields, by number."""

_FIXED = {1: 8, 5: 4}
"""Bytes of the fixed-size wire types (64-bit, 32-bit)."""

MASK = (1 << 64) - 1
"""A varint's bits that protobuf keeps."""

Span = tuple[int, int]
"""Where a length-delimited value lies in the message: bytes ``[start, stop)``."""


class Malformed(ValueError):
    """The bytes are not a protobuf message."""


def features(example: bytes) -> dict[str, tuple[str, list[int] | list[Span]]]:
    """Each feature's name, kind (``bytes_list``, ``float_list``, ``int64_list``, or
    ``empty``) and values: a ``bytes_list``'s as the spans of ``example`` that hold them (an
    image is then read by byte range, never copied here), an ``int64_list``'s as integers, a
    ``float_list``'s not read (empty); :class:`Malformed` where ``example`` is not an
    ``Example``."""
    out: dict[str, tuple[str, list[int] | list[Span]]] = {}
    whole = (0, len(example))
    for outer in _messages(example, whole, 1):
        for entry in _messages(example, outer, 1):
            key = b"".join(example[a:b] for a, b in _messages(example, entry, 1))
            found: tuple[str, list[int] | list[Span]] = ("empty", [])
            for value in _messages(example, entry, 2):
                for number, wire, held in _fields(example, value):
                    if number in KINDS and wire == 2:
                        found = (KINDS[number], _values(example, held, number))  # type: ignore[arg-type]
            try:
                out[key.decode()] = found
            except UnicodeDecodeError:
                raise Malformed("a feature name is not UTF-8") from None
    return out


def feature_kinds(example: bytes) -> dict[str, str]:
    """Each feature's name and kind (see :func:`features`)."""
    return {name: kind for name, (kind, _) in features(example).items()}


def _values(buffer: bytes, span: Span, kind: int) -> list[int] | list[Span]:
    """The values of a ``BytesList`` (their spans) or ``Int64List`` (packed or not; as signed
    integers) at ``span``; none of a ``FloatList``."""
    if kind == 2:
        return []
    if kind == 1:
        return list(_messages(buffer, span, 1))
    out: list[int] = []
    for number, wire, held in _fields(buffer, span):
        if number != 1:
            continue
        if wire == 0:
            out.append(held)  # type: ignore[arg-type]
            continue
        if wire != 2:
            raise Malformed("an int64 value of another wire type")
        at, stop = held  # type: ignore[misc]
        while at < stop:
            value, at = _varint(buffer, at, stop)
            out.append(value)
    return [v - (1 << 64) if v >= 1 << 63 else v for v in out]


def _messages(buffer: bytes, span: Span, number: int) -> Iterator[Span]:
    """The spans of the length-delimited values of field ``number`` in ``span``."""
    for n, wire, value in _fields(buffer, span):
        if n == number:
            if wire != 2:
                raise Malformed(f"field {number} is not a message")
            yield value  # type: ignore[misc]


def _fields(buffer: bytes, span: Span) -> Iterator[tuple[int, int, int | Span]]:
    """Each field of the message at ``span``: its number, wire type and value (the span of a
    length-delimited one, else a number; fixed-size values as 0)."""
    at, stop = span
    while at < stop:
        tag, at = _varint(buffer, at, stop)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(buffer, at, stop)
            yield number, wire, value
        elif wire == 2:
            length, at = _varint(buffer, at, stop)
            if at + length > stop:
                raise Malformed("a field runs past the message's end")
            yield number, wire, (at, at + length)
            at += length
        elif wire in _FIXED:
            at += _FIXED[wire]
            yield number, wire, 0
        else:
            raise Malformed(f"wire type {wire}")
    if at != stop:
        raise Malformed("a field runs past the message's end")


def _varint(buffer: bytes, at: int, stop: int) -> tuple[int, int]:
    """The base-128 varint at ``at`` (before ``stop``) and the offset after it."""
    value = shift = 0
    while at < stop and shift < 64:
        byte = buffer[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value & MASK, at  # (protobuf keeps a varint's low 64 bits)
    raise Malformed("a varint runs past the message's end")
