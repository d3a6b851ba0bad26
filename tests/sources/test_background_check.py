"""``source.check: background`` (issue 59): training starts while the files are decoded, and no
bad file reaches an engine. A bad file early in the epoch, late, or in its last batch; ``raise``
stops before any batch holding it, naming it; ``skip`` leaves its sample out, every other sample
exactly once per epoch, the batch count the listing gave, the same batches in every run; for
DALI on the CPU, TensorFlow and OpenCV, through NumPy, tf.data, JAX and PyTorch."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import threading
import warnings
from contextlib import closing
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from PIL import Image

import daliaug
import daliaug.sources.background as background
import daliaug.sources.base as base
from daliaug.errors import DataError, DataWarning, carried_error
from daliaug.sources.checks import file_key, header_and_key
from tests.helpers import config_for, prepared, structured_image, write_image_dir

COUNT, BATCH = 23, 4
"""Samples (labelled by their index) and batch size: 6 batches, the last of 3."""
BATCHES = -(-COUNT // BATCH)
POSITIONS = {"early": 1, "late": 17, "last batch": 21}
"""Where the bad file lies in the epoch (no shuffling: its index is its position)."""
RUNS = [
    ("cpu", "numpy"),
    ("cpu", "tensorflow"),
    ("tf", "tensorflow"),
    ("opencv", "numpy"),
    ("opencv", "tensorflow"),
    ("cpu", "jax"),
    ("opencv", "torch"),
]
"""Each engine through each output it serves here (DALI on the CPU, TensorFlow ops, OpenCV)."""


@pytest.fixture
def numbered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file list of :data:`COUNT` PNGs whose label is their index, and a cache of its own."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "data"
    write_image_dir(root, {"img": [structured_image(40 + i % 5, 48, seed=i) for i in range(COUNT)]})
    listing = root / "list.csv"
    listing.write_text("path,label\n" + "".join(f"img/{i:04d}.png,{i}\n" for i in range(COUNT)))
    return listing


def truncate(listing: Path, index: int) -> Path:
    path = listing.parent / "img" / f"{index:04d}.png"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # the header still reads: listing keeps it
    return path


def config(
    listing: Path, on_error: str, backend: str = "cpu", check: str = "background", **fields: Any
) -> daliaug.Config:
    source = {"type": "file_list", "path": str(listing), "check": check, "on_error": on_error}
    common = {"backend": backend, "batch_size": BATCH, "label_mode": "int"}
    return config_for(listing.parent, source=source, **{**common, **fields})


def epoch(dataset: Any) -> list[list[Any]]:
    """Each batch of one epoch as its lists of labels (and weights, if any)."""
    return [[np.asarray(part).tolist() for part in batch[1:]] for batch in dataset]


@pytest.mark.parametrize("where", POSITIONS)
@pytest.mark.parametrize(("backend", "framework"), RUNS)
def test_skip_leaves_a_bad_file_out_every_other_sample_once(
    numbered: Path, backend: str, framework: str, where: str
) -> None:
    bad = POSITIONS[where]
    path = truncate(numbered, bad)
    dataset = daliaug.make_dataset(config(numbered, "skip", backend), framework=framework)
    with pytest.warns(DataWarning, match=f"left out {path}"):
        first = epoch(dataset)
    second = epoch(dataset)
    for batches in (first, second):
        labels = [label for (batch,) in batches for label in batch]
        assert len(batches) == BATCHES  # the count the listing gave
        assert sorted(labels) == [i for i in range(COUNT) if i != bad]  # each once
        assert [len(b) for (b,) in batches] == [BATCH] * (BATCHES - 1) + [2]  # the last cut
    # the samples after the bad one moved up, in order
    assert [label for (batch,) in first for label in batch] == [i for i in range(COUNT) if i != bad]


@pytest.mark.parametrize(("backend", "framework"), RUNS)
def test_raise_stops_before_any_batch_holding_the_bad_file(
    numbered: Path, backend: str, framework: str
) -> None:
    where = list(POSITIONS.values())[RUNS.index((backend, framework)) % len(POSITIONS)]
    path = truncate(numbered, where)
    dataset = daliaug.make_dataset(config(numbered, "raise", backend), framework=framework)
    seen: list[int] = []
    with pytest.raises(Exception) as raised:
        for _, labels in dataset:
            seen.extend(np.asarray(labels).tolist())
    # a DataError, or where tf.data runs the OpenCV engine's Python, TensorFlow's carrying it
    error = raised.value if isinstance(raised.value, DataError) else carried_error(raised.value)
    assert isinstance(error, DataError) and error.exit_code == 3
    assert re.search(f"cannot be used: .*{path}.*on_error: skip", str(error))
    assert where not in seen


def test_skip_is_deterministic_and_shuffles_each_epoch(numbered: Path) -> None:
    for index in (0, 22):
        truncate(numbered, index)
    made = config(numbered, "skip", shuffle=True, seed=3)
    runs = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            dataset = daliaug.make_dataset(made, framework="numpy")
            runs.append([epoch(dataset) for _ in range(2)])
    assert runs[0] == runs[1]  # the same batches in every run, whoever checked which file
    first, second = runs[0]
    assert first != second
    for batches in (first, second):
        labels = sorted(label for (batch,) in batches for label in batch)
        assert labels == [i for i in range(1, COUNT - 1)]
        assert [len(b) for (b,) in batches] == [BATCH] * (BATCHES - 1) + [1]


def test_an_unweighted_epoch_whose_last_batch_went_whole_says_so(numbered: Path) -> None:
    for index in (0, 21, 22):  # 20 samples left: five full batches, the sixth kept
        truncate(numbered, index)
    dataset = daliaug.make_dataset(config(numbered, "skip"), framework="numpy")
    with pytest.warns(DataWarning, match="took this epoch's last batch whole"):
        batches = epoch(dataset)
    assert [len(b) for (b,) in batches] == [BATCH] * (BATCHES - 1) + [1]
    assert batches[-1] == [[1]]  # the epoch's first sample again


def test_a_weighted_epoch_short_of_samples_is_padded_with_weight_zero(numbered: Path) -> None:
    for index in (2, 20, 21, 22):  # more than the last batch holds
        truncate(numbered, index)
    weights = dict.fromkeys(range(COUNT), 1.0)
    dataset = daliaug.make_dataset(
        config(numbered, "skip"), class_weight=weights, framework="numpy"
    )
    with pytest.warns(DataWarning):
        batches = epoch(dataset)
    assert [len(labels) for labels, _ in batches] == [BATCH] * (BATCHES - 1) + [3]
    counted = [lab for labels, w in batches for lab, x in zip(labels, w, strict=True) if x > 0]
    assert sorted(counted) == [i for i in range(COUNT) if i not in (2, 20, 21, 22)]
    padding = [x for _, w in batches for x in w if x == 0]
    assert len(padding) == 4  # the positions the bad files left, repeats of weight 0


def test_drop_remainder_fills_full_batches_from_the_samples_it_left_out(numbered: Path) -> None:
    truncate(numbered, 3)
    dataset = daliaug.make_dataset(config(numbered, "skip", drop_remainder=True), framework="numpy")
    with pytest.warns(DataWarning):
        batches = epoch(dataset)
    labels = [label for (batch,) in batches for label in batch]
    assert [len(b) for (b,) in batches] == [BATCH] * (COUNT // BATCH)
    assert labels == [i for i in range(COUNT // BATCH * BATCH + 1) if i != 3]


def test_a_shard_keeps_the_batch_count_its_listing_gave(numbered: Path) -> None:
    """Every process of a distributed job lists the same files, so each computes the same
    count; its own bad files do not change it."""
    for index in (1, 5, 7):  # all in shard 0 of 2
        truncate(numbered, index)
    counts = []
    for shard in (0, 1):
        source = {
            "type": "file_list",
            "path": str(numbered),
            "check": "background",
            "on_error": "skip",
            "shard_id": shard,
            "num_shards": 2,
        }
        made = config_for(numbered.parent, source=source, batch_size=BATCH, label_mode="int")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            batches = epoch(daliaug.make_dataset(made, framework="numpy"))
        counts.append(len(batches))
    assert counts == [3, 3]  # 12 and 11 samples listed: 3 batches each, whatever is bad


def test_training_starts_before_the_check_ends_and_checks_each_batch_first(
    numbered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background thread is held after its first chunk: the first batches still come, their
    files decoded on the spot by the feed's thread; a bad file there is still left out."""
    truncate(numbered, 6)
    gate = threading.Event()
    real = background.screened
    calls: list[tuple[str, list[str]]] = []

    def screened(paths: list[str], undecodable: Any) -> Any:
        thread = threading.current_thread().name
        calls.append((thread, list(paths)))
        if thread == "daliaug-check" and len(calls) > 1:
            gate.wait(60)
        return real(paths, undecodable)

    monkeypatch.setattr(background, "CHUNK", 2)
    monkeypatch.setattr(background, "screened", screened)
    made = config(numbered, "skip")
    run = prepared(made)
    check = run.samples.background
    assert check is not None
    dataset = daliaug.make_dataset(made, samples=run.samples, framework="numpy")
    with pytest.warns(DataWarning, match="0006.png"):
        batches = iter(dataset)
        first = [np.asarray(next(batches)[1]).tolist() for _ in range(2)]
    assert first == [[0, 1, 2, 3], [4, 5, 7, 8]]
    assert not check.done.is_set()  # the thread is still held: the feed checked them
    assert any(name != "daliaug-check" for name, _ in calls)
    gate.set()
    assert check.done.wait(60)
    assert list(check.bad) == [str(numbered.parent / "img" / "0006.png")]


def test_a_file_changed_since_it_was_listed_is_not_used(numbered: Path) -> None:
    path = str(numbered.parent / "img" / "0004.png")
    size, mtime, inode, ctime = file_key(path)
    stale = {path: (size, mtime, inode, ctime - 1)}
    check = background.BackgroundCheck([path], stale, "test", lambda paths: iter(()), "skip")
    check.begin()
    assert check.done.wait(60)
    assert "0004.png changed after daliaug checked it" in (check.reasons([path])[0] or "")


@pytest.mark.parametrize("batches", [8, 2])
def test_the_thread_begins_after_the_first_batches_the_feed_checks_itself(
    numbered: Path, batches: int
) -> None:
    """The feed checks the files of an epoch's first :data:`~background.QUIET` batches itself
    and the thread begins at the next (or at the epoch's last batch, if it comes first), so
    that the first batch reaches training with no decoding beside it."""
    paths = [str(numbered.parent / "img" / f"{i:04d}.png") for i in range(2 * batches)]
    keys = {path: file_key(path) for path in paths}
    check = background.BackgroundCheck(paths, keys, "test", lambda _: iter(()), "raise")
    samples = SimpleNamespace(files={"path": paths})
    bounds = [(2 * k, 2 * k + 2) for k in range(batches)]
    epoch = background.CheckedEpoch(samples, check, np.arange(2 * batches), bounds, False)
    begins = min(background.QUIET, batches - 1)
    for k in range(batches):
        assert epoch.bound(k) == bounds[k]  # its files checked by the feed, or the thread
        assert check._begun.is_set() == (k >= begins), k
    assert check.done.wait(60) and not check.bad


def test_the_rest_of_an_epoch_keeps_its_positions_and_stops_at_a_bad_file(numbered: Path) -> None:
    """The rest of an epoch another world began (its samples fixed by position, padding at
    the end): each batch's files checked as it is made, the batch with a bad file refused
    by name before it is given, the padding where the rest says."""
    from daliaug.engines import engine

    bad = truncate(numbered, 5)
    paths = [str(numbered.parent / "img" / f"{i:04d}.png") for i in range(8)]
    keys = {path: file_key(path) for path in paths}
    undecodable = partial(engine("opencv").undecodable, device="cpu")
    check = background.BackgroundCheck(paths, keys, "test", undecodable, "raise")
    rest = [np.array([7, 1]), np.array([3, 5]), np.array([0, 7])]  # 7 again: padding
    bounds = [(0, 2), (2, 4), (4, 6)]
    epoch = background.CheckedRest(
        SimpleNamespace(files={"path": paths}),
        check,
        rest,
        bounds,
        lambda a, b: np.arange(a, b) < 5,
    )
    assert epoch.bound(0) == (0, 2) and epoch.batch(0).tolist() == [7, 1]
    with pytest.raises(DataError, match=re.escape(str(bad))):
        epoch.bound(1)
    assert epoch.valid(4, 6).tolist() == [True, False]


def test_a_later_start_decodes_no_file_the_cache_knows(
    numbered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feed's own check asks the cache for its batch's files (one query on their paths),
    so a later start decodes nothing, even before the thread has read the cache."""
    made = config(numbered, "raise")
    first = prepared(made).samples.background
    assert first is not None
    first.begin()  # (no feed here: nothing else begins it)
    assert first.done.wait(60)
    decoded: list[str] = []
    real = background.screened

    def screened(paths: list[str], undecodable: Any) -> Any:
        decoded.extend(paths)
        return real(paths, undecodable)

    monkeypatch.setattr(background, "screened", screened)
    dataset = daliaug.make_dataset(made, framework="numpy")
    assert sorted(label for (batch,) in epoch(dataset) for label in batch) == list(range(COUNT))
    assert decoded == []


def test_a_thread_that_fails_says_so_and_the_feed_still_checks_every_batch(
    numbered: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    truncate(numbered, 13)
    real = background.screened

    def screened(paths: list[str], undecodable: Any) -> Any:
        if threading.current_thread().name == "daliaug-check":
            raise RuntimeError("the decoder's library went away")
        return real(paths, undecodable)

    monkeypatch.setattr(background, "screened", screened)
    made = config(numbered, "skip")
    samples = prepared(made).samples
    dataset = daliaug.make_dataset(made, samples=samples, framework="numpy")
    with pytest.warns(DataWarning, match="0013.png"):
        labels = sorted(label for (batch,) in epoch(dataset) for label in batch)
    assert labels == [i for i in range(COUNT) if i != 13]
    check = samples.background
    assert check is not None and check.done.wait(60)
    assert check.failed == "RuntimeError: the decoder's library went away"
    assert "the background check stopped (RuntimeError" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("backend", "framework"), [("cpu", "numpy"), ("tf", "tensorflow"), ("opencv", "numpy")]
)
def test_sizes_read_as_files_are_checked_give_the_full_checks_pixels(
    numbered: Path, backend: str, framework: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing reads no header (a start costs the listing alone); each file's size is
    read with its key when the file is checked, and the batches (pixels and labels, a random
    crop drawn in each file's own pixels, images of five sizes) are those of ``check: full``."""
    chain = [{"type": "random_resized_crop", "scale": [0.3, 1.0]}, {"type": "flip"}]
    fields = {"shuffle": True, "transforms": chain, "image_size": 24}
    full = list(
        daliaug.make_dataset(
            config(numbered, "raise", backend, "full", **fields), framework=framework
        )
    )
    read: list[str] = []
    real = background.header_and_key

    def header_and_key(path: str, keyed: bool) -> Any:
        read.append(path)
        return real(path, keyed)

    monkeypatch.setattr(background, "header_and_key", header_and_key)
    made = config(numbered, "raise", backend, **fields)
    samples = prepared(made).samples
    assert read == [] and not samples.sized  # listed, no header read
    beside = list(daliaug.make_dataset(made, samples=samples, framework=framework))
    assert len(beside) == len(full) == BATCHES
    for (image, label), (image_full, label_full) in zip(beside, full, strict=True):
        assert np.array_equal(np.asarray(label), np.asarray(label_full))
        assert np.array_equal(np.asarray(image), np.asarray(image_full))
    assert sorted(set(read)) == sorted(samples.paths)


@pytest.mark.parametrize("on_error", ["skip", "raise"])
def test_a_file_that_is_no_image_is_found_when_its_header_is_read(
    numbered: Path, on_error: str
) -> None:
    """Its header is read when the check reaches it, not when the source is listed: ``skip``
    leaves its sample out (every other once, the listing's batch count), ``raise`` stops
    before any batch holding it, naming it."""
    path = numbered.parent / "img" / "0009.png"
    path.write_bytes(b"not an image at all")
    dataset = daliaug.make_dataset(config(numbered, on_error), framework="numpy")
    if on_error == "skip":
        with pytest.warns(DataWarning, match=f"left out {path} .*: {path} is not a JPEG or PNG"):
            batches = epoch(dataset)
        assert len(batches) == BATCHES
        labels = [label for (batch,) in batches for label in batch]
        assert labels == [i for i in range(COUNT) if i != 9]
        return
    seen: list[int] = []
    with pytest.raises(DataError, match=f"cannot be used: {path} is not a JPEG or PNG"):
        for _, labels in dataset:
            seen.extend(np.asarray(labels).tolist())
    assert 9 not in seen


@pytest.mark.parametrize("on_error", ["skip", "raise"])
def test_a_resumed_epoch_reads_no_file_before_its_batch(
    numbered: Path, monkeypatch: pytest.MonkeyPatch, on_error: str
) -> None:
    """Restored at batch 3 (a later start: the cache holds the first run's results and sizes),
    no file is read: the batches handed on are the uninterrupted epoch's, their files looked up
    in the cache by their key (a ``stat`` each). With ``skip`` the earlier files are looked up
    too (a bad one moves the later samples up); with ``raise`` (no sample is ever moved) not."""
    made = config(numbered, on_error, "opencv", shuffle=True)
    samples = prepared(made).samples
    check = samples.background
    assert check is not None
    dataset = daliaug.make_dataset(made, samples=samples, framework="numpy")
    whole = epoch(dataset)
    assert check.done.wait(60)
    state = dataset.stream.state(0, 3)
    read: list[str] = []
    keyed: list[str] = []
    real_header, real_screened, real_key = (
        background.header_and_key,
        background.screened,
        background.file_key,
    )

    def header_and_key(path: str, keyed: bool) -> Any:
        read.append(path)
        return real_header(path, keyed)

    def screened(paths: list[str], undecodable: Any) -> Any:
        read.extend(paths)
        return real_screened(paths, undecodable)

    def file_key(path: str) -> Any:
        keyed.append(path)
        return real_key(path)

    monkeypatch.setattr(background, "header_and_key", header_and_key)
    monkeypatch.setattr(background, "screened", screened)
    monkeypatch.setattr(background, "file_key", file_key)
    monkeypatch.setattr(background.BackgroundCheck, "begin", lambda self: None)  # feed alone
    resumed = daliaug.make_dataset(made, framework="numpy", state=state)
    rest = epoch(resumed)
    assert rest == whole[3:]
    handed = {f"{label:04d}.png" for (batch,) in rest for label in batch}
    assert read == []
    stated = {p.rsplit("/", 1)[-1] for p in keyed}
    assert (
        stated == handed
        if on_error == "raise"
        else stated == {f"{i:04d}.png" for i in range(COUNT)}
    )


def _old_cache(cache: Path) -> None:
    """The check's results as a cache from before sizes were kept holds them (no sizes)."""
    with closing(sqlite3.connect(cache / "check.sqlite")) as db, db:
        assert db.execute("SELECT COUNT(*) FROM sizes").fetchone() == (COUNT,)
        db.execute("DROP TABLE sizes")


def test_a_daliaug_from_before_sizes_still_writes_the_cache(numbered: Path, tmp_path: Path) -> None:
    """The sizes are a table of their own: a daliaug from before them, sharing the cache,
    writes its results as it did (five values a row)."""
    check = prepared(config(numbered, "raise", "opencv")).samples.background
    assert check is not None
    check.begin()
    assert check.done.wait(60)
    with closing(sqlite3.connect(tmp_path / "cache" / "check.sqlite")) as db, db:
        row = ("old", "a.png", 1, 2, None)
        db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", row)
        assert db.execute("SELECT COUNT(*) FROM files").fetchone() == (COUNT + 1,)


@pytest.mark.parametrize("old", [False, True], ids=["cache", "cache from before sizes"])
def test_a_later_start_reads_no_file_the_cache_holds_with_its_size(
    numbered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: bool
) -> None:
    """The check keeps each file's size with its result, so a later start reads no header and
    decodes nothing, and gives the first start's batches (a random crop drawn in each file's
    own pixels). A cache from before sizes were kept keeps its results (nothing decoded) and
    gains the sizes as the headers are read once more; the start after reads none."""
    chain = [{"type": "random_resized_crop", "scale": [0.3, 1.0]}, {"type": "flip"}]
    made = config(numbered, "raise", "opencv", shuffle=True, transforms=chain, image_size=24)
    samples = prepared(made).samples
    first = list(daliaug.make_dataset(made, samples=samples, framework="numpy"))
    check = samples.background
    assert check is not None and check.done.wait(60)
    if old:
        _old_cache(tmp_path / "cache")
    starts = []
    for _ in range(2):
        read: list[str] = []
        monkeypatch.setattr(background, "header_and_key", _recording(read, header_and_key))
        monkeypatch.setattr(background, "screened", _recording(read, background.screened))
        samples = prepared(made).samples
        later = list(daliaug.make_dataset(made, samples=samples, framework="numpy"))
        assert samples.background is not None and samples.background.done.wait(60)
        for (image, label), (first_image, first_label) in zip(later, first, strict=True):
            assert np.array_equal(image, first_image) and np.array_equal(label, first_label)
        starts.append(sorted({p.rsplit("/", 1)[-1] for p in read}))
        monkeypatch.undo()
        monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    every = [f"{i:04d}.png" for i in range(COUNT)]
    assert starts == ([every, []] if old else [[], []])


def test_a_file_replaced_with_its_size_and_time_kept_has_its_size_read_again(
    numbered: Path,
) -> None:
    """A file replaced by one of other dimensions, padded to the same length, its modification
    time set back (as ``cp -p`` or ``tar`` keep it): the cached size is not used (its key
    holds the inode and status-change time too), the header is read again."""
    made = config(numbered, "raise", "opencv")
    check = prepared(made).samples.background
    assert check is not None
    check.begin()
    assert check.done.wait(60)
    path = numbered.parent / "img" / "0005.png"
    before, stat = path.read_bytes(), path.stat()
    buffer = io.BytesIO()
    Image.fromarray(structured_image(9, 13, seed=5)).save(buffer, format="PNG")
    replacement = buffer.getvalue()
    assert len(replacement) < len(before)
    path.unlink()  # (a new inode, as a copy's)
    path.write_bytes(replacement + bytes(len(before) - len(replacement)))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    later = prepared(made).samples.background
    assert later is not None
    assert later.sizes([str(path)]).tolist() == [[9, 13]]


def _recording(read: list[str], real: Any) -> Any:
    """``real`` (a header read or the decode check), its paths kept in ``read``."""

    def recorded(paths: Any, *args: Any, **kwargs: Any) -> Any:
        read.extend([paths] if isinstance(paths, str) else paths)
        return real(paths, *args, **kwargs)

    return recorded


def test_auto_checks_a_large_source_beside_training(
    numbered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check: auto`` (the default) checks a source of fewer than ``BACKGROUND_FROM`` files in
    full before ``make_dataset`` returns (a bad file named there), and lists a larger one
    without reading a file, checking it beside training."""
    path = truncate(numbered, 5)
    made = config(numbered, "raise", check="auto")
    assert made.source.check == base.SourceConfig.model_fields["check"].default == "auto"
    with pytest.raises(DataError, match=f"cannot be used: {path}"):
        prepared(made)
    monkeypatch.setattr(base, "BACKGROUND_FROM", COUNT)
    samples = prepared(made).samples
    assert not samples.sized and samples.background is not None
    named_when_reached(made, samples, path)


@pytest.mark.parametrize("subset", ["training", "validation"])
def test_a_class_folder_is_listed_by_name_alone_and_split_as_checked_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subset: str
) -> None:
    """A class folder (two classes, images of several sizes, a validation split) under
    ``check: background``: its listing opens no file, and each part's batches are those of
    ``check: full``, pixel for pixel."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    images = {c: [structured_image(30 + 3 * i, 40, seed=i) for i in range(7)] for c in "ab"}
    write_image_dir(tmp_path / "data", images)
    chain = [{"type": "random_resized_crop", "scale": [0.3, 1.0]}]

    def made(check: str) -> daliaug.Config:
        source = {"type": "directory", "path": str(tmp_path / "data"), "check": check}
        source.update(validation_split=0.3, subset=subset)
        return config_for(
            tmp_path,
            source=source,
            backend="opencv",
            shuffle=True,
            transforms=chain,
            image_size=20,
            batch_size=BATCH,
        )

    full = list(daliaug.make_dataset(made("full"), framework="numpy"))
    opened: list[str] = []
    real = background.header_and_key
    monkeypatch.setattr(
        background, "header_and_key", lambda p, keyed: opened.append(p) or real(p, keyed)
    )
    samples = prepared(made("background")).samples
    assert not samples.sized and opened == []
    beside = list(daliaug.make_dataset(made("background"), samples=samples, framework="numpy"))
    assert len(beside) == len(full) > 0
    for got, want in zip(beside, full, strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def named_when_reached(made: daliaug.Config, samples: Any, path: Path) -> None:
    """An epoch of ``samples`` stops with a :class:`DataError` naming ``path``, found beside
    training."""
    with pytest.raises(DataError, match=f"cannot be used: .*{path}"):
        epoch(daliaug.make_dataset(made, samples=samples, framework="numpy"))


def test_auto_checks_a_large_box_source_beside_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A COCO or YOLO source of ``BACKGROUND_FROM`` images or more is checked beside training
    under ``check: auto``, decided on the whole listing (a shard of half as many decides the
    same): the listing then reads no header, COCO's boxes placed by the declared sizes,
    YOLO's kept as fractions of their images; below, in full before ``make_dataset``
    returns."""
    from daliaug.tools.demo_data import write_detection_dataset

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = write_detection_dataset(tmp_path / "det", count=12, seed=2)
    broken = sorted((root / "images").glob("*.jpg"))[7]
    data = broken.read_bytes()
    broken.write_bytes(data[: len(data) // 2])  # its header whole, its pixels cut
    sources = {
        "coco": {"type": "coco", "annotations": str(root / "annotations.json")},
        "yolo": {"type": "yolo", "path": str(root)},
    }
    for kind, source in sources.items():
        if kind == "coco":
            source["images"] = str(root / "images")
        made = config_for(None, source=source, image_size=32, batch_size=4)
        monkeypatch.setattr(base, "BACKGROUND_FROM", 10_000)
        with pytest.raises(DataError, match=f"cannot be used: {broken}"):
            prepared(made)
        monkeypatch.setattr(base, "BACKGROUND_FROM", 12)
        for shard in ({}, {"shard_id": 1, "num_shards": 2}):
            sharded = made.model_copy(update={"source": made.source.model_copy(update=shard)})
            samples = prepared(sharded).samples
            assert samples.background is not None
            if kind == "coco":
                assert samples.declared and not samples.sized and not samples.listed
            else:
                assert samples.normalised and not samples.sized and not samples.listed
        named_when_reached(made, prepared(made).samples, broken)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_header_unlike_its_declared_size_is_named_before_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_error: str
) -> None:
    """Where the listing took COCO's declared sizes and read no header, the background check
    holds each header to its size: an image replaced by one of another size is named before a
    batch holds it (``raise``), or left out with every other sample given once (``skip``);
    the rest train as a listing that read the headers gives them."""
    from daliaug.tools.demo_data import write_detection_dataset

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = write_detection_dataset(tmp_path / "det", count=10, seed=4)
    files = sorted((root / "images").glob("*.jpg"))
    with Image.open(files[6]) as im:
        width, height = im.size
    Image.new("RGB", (width + 8, height), (90, 20, 200)).save(files[6])
    source = {
        "type": "coco",
        "annotations": str(root / "annotations.json"),
        "images": str(root / "images"),
        "on_error": on_error,
    }
    made = config_for(None, source={**source, "check": "background"}, image_size=32, batch_size=4)
    samples = prepared(made).samples
    assert samples.declared and not samples.sized
    if on_error == "raise":
        said = f"{files[6]}: the annotations say the image is {width}x{height}, but its file is"
        with pytest.raises(DataError, match=f"{said} {width + 8}x{height}"):
            epoch(daliaug.make_dataset(made, samples=samples, framework="numpy"))
        return
    with pytest.warns(DataWarning, match=f"left out {files[6]}"):
        got = list(daliaug.make_dataset(made, samples=samples, framework="numpy"))
    full = config_for(None, source={**source, "check": "full"}, image_size=32, batch_size=4)
    with pytest.warns(DataWarning, match="left out 1 unusable files"):
        want = list(daliaug.make_dataset(full, framework="numpy"))

    def boxes(batches: list[Any]) -> list[bytes]:
        return sorted(np.asarray(b).tobytes() for batch in batches for b in batch[1]["boxes"])

    assert sum(len(batch[0]) for batch in got) == 9 == sum(len(batch[0]) for batch in want)
    assert boxes(got) == boxes(want)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_declared_size_is_held_to_a_header_the_cache_kept_no_size_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_error: str
) -> None:
    """Files checked in full at one start (their results kept without sizes), then a COCO
    file that declares one image's size wrongly and adds an entry naming another file with a
    size of its own: under ``check: background`` each file is named before a batch holds it
    (``raise``) or left out, each named (``skip``)."""
    from daliaug.tools.demo_data import write_detection_dataset

    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    root = write_detection_dataset(tmp_path / "det", count=6, seed=8)
    source = {"type": "coco", "annotations": str(root / "annotations.json")}
    source.update(images=str(root / "images"), on_error=on_error)
    full = config_for(None, source={**source, "check": "full"}, image_size=16, batch_size=2)
    assert prepared(full).samples.checked
    coco = json.loads((root / "annotations.json").read_text())
    first, second = coco["images"][1], coco["images"][4]
    first["width"] += 3
    coco["images"].append({**second, "id": 99, "height": second["height"] + 1})
    (root / "annotations.json").write_text(json.dumps(coco))
    made = config_for(None, source={**source, "check": "background"}, image_size=16, batch_size=2)
    samples = prepared(made).samples
    assert samples.declared and len(samples) == 7
    bad = {str(root / "images" / image["file_name"]) for image in (first, second)}
    if on_error == "raise":
        with pytest.raises(DataError, match="the annotations say the image is") as raised:
            epoch(daliaug.make_dataset(made, samples=samples, framework="numpy"))
        assert any(path in str(raised.value) for path in bad)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        epoch(daliaug.make_dataset(made, samples=samples, framework="numpy"))
    left = {m.group(1) for w in caught if (m := re.search(r"left out (\S+) and", str(w.message)))}
    assert left == bad
