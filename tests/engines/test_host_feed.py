"""The host's feed of DALI's graphs (issue 53): the files read on the host, each checked to be
the file the full check passed as it is read; each part of the plan's numbers an input of its
own; batches made on a thread of their own ahead of the pipeline; the GPU graph's colour pass
on every sample computing what the CPU graph's conditional pass computes."""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.engines.dali import pipeline
from daliaug.engines.feed import WARP_PART, EpochFeed, FeedForm
from daliaug.errors import DataError
from daliaug.outputs import dali_loader
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.sources.base import Samples
from daliaug.sources.checks import file_key
from tests.helpers import spec_of

COUNT, BATCH = 24, 4


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"{i:03d}.jpg" for i in range(COUNT)]
    for i, p in enumerate(paths):
        p.write_bytes(bytes([i]) * (10 + i))
    return paths


def feed_of(paths: list[Path], form: FeedForm) -> EpochFeed:
    names = [str(p) for p in paths]
    samples = Samples.of_files({"path": names}, ["a"], np.full((len(names), 2), 8))
    samples = samples.with_checked({n: file_key(n) for n in names})
    config = load_config(
        {
            "source": {"type": "directory", "path": "."},
            "image_size": 8,
            "batch_size": BATCH,
            "seed": 1,
            "transforms": [{"type": "flip", "horizontal": 0.5}],
        }
    )
    return EpochFeed(spec_of(config), samples, resizes=True, form=form)


def test_the_host_reads_the_files_and_names_one_rewritten_in_place(files: list[Path]) -> None:
    """A file rewritten with its size and modification time kept (only its status-change
    time tells) stops the feed at its batch, naming it; the batches before hold each file's
    bytes; no watch thread runs, since the reads check the files."""
    feed = feed_of(files, FeedForm(reads=True, warp=("resize_start", "resize_end")))
    assert feed.inputs == ("encoded", "warp_resize_start", "warp_resize_end")
    order = feed.epochs.batches(0)
    target = 3
    changed = files[int(order[target][2])]
    stat = changed.stat()
    changed.write_bytes(b"\xff" * stat.st_size)
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    seen = []
    with pytest.raises(DataError, match=f"image file {changed} changed after daliaug checked"):
        for batch in feed.batches(0, ("index", *feed.inputs), check_files=True):
            seen.append(batch)
    assert len(seen) == target
    for batch in seen:
        expected = [files[i].read_bytes() for i in batch["index"]]
        assert [row.tobytes() for row in batch["encoded"]] == expected
        assert batch["warp_resize_start"].shape == (BATCH, 2)
        assert batch["warp_resize_start"].flags.c_contiguous
    assert not [t for t in threading.enumerate() if t.name == "daliaug-file-watch"]


def test_the_parts_of_warp_are_the_flat_vector_cut_apart(files: list[Path]) -> None:
    flat = feed_of(files, FeedForm())
    parts = feed_of(files, FeedForm(reads=True, warp=("resize_start", "resize_end")))
    for a, b in zip(flat.batches(1, ("warp",)), parts.batches(1, parts.inputs), strict=True):
        cut = flat.layout.unpack(a["warp"], np.reshape, batched=True)
        for name in ("resize_start", "resize_end"):
            np.testing.assert_array_equal(b[WARP_PART + name], cut[name])
    # tf.data's streams ask chunk by chunk: the same bytes, zero-padded rows
    (chunk,) = list(parts.chunks(0, ("encoded",), 1024))[:1]
    first = parts.epochs.batches(0)[0]
    assert chunk["encoded"].dtype == np.uint8 and chunk["encoded"].shape[0] == BATCH
    for row, i in zip(chunk["encoded"], first, strict=True):
        data = files[i].read_bytes()
        assert row[: len(data)].tobytes() == data and not row[len(data) :].any()


def colour_config(demo_dir: Path) -> dict:
    return {
        "source": {"type": "directory", "path": str(demo_dir)},
        "image_size": 24,
        "batch_size": 8,
        "seed": 4,
        "transforms": [
            {"type": "random_resized_crop", "scale": [0.3, 1.0]},
            {"type": "invert", "probability": 0.5},  # half the samples keep their colours
            {"type": "keras_contrast", "factor": 0.5},  # weighs the image's mean
        ],
    }


def test_the_gpu_graphs_colour_pass_on_every_sample_changes_no_pixel(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU graph's form (no recolour predicate: every sample through the colour pass) run
    on DALI's CPU operators gives the CPU graph's batches exactly."""
    config = load_config(colour_config(demo_dir))
    plain = [b for b in DaliLoader(config, device="cpu")]
    form = pipeline.feed_form
    monkeypatch.setattr(dali_loader, "feed_form", lambda plan, cols, _: form(plan, cols, "gpu"))
    loader = DaliLoader(config, device="cpu")
    assert "warp_recolour" not in loader._source.feed.inputs
    for a, b in zip(plain, loader, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def feed_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "daliaug-feed"]


def test_the_loaders_batches_are_made_ahead_on_a_thread_of_their_own(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each epoch's batches come from the feed's thread, every sample once per epoch, two
    epochs in a row; a loader let go stops its thread."""
    made_on = set()
    batches = EpochFeed.batches

    def recorded(self: EpochFeed, *args: object, **kwargs: object) -> object:
        made_on.add(threading.current_thread().name)
        yield from batches(self, *args, **kwargs)

    monkeypatch.setattr(EpochFeed, "batches", recorded)
    config = load_config({**colour_config(demo_dir), "label_mode": "int"})
    loader = DaliLoader(config, device="cpu", return_params=True)
    for _ in range(2):
        labels = np.concatenate([labels for _, labels, _ in loader])
        assert len(labels) == len(loader.samples)
        np.testing.assert_array_equal(np.sort(labels), np.sort(loader.samples.labels))
    assert made_on == {"daliaug-feed"}
    next(iter(loader))
    assert feed_threads()
    del loader
    gc.collect()
    deadline = time.monotonic() + 5
    while feed_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not feed_threads()


def test_a_file_replaced_under_the_loader_is_named(demo_dir: Path, tmp_path: Path) -> None:
    import shutil

    data = shutil.copytree(demo_dir, tmp_path / "data")
    loader = DaliLoader(load_config({**colour_config(data), "seed": 5}), device="cpu")
    changed = sorted(data.rglob("*.jpg"))[3]
    changed.with_suffix(".new").write_bytes(changed.read_bytes()[:100])
    changed.with_suffix(".new").replace(changed)
    with pytest.raises(DataError, match=f"image file {changed} changed after daliaug checked"):
        for _ in loader:
            pass
