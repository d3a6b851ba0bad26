"""Where a command writes: its OUT taken as given, a file in the way of its folders named, and
a folder of outputs (``convert``'s shards) written whole beside it and renamed into place, so
that no run leaves a mix of two runs' files (under an ``s3://`` prefix: uploaded, an earlier
run's other objects deleted, its marker last)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from daliaug.errors import ConfigError
from daliaug.sources.storage import delete, list_objects, upload


def make_parent(out: Path, what: str) -> None:
    """The folders ``out`` goes in, made; a :class:`ConfigError` starting with ``what`` where a
    file stands in their way or they cannot be made."""
    for folder in [out.parent, *out.parent.parents]:
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise ConfigError(f"{what} {out}: {folder} is a file, not a folder")
            break
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{what} {out}: cannot make its folder: {e.strerror or e}") from None


@contextlib.contextmanager
def replaced_folder(out: Path, what: str, overwrite: bool, marker: str) -> Iterator[Path]:
    """A new folder beside ``out`` to write into, renamed to ``out`` once the block is done
    (deleted if it fails). ``out`` must be new or empty; with ``overwrite`` it may hold an
    earlier run's output (its ``marker`` file), which is then replaced whole. Each refusal is a
    :class:`ConfigError` starting with ``what``."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{what} {out} is a file; give a folder to write into")
    _may_replace(
        str(out),
        sorted(p.name for p in out.iterdir()) if out.is_dir() else [],
        what,
        overwrite,
        marker,
    )
    make_parent(out, what)
    try:
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    except OSError as e:
        raise ConfigError(f"{what} {out}: cannot write beside it: {e.strerror or e}") from None
    try:
        yield tmp
        old = tmp.with_suffix(".old")
        if out.is_dir():
            os.rename(out, old)
        try:
            os.rename(tmp, out)
        except OSError:
            if old.is_dir():
                os.rename(old, out)  # the earlier output back, whole
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def uploaded_folder(
    out: str,
    what: str,
    overwrite: bool,
    marker: str,
    finish: Callable[[], None] | None = None,
    uploading: Callable[[int], Callable[[int], None]] | None = None,
) -> Iterator[Path]:
    """A local folder (not made yet) to write into, uploaded under the ``s3://`` prefix
    ``out`` once the block is done: its files but ``marker``, then the objects of an earlier
    run there that were not written again deleted, then ``finish`` called (what must follow
    the upload), and ``marker`` last (a run cut short leaves none). The prefix must hold
    nothing; with ``overwrite``, an earlier run's output (its ``marker``). Refusals as
    :func:`replaced_folder`'s. ``uploading``, told the bytes to upload, gives what to tell
    the bytes sent as they go (progress)."""
    out = out.rstrip("/")
    objects = list_objects(f"{out}/", lambda key: not key.endswith("/"))
    held = [url.removeprefix(f"{out}/") for url in objects]
    _may_replace(out, held, what, overwrite, marker)
    with tempfile.TemporaryDirectory(prefix="daliaug-upload-") as scratch:
        local = Path(scratch) / "out"
        yield local
        names = sorted(p.name for p in local.iterdir())
        files = [(local / name, f"{out}/{name}") for name in names if name != marker]
        total = sum(path.stat().st_size for path, _ in files)
        upload(files, None if uploading is None else uploading(total))
        delete([f"{out}/{name}" for name in held if name not in names and name != marker])
        if finish is not None:
            finish()
        if marker in names:
            upload([(local / marker, f"{out}/{marker}")])


def _may_replace(out: str, held: list[str], what: str, overwrite: bool, marker: str) -> None:
    """A :class:`ConfigError` starting with ``what`` unless ``out``, which holds ``held``, is
    empty, or (``overwrite``) holds an earlier run's output (its ``marker``)."""
    shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
    if held and not overwrite:
        raise ConfigError(
            f"{what} {out} already holds {len(held)} files ({shown}); give --overwrite to "
            "replace an earlier conversion there, or a new or empty folder"
        )
    if held and marker not in held:
        raise ConfigError(
            f"{what} {out} holds files no conversion wrote (no {marker}: {shown}); "
            "--overwrite replaces only an earlier conversion's folder (a conversion cut short "
            f"writes no {marker}: delete what it left)"
        )
