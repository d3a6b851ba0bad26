"""Where shards live: local files or ``s3://bucket/key`` objects, listed, streamed whole or
read by byte range. Every failure is a :class:`~daliaug.errors.DataError` naming the file, or
the bucket and key, and what failed (no credentials, no such bucket or key, access denied,
the server unreachable); S3 calls have timeouts, so none hangs.

S3 goes through boto3, which takes its credentials and endpoint from the usual AWS variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``...).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import glob
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

from daliaug.errors import DataError

S3 = "s3://"
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 20.0
ATTEMPTS = 3
"""S3 calls: seconds to connect, seconds without a byte, tries in all (then a DataError)."""


def is_s3(location: str) -> bool:
    return location.startswith(S3)


def split_s3(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://bucket/key``."""
    bucket, _, key = url[len(S3) :].partition("/")
    if not bucket:
        raise DataError(f"source.path: {url} names no bucket (expected s3://bucket/prefix)")
    return bucket, key


@functools.cache
def _client() -> Any:
    """One boto3 S3 client per process (clients are thread-safe), of a session of its own:
    the AWS variables as they are when it is made."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as e:
        raise DataError(
            "source.path: s3:// paths need boto3 (pip install boto3), which is not installed"
        ) from e
    config = Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"max_attempts": ATTEMPTS, "mode": "standard"},
    )
    return boto3.session.Session().client("s3", config=config)


@contextlib.contextmanager
def s3_errors(bucket: str, key: str, doing: str) -> Iterator[None]:
    """Any failure inside as a :class:`DataError` naming the bucket, the key, what was being
    done and what failed."""
    from botocore import exceptions as bce

    where = f"s3://{bucket}/{key}"
    try:
        yield
    except bce.NoCredentialsError as e:
        raise DataError(
            f"{where}: no S3 credentials to {doing} with (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
        ) from e
    except bce.ClientError as e:
        error = e.response.get("Error", {})
        code = str(error.get("Code", ""))
        why = {
            "NoSuchBucket": f"no such bucket {bucket!r}",
            "NoSuchKey": f"no such key {key!r} in bucket {bucket!r}",
            "404": f"no such key {key!r} in bucket {bucket!r}",
            "AccessDenied": "access denied",
            "403": "access denied",
            "InvalidAccessKeyId": "the access key is not known to the server",
            "SignatureDoesNotMatch": "the secret key does not match the access key",
        }.get(code, f"{code}: {error.get('Message', e)}")
        raise DataError(f"{where}: cannot {doing}: {why}") from e
    except (bce.BotoCoreError, OSError) as e:
        endpoint = os.environ.get("AWS_ENDPOINT_URL", "AWS")
        raise DataError(
            f"{where}: cannot {doing}: the S3 server ({endpoint}) is unreachable or broke off: "
            f"{type(e).__name__}: {e}"
        ) from e


def list_files(location: str, suffix: str) -> list[str]:
    """The files ending with ``suffix`` at ``location``: a file, a folder (not recursive), a
    glob (absolute paths), an ``s3://bucket/key`` object, a glob of keys or every such object
    under an ``s3://bucket/prefix`` (see :func:`list_objects`); sorted. None is a
    :class:`DataError` naming the location."""
    if is_s3(location):
        found = _list_s3(location, suffix)
    else:
        root = Path(os.path.abspath(Path(location).expanduser()))
        if root.is_dir():
            found = sorted(str(p) for p in root.iterdir() if p.name.endswith(suffix))
        else:
            found = sorted(glob.glob(str(root)))
    if not found:
        raise DataError(f"source.path: found no {suffix} files at {location}")
    return found


def _list_s3(url: str, suffix: str) -> list[str]:
    return list_objects(url, lambda key: key.endswith(suffix))


GLOB = "*?["
"""The characters that make an S3 key a pattern (:func:`fnmatch.fnmatchcase`'s)."""


def list_objects(url: str, wanted: Callable[[str], bool]) -> list[str]:
    """The objects at ``url`` whose keys are ``wanted``, sorted: the object itself where its
    key is wanted; where the key is a glob, the objects under the part before its first
    pattern character that match it; else every wanted object under ``url`` as a prefix
    (a folder)."""
    bucket, prefix = split_s3(url)
    pattern = next((i for i, c in enumerate(prefix) if c in GLOB), None)
    if pattern is None and wanted(prefix):
        return [url]
    glob_ = prefix

    def keep(key: str) -> bool:
        return wanted(key) and (pattern is None or fnmatch.fnmatchcase(key, glob_))

    if pattern is not None:
        prefix = prefix[:pattern]
    elif prefix and not prefix.endswith("/"):
        prefix += "/"
    keys: list[str] = []
    with s3_errors(bucket, prefix, "list the objects"):
        for page in (
            _client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        ):
            keys += [o["Key"] for o in page.get("Contents", []) if keep(o["Key"])]
    return [f"{S3}{bucket}/{key}" for key in sorted(keys)]


@contextlib.contextmanager
def open_stream(location: str, start: int = 0, stop: int | None = None) -> Iterator[BinaryIO]:
    """The file or object at ``location``, to read from byte ``start`` (S3: one streamed GET,
    of the bytes before ``stop`` where given; read errors named as those of
    :func:`s3_errors`)."""
    if not is_s3(location):
        try:
            f = open(Path(location).expanduser(), "rb")  # noqa: SIM115 (closed below)
        except OSError as e:
            raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
        with f:
            try:
                f.seek(start)
                yield f
            except OSError as e:
                raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
        return
    bucket, key = split_s3(location)
    span = {} if start == 0 and stop is None else {"Range": f"bytes={start}-{_last(stop)}"}
    with s3_errors(bucket, key, "read the object"):
        body = _client().get_object(Bucket=bucket, Key=key, **span)["Body"]
        try:
            yield body
        finally:
            body.close()


def _last(stop: int | None) -> str:
    return "" if stop is None else str(stop - 1)


S3_READERS = 16
"""Byte ranges of S3 objects read at once."""


@functools.cache
def _s3_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(S3_READERS, thread_name_prefix="daliaug-s3")


def read_ranges(ranges: Sequence[tuple[str, int, int]]) -> list[bytes]:
    """The bytes of each ``(location, offset, size)``: a local file opened once for all its
    ranges, S3 ranges read :data:`S3_READERS` at a time (one GET each)."""
    out: list[bytes] = [b""] * len(ranges)
    local: dict[str, list[int]] = {}
    remote = []
    for i, (location, _, _) in enumerate(ranges):
        if is_s3(location):
            remote.append(i)
        else:
            local.setdefault(location, []).append(i)
    read = _s3_pool().map(lambda i: _s3_range(*ranges[i]), remote)
    for i, data in zip(remote, read, strict=True):
        out[i] = data
    for location, indices in local.items():
        try:
            with open(Path(location).expanduser(), "rb") as f:
                for i in indices:
                    out[i] = os.pread(f.fileno(), ranges[i][2], ranges[i][1])
        except OSError as e:
            raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
    for (location, offset, size), data in zip(ranges, out, strict=True):
        if len(data) != size:
            raise DataError(
                f"shard {location} ends before byte {offset + size} (it changed or was cut "
                "after it was listed)"
            )
    return out


def _forget_s3() -> None:
    """A forked child makes its own S3 client and threads (the parent's do not survive)."""
    _client.cache_clear()
    _s3_pool.cache_clear()


os.register_at_fork(after_in_child=_forget_s3)


def _s3_range(url: str, offset: int, size: int) -> bytes:
    bucket, key = split_s3(url)
    with s3_errors(bucket, key, f"read bytes {offset}-{offset + size - 1}"):
        got = _client().get_object(
            Bucket=bucket, Key=key, Range=f"bytes={offset}-{offset + size - 1}"
        )
        return got["Body"].read()


def identity(location: str) -> str:
    """What identifies the contents of the file or object at ``location``: its size and
    modification time, or its size and ETag."""
    if is_s3(location):
        bucket, key = split_s3(location)
        with s3_errors(bucket, key, "look the object up"):
            head = _client().head_object(Bucket=bucket, Key=key)
        return f"{head['ContentLength']} {head.get('ETag', '')}"
    try:
        stat = os.stat(Path(location).expanduser())
    except OSError as e:
        raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
    return f"{stat.st_size} {stat.st_mtime_ns}"


def read_text(location: str) -> str | None:
    """The UTF-8 text at ``location``, ``None`` if there is no such file or key."""
    if not is_s3(location):
        path = Path(location).expanduser()
        return path.read_text() if path.is_file() else None
    bucket, key = split_s3(location)
    from botocore.exceptions import ClientError

    with s3_errors(bucket, key, "read the object"):
        try:
            return _client().get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
