"""A folder listing kept between starts (:mod:`daliaug.sources.kept_listing`): read back, not
walked, while no folder it walked changed; walked again, and right, after a file is added,
removed or renamed; never kept from folders changed just before; one listing per host when
processes start together."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from daliaug.sources import kept_listing
from daliaug.sources.kept_listing import list_images
from daliaug.sources.listing import walk_images


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _tree(root: Path, age: float = 10.0) -> Path:
    """Two class folders (one with a sub-folder and a file of another kind), every file and
    folder dated ``age`` seconds ago."""
    for name in ("a/1.jpg", "a/2.png", "a/sub/3.jpeg", "a/notes.txt", "b/x y.jpg", "b/é.jpg"):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not decoded by the listing")
    _age(root, age)
    return root


def _age(root: Path, age: float) -> None:
    then = time.time() - age
    for path in [root, *root.rglob("*")]:
        os.utime(path, (then, then))


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the walks of the folders from now on."""
    walks: list[int] = []

    def counted(*args: object) -> object:
        walks.append(1)
        return walk_images(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(kept_listing, "walk_images", counted)
    return walks


def _folders(root: Path) -> list[Path]:
    return [root / "a", root / "b"]


def _same(first: object, second: object) -> bool:
    """Equal in every field a walk gives (the names' digest is the kept listing's)."""
    return {**vars(first), "digest": ""} == {**vars(second), "digest": ""}


def test_an_unchanged_tree_is_read_back_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "data")
    walks = _walks(monkeypatch)
    first = list_images(_folders(root), root)
    assert sorted(map(os.path.basename, first.all_images)) == [
        "1.jpg",
        "2.png",
        "3.jpeg",
        "x y.jpg",
        "é.jpg",
    ]
    assert list(first.ignored) == [str(root / "a" / "notes.txt")]
    again = list_images(_folders(root), root)
    assert walks == [1] and _same(again, first)
    assert again.digest == first.digest and len(first.digest) == 64
    assert _same(
        again, walk_images([str(f) for f in _folders(root)], root, (".jpg", ".jpeg", ".png"))[0]
    )


@pytest.mark.parametrize("change", ["add", "remove", "rename", "add in a sub-folder"])
def test_a_changed_folder_is_walked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    root = _tree(tmp_path / "data")
    list_images(_folders(root), root)
    walks = _walks(monkeypatch)
    if change == "add":
        (root / "b" / "new.jpg").write_bytes(b"x")
    elif change == "remove":
        (root / "a" / "1.jpg").unlink()
    elif change == "rename":
        (root / "b" / "x y.jpg").rename(root / "b" / "z.jpg")
    else:
        (root / "a" / "sub" / "4.jpg").write_bytes(b"x")
    listing = list_images(_folders(root), root)
    assert walks == [1]
    fresh = walk_images([str(f) for f in _folders(root)], root, (".jpg", ".jpeg", ".png"))[0]
    assert _same(listing, fresh)


def test_folders_changed_just_before_the_listing_keep_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    root = _tree(tmp_path / "data", age=0.0)
    walks = _walks(monkeypatch)
    list_images(_folders(root), root)
    list_images(_folders(root), root)
    assert walks == [1, 1]
    assert not list((cache / "listings").glob("*.listing"))


def test_a_damaged_kept_listing_is_walked_again_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    root = _tree(tmp_path / "data")
    first = list_images(_folders(root), root)
    (kept,) = (cache / "listings").glob("*.listing")
    kept.write_bytes(kept.read_bytes()[:-5])
    walks = _walks(monkeypatch)
    assert _same(list_images(_folders(root), root), first) and walks == [1]
    assert _same(list_images(_folders(root), root), first) and walks == [1]


def test_processes_starting_together_list_once_per_host(tmp_path: Path) -> None:
    """Three processes list the same tree at once; the walk (slowed to 1 s) runs in one of
    them, the others wait for it and read what it kept; all get the same files."""
    root = _tree(tmp_path / "data")
    log = tmp_path / "walks.log"
    script = textwrap.dedent(
        f"""
        import json, time
        from pathlib import Path
        from daliaug.sources import kept_listing
        from daliaug.sources.listing import walk_images

        def slow(*args):
            with open({str(log)!r}, "a") as f:
                f.write("walk\\n")
            time.sleep(1.0)
            return walk_images(*args)

        kept_listing.walk_images = slow
        root = Path({str(root)!r})
        listing = kept_listing.list_images([root / "a", root / "b"], root)
        print(json.dumps(listing.all_images))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    children = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
        for _ in range(3)
    ]
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert all(child.returncode == 0 for child in children)
    assert log.read_text() == "walk\n"
    assert len(set(outputs)) == 1 and b"x y.jpg" in outputs[0]


def test_a_cache_that_cannot_be_written_lists_anyway_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from daliaug import cache as cache_module
    from daliaug.errors import CacheWarning

    root = _tree(tmp_path / "data")
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DALIAUG_CACHE", str(blocker))
    monkeypatch.setattr(cache_module, "_WARNED", set())
    with pytest.warns(CacheWarning, match="DALIAUG_CACHE"):
        listing = list_images(_folders(root), root)
    fresh = walk_images([str(f) for f in _folders(root)], root, (".jpg", ".jpeg", ".png"))[0]
    assert _same(listing, fresh)


def test_a_listing_with_a_folder_it_could_not_read_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    """A sub-folder that cannot be read (named in ``ignored``) keeps nothing: the next start
    walks again, and lists its files once it can read it."""
    root = _tree(tmp_path / "data")
    unreadable = str(root / "a" / "sub")
    scandir = os.scandir

    def failing(path: str) -> object:
        if str(path) == unreadable:
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", failing)
    first = list_images(_folders(root), root)
    assert first.ignored[unreadable].startswith("cannot list the folder")
    assert not list((cache / "listings").glob("*.listing"))
    monkeypatch.setattr(os, "scandir", scandir)
    again = list_images(_folders(root), root)
    assert str(root / "a" / "sub" / "3.jpeg") in again.all_images
