"""Image files under folders: symbolic links followed where they lead out of the tree, each file
listed once, and whatever is left out named with the reason.

A link to a file is followed (its target is a sample). A link to a folder is followed only when
the folder lies outside the tree being listed and was not listed already: a link that leads
back into the tree (``ln -s .. a/up``, ``ln -s . a/loop``, a link into another class's folder)
would list samples twice or under another class's label, so it is skipped and named.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
_name = attrgetter("name")


@dataclass
class Listing:
    """What listing found: image files by folder, files left out and folder links skipped."""

    images: dict[str, list[str]] = field(default_factory=dict)
    """The image files (sorted) of each folder listed, by the folder as given."""
    ignored: dict[str, str] = field(default_factory=dict)
    """Files that are not listed (another extension, not a regular file), with the reason."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Links to folders that were not followed, with the reason."""
    digest: str = field(default="", compare=False)
    """The SHA-256 of the files' names and how many each folder holds, as
    :func:`~daliaug.sources.kept_listing.list_images` gives it: what a record of samples taken
    from these files holds their names by (:mod:`daliaug.sources.kept_samples`)."""

    @property
    def all_images(self) -> list[str]:
        return [path for paths in self.images.values() for path in paths]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def walk_images(
    folders: list[str], tree: Path, extensions: tuple[str, ...]
) -> tuple[Listing, dict[str, int] | None]:
    """The files with ``extensions`` under each of ``folders`` (which lie in or are linked from
    ``tree``), each real folder listed once, and each folder walked with its modification time
    (ns), taken before it was read (:func:`~daliaug.sources.kept_listing.list_images` keeps
    them for later starts); ``None`` for the times where a folder could not be read."""
    top = os.path.realpath(tree)
    listing = Listing()
    walked_times: dict[str, int] | None = {}
    walked: set[str] = set()
    for folder in folders:
        start = os.path.realpath(folder)
        reason = _loop(start, (top,), walked) if os.path.islink(folder) else None
        if reason is None and start in walked:
            reason = "a folder listed already"
        listing.images[str(folder)] = []
        if reason:
            listing.skipped[str(folder)] = f"a link to {start}, {reason}; not followed"
            continue
        walked.add(start)
        found: list[str] = []
        pending = [str(folder)]
        while pending:
            directory = pending.pop()
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:  # (the scan names the folder it cannot read)
                mtime = None
            read = _scan(directory, (top, start), walked, extensions, found, pending, listing)
            if walked_times is not None and read and mtime is not None:
                walked_times[directory] = mtime
            else:
                walked_times = None
        listing.images[str(folder)] = sorted(found)
    return listing, walked_times


def _scan(
    directory: str,
    roots: tuple[str, str],
    walked: set[str],
    extensions: tuple[str, ...],
    found: list[str],
    pending: list[str],
    listing: Listing,
) -> bool:
    """One folder's entries: images into ``found``, folders onto ``pending``, the rest named;
    whether the folder could be read."""
    try:
        entries = sorted(os.scandir(directory), key=_name)  # the same on every run
    except OSError as e:
        listing.ignored[directory] = f"cannot list the folder: {e.strerror or e}"
        return False
    for entry in entries:
        image = entry.name.lower().endswith(extensions)
        if image and entry.is_file():  # most entries: one test, from scandir's d_type
            found.append(entry.path)
        elif entry.is_dir():  # follows links; the d_type from scandir serves the others
            target = os.path.realpath(entry.path)
            reason = _loop(target, roots, walked) if entry.is_symlink() else None
            if reason:
                listing.skipped[entry.path] = f"a link to {target}, {reason}; not followed"
                continue
            walked.add(target)
            pending.append(entry.path)
        elif not image:
            listing.ignored[entry.path] = f"not a {'/'.join(extensions)} file"
        elif not os.path.exists(entry.path):
            found.append(entry.path)  # a broken link: the header check names it
        else:
            listing.ignored[entry.path] = "not a regular file (a pipe, socket or device)"
    return True


def _loop(target: str, roots: tuple[str, str], walked: set[str]) -> str | None:
    """Why following a folder link to ``target`` would list files twice, if it would."""
    for root in roots:
        if _inside(target, root):
            return "inside the tree being listed"
        if _inside(root, target):
            return "a folder that holds the tree being listed"
    if target in walked:
        return "a folder listed already"
    return None
