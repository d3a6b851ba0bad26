"""Where shards live: local files or ``s3://bucket/key`` objects, listed, streamed whole or
read by byte range. Every failure is a :class:`~daliaug.errors.DataError` naming the file, or
the bucket and key, and what failed (no credentials, no such bucket or key, access denied,
the server unreachable); S3 calls have timeouts, so none hangs.

S3 goes through boto3, which takes its credentials and endpoint from the usual AWS variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``...).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, BinaryIO

from daliaug.cache import write_atomically
from daliaug.errors import DataError
from daliaug.sources.checks import stat_key

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
        # botocore 1.3x fails on a server error (5xx) whose body it wraps for a checksum,
        # with an AttributeError instead of retrying and naming it; ETags check what is read
        response_checksum_validation="when_required",
        max_pool_connections=S3_READERS,
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
            "PreconditionFailed": CHANGED,
            "412": CHANGED,
        }.get(code, f"{code}: {error.get('Message', e)}")
        raise DataError(f"{where}: cannot {doing}: {why}") from e
    except (bce.BotoCoreError, OSError) as e:
        endpoint = os.environ.get("AWS_ENDPOINT_URL", "AWS")
        raise DataError(
            f"{where}: cannot {doing}: the S3 server is unreachable or broke off "
            f"(endpoint {endpoint}): {type(e).__name__}: {e}"
        ) from e


@dataclass
class Found:
    """What a listing found: the files (or objects) in order, and what it left out beside
    them (other files, folders, a file listed twice), with the reason."""

    files: list[str] = field(default_factory=list)
    ignored: dict[str, str] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    """The :func:`identity` of each object the bucket's listing gave one for (its size and
    ETag): no request per object to look it up."""


def list_files(locations: Sequence[str], wanted: Callable[[str], bool], what: str) -> Found:
    """The files at each of ``locations`` (see :func:`_list_local`, :func:`list_objects`)
    whose names are ``wanted`` (``what`` they are, for the messages), each location's sorted;
    a file that two locations give is read once (the first), and named in ``ignored``. None
    at a location is a :class:`DataError` naming it."""
    found = Found()
    seen: dict[str, str] = {}
    for location in locations:
        if is_s3(location):
            objects = list_objects(location, lambda key: wanted(key.rsplit("/", 1)[-1]))
            here = Found(list(objects), identities={k: v for k, v in objects.items() if v})
        else:
            here = _list_local(location, wanted, what)
        if not here.files:
            raise DataError(f"source.path: found no {what} files at {location}")
        found.ignored.update(here.ignored)
        for file in here.files:
            same = file if is_s3(file) else os.path.realpath(file)
            if same in seen:
                found.ignored[file] = f"the file {seen[same]} again (listed twice); read once"
                continue
            seen[same] = file
            found.files.append(file)
            if file in here.identities:
                found.identities[file] = here.identities[file]
    return found


def _list_local(location: str, wanted: Callable[[str], bool], what: str) -> Found:
    """The file ``location`` names (taken literally, whatever its name holds), every wanted
    file in the folder it names (not recursive; the other entries in ``ignored``), or, where
    no such file or folder exists, every wanted file its glob matches (absolute paths). Each
    must be a regular file (a device or a pipe is refused unread)."""
    root = os.path.abspath(Path(location).expanduser())
    if not os.path.lexists(root):
        found = Found()
        for path in sorted(glob.glob(root)):
            _sort(path, wanted, what, found)
        return found
    if not os.path.isdir(root):
        return Found([_regular(root)])
    found = Found()
    for path in sorted(os.path.join(root, name) for name in os.listdir(root)):
        _sort(path, wanted, what, found)
    return found


def _sort(path: str, wanted: Callable[[str], bool], what: str, found: Found) -> None:
    """``path`` into ``found``'s files where it is a wanted file, else into its ``ignored``."""
    if os.path.isdir(path):
        found.ignored[path] = f"a folder (no {what} files are looked for in subfolders)"
    elif not wanted(os.path.basename(path)):
        found.ignored[path] = f"not a {what} file"
    else:
        found.files.append(_regular(path))


def _regular(path: str) -> str:
    """``path``, a :class:`DataError` naming it where it is no regular file or cannot be
    looked up (so that a device or a pipe is never read: ``/dev/zero`` would never end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise DataError(f"source.path: cannot read {path}: {e.strerror or e}") from e
    if not stat.S_ISREG(mode):
        raise DataError(
            f"source.path: {path} is not a regular file but a device, pipe or socket; it is "
            "not read"
        )
    return path


GLOB = "*?["
"""The characters that make an S3 key a pattern (:func:`fnmatch.fnmatchcase`'s)."""


def list_objects(url: str, wanted: Callable[[str], bool]) -> dict[str, str]:
    """The objects at ``url`` whose keys are ``wanted``, sorted, each with its :func:`identity`
    as the listing gave it (``""`` where it gave no ETag, or for an object named exactly):
    the object itself where its key is wanted (taken literally where it exists, whatever its
    key holds); else every wanted object under ``url`` as a prefix (a folder); where there is
    none and the key is a glob, the objects under the part before its first pattern character
    that match it."""
    bucket, key = split_s3(url)
    pattern = next((i for i, c in enumerate(key) if c in GLOB), None)
    if wanted(key) and (pattern is None or list(_keys(bucket, key, 1))[:1] == [key]):
        return {url: ""}
    folder = key if not key or key.endswith("/") else f"{key}/"
    keys = {k: v for k, v in _keys(bucket, folder).items() if wanted(k)}
    if not keys and pattern is not None:
        under = _keys(bucket, key[:pattern])
        keys = {k: v for k, v in under.items() if wanted(k) and fnmatchcase(k, key)}
    return {f"{S3}{bucket}/{k}": keys[k] for k in sorted(keys)}


def _keys(bucket: str, prefix: str, most: int | None = None) -> dict[str, str]:
    """The keys under ``prefix`` (the ``most`` first where given, in the server's order),
    each with its :func:`identity` where the listing gives its ETag (else ``""``)."""
    with s3_errors(bucket, prefix, "list the objects"):
        if most is not None:
            pages = [_client().list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=most)]
        else:
            paginator = _client().get_paginator("list_objects_v2")
            pages = list(paginator.paginate(Bucket=bucket, Prefix=prefix))
    return {
        o["Key"]: _s3_identity({"ContentLength": o["Size"], "ETag": o["ETag"]})
        if o.get("ETag")
        else ""
        for page in pages
        for o in page.get("Contents", [])
    }


def identities(locations: Sequence[str]) -> dict[str, str]:
    """The :func:`identity` of each of ``locations`` that is had cheaply: an S3 object's from
    one listing of the keys its bucket's objects among them share as a prefix (where it
    gives ETags, and the listing is allowed), a local file's from a ``stat``; the others left
    out (reading them names what fails)."""
    out: dict[str, str] = {}
    buckets: dict[str, set[str]] = {}
    for location in locations:
        if is_s3(location):
            bucket, key = split_s3(location)
            buckets.setdefault(bucket, set()).add(key)
        else:
            with contextlib.suppress(OSError):
                out[location] = _stat_identity(os.stat(Path(location).expanduser()))
    for bucket, keys in buckets.items():
        with contextlib.suppress(DataError):
            prefix = os.path.commonprefix(sorted(keys))  # noqa: RUF071 (a key prefix, not a path)
            listed = _keys(bucket, prefix)
            out.update({f"{S3}{bucket}/{k}": v for k, v in listed.items() if v and k in keys})
    return out


@contextlib.contextmanager
def open_stream(
    location: str, start: int = 0, stop: int | None = None, expect: str | None = None
) -> Iterator[BinaryIO]:
    """The file or object at ``location``, to read from byte ``start`` (S3: one streamed GET,
    of the bytes before ``stop`` where given; read errors named as those of
    :func:`s3_errors`). With ``expect`` (its :func:`identity`), a :class:`DataError` names
    it where what was read is not that file or object (:func:`unchanged`)."""
    if not is_s3(location):
        try:
            f = open(Path(location).expanduser(), "rb")  # noqa: SIM115 (closed below)
        except OSError as e:
            raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
        with f:
            try:
                f.seek(start)
                yield f
                now = _stat_identity(os.fstat(f.fileno()))
            except OSError as e:
                raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
        unchanged(location, expect, now)
        return
    bucket, key = split_s3(location)
    span = {} if start == 0 and stop is None else {"Range": f"bytes={start}-{_last(stop)}"}
    with s3_errors(bucket, key, "read the object"):
        got = _client().get_object(Bucket=bucket, Key=key, **span, **_if_match(expect))
        unchanged(location, expect, _s3_identity(got))
        try:
            yield got["Body"]
        finally:
            got["Body"].close()


def _last(stop: int | None) -> str:
    return "" if stop is None else str(stop - 1)


def read_object(location: str) -> tuple[bytes, str]:
    """The bytes of the file or object at ``location`` and its :func:`identity`, taken from
    the same read (the open file, the GET's response)."""
    if is_s3(location):
        bucket, key = split_s3(location)
        with s3_errors(bucket, key, "read the object"):
            got = _client().get_object(Bucket=bucket, Key=key)
            return got["Body"].read(), _s3_identity(got)
    try:
        with open(Path(location).expanduser(), "rb") as f:
            return f.read(), _stat_identity(os.fstat(f.fileno()))
    except OSError as e:
        raise DataError(f"cannot read {location}: {e.strerror or e}") from e


S3_READERS = 16
"""Byte ranges of S3 objects read at once."""


@functools.cache
def _s3_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(S3_READERS, thread_name_prefix="daliaug-s3")


def read_ranges(
    ranges: Sequence[tuple[str, int, int]], identities: Mapping[str, str]
) -> list[bytes]:
    """The bytes of each ``(location, offset, size)``: a local file opened once for all its
    ranges, S3 ranges read :data:`S3_READERS` at a time (one GET each); a :class:`DataError`
    names a file or object that is not the one of its ``identities`` entry (taken when it was
    listed): the bytes handed on are those of the file listed (:func:`unchanged`)."""
    out: list[bytes] = [b""] * len(ranges)
    local: dict[str, list[int]] = {}
    remote = []
    for i, (location, _, _) in enumerate(ranges):
        if is_s3(location):
            remote.append(i)
        else:
            local.setdefault(location, []).append(i)
    read = _s3_pool().map(lambda i: _s3_range(*ranges[i], identities[ranges[i][0]]), remote)
    for i, data in zip(remote, read, strict=True):
        out[i] = data
    for location, indices in local.items():
        try:
            with open(Path(location).expanduser(), "rb") as f:
                for i in indices:
                    out[i] = os.pread(f.fileno(), ranges[i][2], ranges[i][1])
                now = _stat_identity(os.fstat(f.fileno()))
        except OSError as e:
            raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e
        unchanged(location, identities[location], now)
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


def _s3_range(url: str, offset: int, size: int, expect: str) -> bytes:
    bucket, key = split_s3(url)
    with s3_errors(bucket, key, f"read bytes {offset}-{offset + size - 1}"):
        got = _client().get_object(
            Bucket=bucket, Key=key, Range=f"bytes={offset}-{offset + size - 1}", **_if_match(expect)
        )
        unchanged(url, expect, _s3_identity(got))
        return got["Body"].read()


def identity(location: str) -> str:
    """What tells the contents of the file or object at ``location`` apart: a local file's
    size, modification time, inode and status-change time (:func:`~daliaug.sources.checks.
    file_key`: a file rewritten in place at the same size and time gets a new status-change
    time, one replaced a new inode); an object's size and ETag (its last modification time
    where the server gives no ETag)."""
    if is_s3(location):
        bucket, key = split_s3(location)
        with s3_errors(bucket, key, "look the object up"):
            return _s3_identity(_client().head_object(Bucket=bucket, Key=key))
    try:
        return _stat_identity(os.stat(Path(location).expanduser()))
    except OSError as e:
        raise DataError(f"cannot read shard {location}: {e.strerror or e}") from e


def _stat_identity(status: os.stat_result) -> str:
    return " ".join(map(str, stat_key(status)))


ETAG = "etag "
"""How an S3 identity that holds an ETag spells it (``size etag "..."``)."""


def _s3_identity(response: Mapping[str, Any]) -> str:
    """The :func:`identity` of the object a HEAD or GET ``response`` is of: its whole size
    (a ranged GET's ``Content-Range`` says it) and ETag (else its modification time)."""
    whole = str(response.get("ContentRange", "")).rpartition("/")[2]
    size = whole if whole.isdigit() else str(response["ContentLength"])
    tag = str(response.get("ETag") or "").strip('"')  # (quoted by a GET, not by every listing)
    return f"{size} {ETAG}{tag}" if tag else f"{size} modified {response.get('LastModified')}"


def _if_match(expect: str | None) -> dict[str, str]:
    """The ``IfMatch`` of a GET that only an object of identity ``expect`` may answer (a
    server that honours it answers another with 412, which :func:`s3_errors` names)."""
    if expect is None or ETAG not in expect:
        return {}
    return {"IfMatch": f'"{expect.split(ETAG, 1)[1]}"'}


def unchanged(location: str, expect: str | None, now: str) -> None:
    """A :class:`DataError` naming ``location`` where its identity ``now`` (taken from the
    read itself) is not ``expect``, the one it had when it was listed (``None``: never
    listed)."""
    if expect is not None and now != expect:
        raise DataError(f"{location} {CHANGED}")


CHANGED = (
    "changed after daliaug listed it (another size, time or ETag: rewritten or replaced); "
    "run again to list it anew"
)


def write_text(location: str, text: str) -> None:
    """``text`` as the file (written whole, then renamed into place) or object at
    ``location``; a :class:`DataError` names it where it cannot be written."""
    if is_s3(location):
        bucket, key = split_s3(location)
        with s3_errors(bucket, key, "write the object"):
            _client().put_object(Bucket=bucket, Key=key, Body=text.encode())
        return
    try:
        write_atomically(Path(location).expanduser(), text)
    except OSError as e:
        raise DataError(f"cannot write {location}: {e.strerror or e}") from e


def upload(files: Sequence[tuple[Path, str]], sent: Callable[[int], None] | None = None) -> None:
    """Each ``(path, location)``: the file at ``path`` as the object at the ``s3://``
    ``location`` (in parts where it is large: boto3's transfer), :data:`S3_READERS` at a
    time, ``sent`` told the bytes of each part as it goes; a :class:`DataError` names the
    first that cannot be written."""
    list(_s3_pool().map(lambda file: _upload(*file, sent), files))


def _upload(path: Path, location: str, sent: Callable[[int], None] | None) -> None:
    from boto3.exceptions import S3UploadFailedError

    bucket, key = split_s3(location)
    with s3_errors(bucket, key, "write the object"):
        try:
            _client().upload_file(str(path), bucket, key, Callback=sent)
        except S3UploadFailedError as e:  # (boto3's transfer wraps the server's error)
            cause = e.__context__
            if cause is not None:
                raise cause from None
            raise DataError(f"{location}: cannot write the object: {e}") from e


def delete(locations: Sequence[str]) -> None:
    """The objects at the ``s3://`` ``locations`` deleted (a :class:`DataError` names the
    first that could not be)."""
    by_bucket: dict[str, list[str]] = {}
    for location in locations:
        bucket, key = split_s3(location)
        by_bucket.setdefault(bucket, []).append(key)
    for bucket, keys in by_bucket.items():
        for start in range(0, len(keys), 1000):  # (S3 deletes at most 1,000 keys a request)
            part = keys[start : start + 1000]
            with s3_errors(bucket, part[0], "delete the object"):
                done = _client().delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": k} for k in part]}
                )
            for error in done.get("Errors", []):
                raise DataError(
                    f"{S3}{bucket}/{error.get('Key')}: cannot delete the object: "
                    f"{error.get('Code')}: {error.get('Message')}"
                )


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
