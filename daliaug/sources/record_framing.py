"""The framing of TFRecord files (``length``, its checksum, the data, its checksum: 12 bytes
before a record's data, 4 after), read on the host, local or ``s3://``: DALI's index of a file
(``offset size`` per record) and the records of a byte range, each with where its data lies.
Checksums are not verified here: a record whose length is wrong is one that runs past the end
of the file or the range (named as a file cut short); its data is then checked as an
``Example`` and its image decoded, where TFRecords are listed as columns."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

from daliaug.errors import DataError
from daliaug.sources import storage

HEADER = 12
"""Bytes before a record's data: its length (8) and the length's checksum (4)."""
FOOTER = 4
"""Bytes after a record's data: its checksum."""


class Truncated(DataError):
    """A TFRecord file ends within a record."""


def _truncated(record_file: str, offset: int) -> Truncated:
    return Truncated(f"TFRecord file {record_file} is truncated at byte {offset}")


def _read_exactly(stream: BinaryIO, count: int) -> bytes:
    """``count`` bytes of ``stream``, fewer only at its end (a network stream may give them in
    parts)."""
    parts, left = [], count
    while left > 0:
        part = stream.read(min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _record_end(stream: BinaryIO, record_file: str, offset: int) -> int:
    """Where the record at ``offset`` ends, from the header read from ``stream``."""
    header = _read_exactly(stream, HEADER)
    if len(header) < HEADER:
        raise _truncated(record_file, offset)
    (length,) = struct.unpack("<Q", header[:8])
    return offset + HEADER + length + FOOTER


def index_text(record_file: str, size: int) -> tuple[str, int]:
    """DALI's index of one TFRecord file of ``size`` bytes, local or ``s3://`` (``offset
    size`` per record), and the record count: one pass over the headers (a local file seeks
    past each record's data, an S3 object is streamed once)."""
    lines, offset = [], 0
    with storage.open_stream(record_file) as f:
        skip = f.seekable()
        while offset < size:
            end = _record_end(f, record_file, offset)
            if end > size:
                raise _truncated(record_file, offset)
            if skip:
                f.seek(end)
            elif len(_read_exactly(f, end - offset - HEADER)) < end - offset - HEADER:
                raise _truncated(record_file, offset)
            lines.append(f"{offset} {end - offset}\n")
            offset = end
    return "".join(lines), len(lines)


def read_records(record_file: str, start: int, stop: int) -> Iterator[bytes]:
    """The data of the records in bytes ``[start, stop)`` of a TFRecord file, local or
    ``s3://`` (one streamed read); a record cut short is a :class:`DataError` naming the file
    and where."""
    return (data for _, data in records_at(record_file, start, stop))


def records_at(
    record_file: str, start: int, stop: int, expect: str | None = None
) -> Iterator[tuple[int, bytes]]:
    """Each record in bytes ``[start, stop)`` of a TFRecord file as :func:`read_records` reads
    it, with the offset of its data in the file; with ``expect``, the file's identity
    (:func:`~daliaug.sources.storage.open_stream`)."""
    with storage.open_stream(record_file, start, stop, expect) as f:
        offset = start
        while offset < stop:
            end = _record_end(f, record_file, offset)
            if end > stop:
                raise _truncated(record_file, offset)
            body = _read_exactly(f, end - offset - HEADER)
            if len(body) < end - offset - HEADER:
                raise _truncated(record_file, offset)
            yield offset + HEADER, body[:-FOOTER]
            offset = end
