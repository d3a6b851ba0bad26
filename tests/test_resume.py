"""A stream's state between batches (:mod:`daliaug.resume`): a stream resumed from it gives
byte for byte the batches the uninterrupted stream gave from there, on every output, without
making or reading anything before it; a state of other data is refused by name."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import daliaug
from daliaug.errors import ConfigError, DataError
from daliaug.resume import State
from tests.helpers import config_for, run_keras_job, structured_image, write_image_dir

X = np.random.default_rng(0).integers(0, 256, (22, 20, 24, 3), dtype=np.uint8)
Y = np.arange(22)


def arrays_config(backend: str, **fields: Any) -> dict[str, Any]:
    """22 arrays in batches of 4 (the last one of 2), shuffled, with a rotation and, off the
    TF engine, a batch stage (mixup's partners are drawn per batch)."""
    stages = [{"type": "mixup"}] if backend != "tf" else []
    return {
        "source": {"type": "arrays"},
        "image_size": 16,
        "batch_size": 4,
        "backend": backend,
        "seed": 3,
        "shuffle": True,
        "label_mode": "categorical",
        "transforms": [{"type": "rotation", "angle": 30}, *stages],
        **fields,
    }


def epochs_of(dataset: Any, count: int) -> list[list[tuple[np.ndarray, ...]]]:
    """``count`` passes of ``dataset`` as NumPy arrays."""
    return [[tuple(np.asarray(t) for t in batch) for batch in dataset] for _ in range(count)]


def same(a: list[tuple[np.ndarray, ...]], b: list[tuple[np.ndarray, ...]]) -> bool:
    """Whether two runs of batches hold the very same bytes."""
    return len(a) == len(b) and all(
        len(p) == len(q)
        and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(p, q, strict=True))
        for p, q in zip(a, b, strict=True)
    )


@pytest.mark.parametrize(
    ("backend", "framework"),
    [("opencv", "numpy"), ("cpu", "numpy"), ("opencv", "tensorflow"), ("tf", "tensorflow")],
)
def test_a_stream_resumed_mid_epoch_gives_the_rest_byte_for_byte(
    backend: str, framework: str
) -> None:
    config = arrays_config(backend)
    whole = epochs_of(daliaug.make_dataset(config, x=X, y=Y, framework=framework), 2)
    dataset = daliaug.make_dataset(config, x=X, y=Y, framework=framework)
    if framework == "tensorflow":
        state = dataset.state_at(0, 4)
    else:
        batches = iter(dataset)
        for _ in range(4):
            next(batches)
        state = dataset.get_state()
    assert (state.epoch, state.position, state.world) == (0, 16, 1)
    resumed = daliaug.make_dataset(config, x=X, y=Y, framework=framework, state=state.to_json())
    rest = epochs_of(resumed, 2)
    assert [len(e) for e in rest] == [2, 6]
    assert same(rest[0], whole[0][4:]) and same(rest[1], whole[1])


@pytest.mark.parametrize("saved_at", [4, 8])
def test_a_tf_train_checkpoint_saves_and_restores_the_stream(saved_at: int, tmp_path: Path) -> None:
    """A ``DataCheckpoint`` in a ``tf.train.Checkpoint``: the state after ``step`` batches (4:
    within the first epoch; 8: two into the second) is written with the checkpoint, read back
    by ``restore``, and the dataset made after it gives the uninterrupted rest."""
    import tensorflow as tf

    from daliaug.outputs.tfdata.checkpoint import DataCheckpoint

    config = arrays_config("tf")
    whole = epochs_of(daliaug.make_dataset(config, x=X, y=Y), 3)
    step = tf.Variable(0, dtype=tf.int64)
    data = DataCheckpoint(step)
    saved = tf.train.Checkpoint(step=step, data=data)
    assert same(epochs_of(data.make_dataset(config, x=X, y=Y), 1)[0], whole[0])
    step.assign(saved_at)
    path = saved.save(str(tmp_path / "ckpt"))
    restored_step = tf.Variable(0, dtype=tf.int64)
    restored = DataCheckpoint(restored_step)
    tf.train.Checkpoint(step=restored_step, data=restored).restore(path).assert_consumed()
    resumed = restored.make_dataset(config, x=X, y=Y)
    epoch, batch = divmod(saved_at, 6)
    rest = epochs_of(resumed, 2)
    assert same(rest[0], whole[epoch][batch:]) and same(rest[1], whole[epoch + 1])
    with pytest.raises(ConfigError, match="restore the checkpoint before"):
        tf.train.Checkpoint(step=restored_step, data=restored).restore(path)
    # a state another world took: the step counts this world's epochs, not that rest
    wider = dataclasses.replace(resumed.state_at(0, 2), world=2, order_world=2)
    other = DataCheckpoint(restored_step)
    other.deserialize(wider.to_json())
    with pytest.raises(ConfigError, match=r"DataCheckpoint: .* a world of 2 shards"):
        other.make_dataset(config, x=X, y=Y)


def test_batches_state_round_trips_under_grain_and_pytorch_names() -> None:
    config = arrays_config("opencv")
    whole = epochs_of(daliaug.make_dataset(config, x=X, y=Y, framework="numpy"), 1)[0]
    dataset = daliaug.make_dataset(config, x=X, y=Y, framework="numpy")
    taken = iter(dataset)
    next(taken)
    saved = json.loads(json.dumps(dataset.state_dict()))
    assert dataset.get_state() == State.from_dict(saved)
    other = daliaug.make_dataset(config, x=X, y=Y, framework="numpy")
    other.load_state_dict(saved)
    assert same(epochs_of(other, 1)[0], whole[1:])
    other.set_state(other.stream.state(0, 5))
    assert same(epochs_of(other, 1)[0], whole[5:])
    assert other.get_state().epoch == 1 and other.get_state().position == 0


def folder_config(root: Path, **fields: Any) -> Any:
    """11 images of two sizes in two class folders, shuffled, rotated, in batches of 4 (the
    last one of 3), on DALI's CPU engine."""
    rng = np.random.default_rng(5)
    images = {
        name: [rng.integers(0, 256, (20 + 4 * (i % 2), 24, 3), np.uint8) for i in range(count)]
        for name, count in (("a", 6), ("b", 5))
    }
    write_image_dir(root, images)
    rotated = [{"type": "rotation", "angle": 30}]
    return config_for(root, shuffle=True, transforms=rotated, image_size=16, **fields)


def test_a_dali_loader_gives_its_state_and_resumes_at_any_batch(tmp_path: Path) -> None:
    """A ``DaliLoader``'s own state: taken at every batch of two epochs (through JSON), each
    restored into a fresh loader gives the uninterrupted rest byte for byte; a state of
    ``make_dataset``'s NumPy batches of the same config restores into a loader too."""
    from daliaug import DaliLoader

    config = folder_config(tmp_path)
    whole = epochs_of(DaliLoader(config), 2)
    flat = [*whole[0], *whole[1]]
    assert [len(e) for e in whole] == [3, 3]
    loader, states = DaliLoader(config), []
    for _ in range(2):
        for _ in loader:
            states.append(json.dumps(loader.state_dict()))
    for k, saved in enumerate(states, 1):
        resumed = DaliLoader(config)
        resumed.load_state_dict(json.loads(saved))
        epoch, batch = divmod(k, 3)
        assert (resumed.get_state().epoch, resumed.get_state().position) == (epoch, batch * 4)
        got = [b for e in epochs_of(resumed, 1 if batch else 0) for b in e]
        assert same(got, flat[k : (epoch + 1) * 3] if batch else [])
    batches = daliaug.make_dataset(config, framework="numpy")
    taken = iter(batches)
    next(taken)
    restored = DaliLoader(config)
    restored.set_state(batches.get_state())
    assert same(epochs_of(restored, 1)[0], whole[0][1:])


def test_a_dali_loader_state_needs_a_seed_and_its_own_stream(tmp_path: Path) -> None:
    from daliaug import DaliLoader

    config = folder_config(tmp_path)
    with pytest.raises(ConfigError, match="seed: a DaliLoader's state"):
        DaliLoader(config.model_copy(update={"seed": None})).get_state()
    state = DaliLoader(config).get_state()
    other = DaliLoader(config.model_copy(update={"batch_size": 2}))
    with pytest.raises(ConfigError, match="batch_size"):
        other.set_state(state)


def test_the_end_of_an_epoch_is_the_next_one_at_its_start() -> None:
    dataset = daliaug.make_dataset(arrays_config("opencv"), x=X, y=Y, framework="numpy")
    epochs_of(dataset, 1)
    state = dataset.get_state()
    assert (state.epoch, state.position) == (1, 0)
    assert dataset.stream.state(3, len(dataset)) == dataset.stream.state(4, 0)


def test_a_resumed_epoch_reads_no_file_before_its_batch(
    numbered_list: Path, tmp_path: Path
) -> None:
    """The files of the batches before the state are deleted once the dataset is made: the
    rest of the epoch never asks for them (DALI's host feed reads each file it feeds)."""
    copy = tmp_path / "numbered"
    shutil.copytree(numbered_list.parent, copy)
    source = {"type": "file_list", "path": str(copy / numbered_list.name)}
    config = config_for(copy, source=source, shuffle=True, batch_size=5)
    whole = epochs_of(daliaug.make_dataset(config, framework="numpy"), 1)[0]
    state = daliaug.make_dataset(config, framework="numpy").stream.state(0, 2)
    resumed = daliaug.make_dataset(config, framework="numpy", state=state)
    for label in np.concatenate([b[1] for b in whole[:2]]).tolist():
        (copy / "img" / f"{label:04d}.png").unlink()
    assert same(epochs_of(resumed, 1)[0], whole[2:])


def refusal(state: dict[str, Any], **dataset: Any) -> str:
    """The refusal of ``state`` by a dataset of :func:`arrays_config` (``dataset``: changes)."""
    config = arrays_config("opencv", **dataset.pop("config", {}))
    x = dataset.pop("x", X)
    with pytest.raises((ConfigError, DataError)) as error:
        daliaug.make_dataset(config, x=x, y=Y[: len(x)], framework="numpy", state=state)
    return str(error.value)


def test_a_state_of_other_data_or_damaged_is_refused_by_name() -> None:
    dataset = daliaug.make_dataset(arrays_config("opencv"), x=X, y=Y, framework="numpy")
    state = dataset.stream.state(0, 2)
    good = state.as_dict()

    assert "another config: image_size differ" in refusal(good, config={"image_size": 24})
    rotated = [{"type": "rotation", "angle": 10}]
    assert "config: transforms differ" in refusal(good, config={"transforms": rotated})
    assert "seed 3" in refusal(good, config={"seed": 4})
    changed = X.copy()
    changed[5, 0, 0, 0] ^= 1
    assert "samples changed" in refusal(good, x=changed)
    assert "22 samples" in refusal(good, x=X[:21])
    assert "batch_size differ" in refusal(good, config={"batch_size": 8})

    older = State(**{**{k: v for k, v in good.items() if k != "digest"}, "version": "0.1.0"})
    assert "written by daliaug 0.1.0" in refusal(older.as_dict())
    first_format = {k: v for k, v in good.items() if k != "readers"} | {"format": 1}
    assert "format 1, this daliaug reads 2" in refusal(first_format)
    garbled = State(**{**{k: v for k, v in good.items() if k != "digest"}, "readers": {"0": "!"}})
    assert "readers holds DALI's checkpoints" in refusal(garbled.as_dict())
    edited = {**good, "position": 4}
    assert "digest does not match" in refusal(edited)
    truncated = state.to_json()[:-20]
    with pytest.raises(ConfigError, match="truncated"):
        daliaug.make_dataset(arrays_config("opencv"), x=X, y=Y, framework="numpy", state=truncated)
    assert "missing" in refusal({k: v for k, v in good.items() if k != "seed"})
    fields = {k: v for k, v in good.items() if k != "digest"}
    past = State(**{**fields, "position": 24})
    assert "past the end of an epoch of 24" in refusal(past.as_dict())
    between = State(**{**fields, "position": 6})
    assert "not between two batches" in refusal(between.as_dict())
    wider = State(**{**fields, "world": 2, "order_world": 2}).as_dict()
    with pytest.raises(ConfigError, match="taken by a world of 2 shards"):  # not elastic
        dataclasses.replace(dataset.stream, elastic=False).start(wider)
    with pytest.raises(ConfigError, match="on_error: skip, which moves"):
        dataclasses.replace(dataset.stream, skips=True).start(wider)


@pytest.mark.slow
def test_backup_and_restore_resumes_model_fit_mid_epoch(
    numbered_list: Path, tmp_path: Path
) -> None:
    """Keras' ``BackupAndRestore(save_freq=2)`` with the data state, through a real
    ``model.fit`` on TensorFlow: killed in the third epoch, the restored run trains on exactly
    the batches the uninterrupted run trained on from the last save, each epoch every sample
    once."""

    from daliaug.keras import BackupAndRestore
    from tests.resume_job import CRASH_AT, crash_at
    from tests.test_reliability import Recorder

    source = {"type": "file_list", "path": str(numbered_list)}
    config = config_for(numbered_list.parent, source=source, shuffle=True, batch_size=5)

    def fit(recorder: Recorder, crash: bool = False) -> None:
        ds = daliaug.make_dataset(config)
        backup = BackupAndRestore(ds, str(tmp_path / "backup"), save_freq=2)
        recorder.model.fit(
            ds,
            epochs=4,
            verbose=0,
            shuffle=False,
            callbacks=[backup, *([crash_at(recorder, CRASH_AT)] if crash else [])],
        )

    whole, first, resumed = Recorder(), Recorder(), Recorder()
    fit(whole)
    with pytest.raises(KeyboardInterrupt):
        fit(first, crash=True)
    fit(resumed)
    epochs = [sorted(x for batch in whole.seen[i : i + 5] for x in batch) for i in range(0, 20, 5)]
    assert all(e == list(range(23)) for e in epochs)
    assert first.seen[:13] == whole.seen[:13]
    assert resumed.seen == whole.seen[12:]  # from the batch after the last save (the 12th)
    assert not (tmp_path / "backup").exists()  # the run ended: Keras deleted its backup


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "records"), [("jax", False), ("torch", False), ("jax", True), ("torch", True)]
)
def test_backup_and_restore_resumes_model_fit_mid_epoch_on_jax_and_torch(
    backend: str, records: bool, numbered_list: Path, numbered_records: Path, tmp_path: Path
) -> None:
    """The same through Keras' own ``fit`` on JAX and PyTorch (daliaug's batches as their data
    adapter), each in a process of its own; also over TFRecords read by DALI's own reader,
    whose saved states hold its checkpoints."""
    spec = {
        "numbered": str(numbered_list),
        "backup": str(tmp_path / "backup"),
        "out": str(tmp_path / "out.npz"),
    }
    if records:
        spec |= {"records": str(numbered_records), "index_dir": str(tmp_path)}
    report, _ = run_keras_job("tests.resume_job", backend, spec, timeout=600)
    whole, first, resumed = report["whole"], report["first"], report["resumed"]
    assert len(whole) == 20 and first[:13] == whole[:13]
    epochs = [sorted(x for batch in whole[i : i + 5] for x in batch) for i in range(0, 20, 5)]
    assert all(e == list(range(23)) for e in epochs)
    assert resumed == whole[12:]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["opencv", "cpu", "files"])
def test_tf_data_resumes_a_state_another_world_took(backend: str, tmp_path: Path) -> None:
    """``tf.data`` (no strategy) given a state a JAX world of 2 devices took mid-epoch: its
    next iteration is the rest of that epoch in that world's order (every sample of the epoch
    once across both, each with the pixels the world of 2 gave it), on OpenCV and DALI on the
    CPU, and over files checked beside training (OpenCV); a state taken within that rest
    (``state_at``) resumed by another ``tf.data`` dataset gives the rest of it; the iteration
    after is the next epoch, whole."""
    from tests.elastic_job import config_of

    spec = {"worlds": [2], "after": [2], "out": str(tmp_path / "out.npz"), "backend": backend}
    if backend == "files":
        root = tmp_path / "data"
        write_image_dir(root, {"img": [structured_image(20, 24, seed=i) for i in range(23)]})
        listing = root / "list.csv"
        rows = "".join(f"img/{i:04d}.png,{i}\n" for i in range(23))
        listing.write_text("path,label\n" + rows)
        spec |= {"backend": "opencv", "listing": str(listing)}
    report, pixels = run_keras_job("tests.elastic_job", "jax", spec, timeout=300)
    (taken,) = report["runs"]
    config, arrays = config_of(spec)

    def labels(batches: Any) -> list[list[int]]:
        return [np.asarray(b[1]).tolist() for b in batches]  # (a world of 1: no padding)

    ds = daliaug.make_dataset(config, framework="tensorflow", state=taken["state"], **arrays)
    rest = list(ds)
    seen = [x for batch in taken["seen"] + labels(rest) for x in batch]
    assert sorted(seen) == list(range(23))
    for images, label in rest:
        for image, x in zip(images.numpy(), label.numpy(), strict=True):
            assert np.array_equal(image, pixels[f"whole{x}"]), x
    assert sorted(x for batch in labels(ds) for x in batch) == list(range(23))  # epoch 1 whole

    mid = daliaug.make_dataset(config, framework="tensorflow", state=taken["state"], **arrays)
    state = mid.state_at(0, 2)  # two batches of the rest consumed
    assert (state.world, state.order_world, state.position) == (1, 2, 16)
    again = daliaug.make_dataset(config, framework="tensorflow", state=state, **arrays)
    assert labels(again) == labels(rest)[2:]


def test_tf_data_on_the_tf_engine_runs_the_rest_another_world_left() -> None:
    """TensorFlow's ops (whose graph gathers each sample by index) given a state a world of 2
    took after 2 global batches: the next iteration holds exactly the samples that world's
    order had left, then the next epoch is whole."""
    from daliaug.epoch import world_order

    config = arrays_config("tf")
    taken = daliaug.make_dataset(config, x=X, y=Y).state_at(0, 2)
    wider = dataclasses.replace(taken, world=2, order_world=2)  # 8 positions of that order
    resumed = daliaug.make_dataset(config, x=X, y=Y, state=wider)
    left = [np.argmax(np.asarray(b[1]), -1).tolist() for b in resumed]
    index, _, _ = world_order(22, 2, 2, False, True, 3, 0)
    assert [x for batch in left for x in batch] == index[8:].tolist()
    whole = [x for b in resumed for x in np.argmax(np.asarray(b[1]), -1).tolist()]
    assert sorted(whole) == list(range(22))


@pytest.mark.slow
def test_backup_and_restore_resumes_on_another_world_and_saves_within_the_rest(
    tmp_path: Path,
) -> None:
    """``BackupAndRestore`` through a real ``model.fit`` on JAX: trained on 2 devices and
    interrupted in epoch 2 (6 batches of 4 each), restored on 1 device, which trains the rest
    of that epoch (the other world's order) and is interrupted in it after a save there, then
    restored on 4: each epoch's samples exactly once across the runs, and the runs after end
    after epoch 3, each whole."""
    root = tmp_path / "data"
    write_image_dir(root, {"img": [structured_image(24, 24, seed=i) for i in range(24)]})
    listing = root / "list.csv"
    listing.write_text("path,label\n" + "".join(f"img/{i:04d}.png,{i}\n" for i in range(24)))
    spec = {
        "numbered": str(listing),
        "backup": str(tmp_path / "backup"),
        "out": str(tmp_path / "out.npz"),
        "batch_size": 4,
        "runs": [[2, 15], [1, 3], [4, None]],
    }
    report, _ = run_keras_job("tests.resume_job", "jax", spec, timeout=600)
    first, second, third = report["runs"]
    # saves every 2 batches: the first run's last at its 14th (epoch 2, 2 batches in), the
    # second's after the rest's 2nd batch (8 samples of the 16 left)
    epoch2 = [x for batch in first[12:14] + second[:2] + third[:2] for x in batch]
    assert sorted(epoch2) == list(range(24))
    assert len(third) == 2 + 6 and sorted(x for batch in third[2:] for x in batch) == list(
        range(24)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("worlds", "after"), [([2, 4, 1], [2, 1]), ([1, 2], [3]), ([4, 2, 2], [1, 1])]
)
def test_a_state_restored_by_another_world_gives_the_rest_of_the_epoch_exactly_once(
    worlds: list[int], after: list[int], tmp_path: Path
) -> None:
    """Elastic: an epoch begun by ``worlds[0]`` shards (JAX devices under DataParallel), its
    state restored by the next world, whose state mid-way is restored by the one after: every
    sample exactly once over all of them (padding weighs 0), each with the pixels the first
    world's uninterrupted epoch gave it (it keeps its parameter row), and the epoch ends where
    the last world's first pass ends."""
    spec = {"worlds": worlds, "after": after, "out": str(tmp_path / "out.npz")}
    each_sample_once(spec, *run_keras_job("tests.elastic_job", "jax", spec, timeout=300))


def each_sample_once(spec: dict[str, Any], report: dict[str, Any], images: Any) -> None:
    """Over the worlds of an elastic job's ``spec``: each of the 23 samples once, with the
    pixels of the first world's uninterrupted epoch; the first world's batches its own; the
    last run ends the epoch; the first state where its batches left it."""
    worlds, after = spec["worlds"], spec["after"]
    assert sorted(x for batch in report["whole"] for x in batch) == list(range(23))
    runs = report["runs"]
    seen = [x for run in runs for batch in run["seen"] for x in batch]
    assert sorted(seen) == list(range(23))
    first = [x for batch in runs[0]["seen"] for x in batch]
    assert first == [x for batch in report["whole"][: after[0]] for x in batch]
    for i in range(len(runs)):
        for label in {x for batch in runs[i]["seen"] for x in batch}:
            assert np.array_equal(images[f"run{i}_{label}"], images[f"whole{label}"])
    assert (runs[-1]["state"]["epoch"], runs[-1]["state"]["position"]) == (1, 0)
    mid = runs[0]["state"]
    assert (mid["world"], mid["order_world"], mid["position"]) == (
        worlds[0],
        worlds[0],
        4 * after[0],
    )


def test_listed_tfrecords_resume_a_state_another_world_took(
    numbered_records: Path, tmp_path: Path
) -> None:
    """TFRecords listed as columns (``source.listed``): an epoch begun by 2 shards, resumed by
    4, then by 1, gives each record once with its pixels, as any column source does."""
    spec = {"worlds": [2, 4, 1], "after": [2, 1], "out": str(tmp_path / "out.npz")}
    spec |= {"records": str(numbered_records)}
    env = {"DALIAUG_CACHE": str(tmp_path / "cache")}
    each_sample_once(spec, *run_keras_job("tests.elastic_job", "jax", spec, timeout=300, env=env))


@pytest.mark.slow
@pytest.mark.parametrize(("worlds", "after"), [([2, 1, 4], [2, 1]), ([4, 2], [1])])
def test_grains_own_state_restored_by_another_world_gives_each_sample_once(
    worlds: list[int], after: list[int], tmp_path: Path
) -> None:
    """Grain's iterators (``framework="grain"``): the state a world's iterator gives (Grain's
    ``get_state``, what its checkpoint handler saves) set into an iterator of a world of
    another size yields the rest of that epoch dealt out over it, each sample once with its
    pixels, and the states taken within that rest resume on a third world."""
    spec = {"worlds": worlds, "after": after, "out": str(tmp_path / "out.npz")}
    report, images = run_keras_job("tests.elastic_job", "jax", spec | {"framework": "grain"}, 300)
    assert "error" not in report, report.get("error")
    runs = report["runs"]
    seen = [x for run in runs for batch in run["seen"] for x in batch]
    assert sorted(seen) == list(range(23))
    for i, run in enumerate(runs):
        for label in {x for batch in run["seen"] for x in batch}:
            assert np.array_equal(images[f"run{i}_{label}"], images[f"whole{label}"])
    mid = runs[0]["state"]
    assert (mid["epoch"], mid["batch"]) == (0, after[0])
    assert (mid["stream"]["world"], mid["stream"]["position"]) == (worlds[0], 4 * after[0])
    end = runs[-1]["state"]
    assert end["batch"] == end["batches"]  # the rest's own batches, over
    assert (end["stream"]["epoch"], end["stream"]["position"]) == (1, 0)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["good", "bad", "skip"])
def test_another_world_resumes_files_checked_beside_training(case: str, tmp_path: Path) -> None:
    """A file list checked beside training (``source.check: background``, what ``auto`` picks
    for large sources): a world of 2's state restored by a world of 1 gives the rest of the
    epoch exactly once, each sample its pixels; a bad file past the first world's batches
    stops the epoch, named, before any batch holding it; with ``on_error: skip`` (which moves
    samples past a bad file) the restore is refused by name."""
    root = tmp_path / "data"
    images = {"img": [structured_image(20, 24, seed=i) for i in range(23)]}
    write_image_dir(root, images)
    listing = root / "list.csv"
    listing.write_text("path,label\n" + "".join(f"img/{i:04d}.png,{i}\n" for i in range(23)))
    spec: dict[str, Any] = {"worlds": [2, 1], "after": [2], "out": str(tmp_path / "out.npz")}
    spec |= {"listing": str(listing), "bad": case == "bad"}
    spec |= {"on_error": "skip"} if case == "skip" else {}
    env = {"DALIAUG_CACHE": str(tmp_path / "cache")}
    report, pixels = run_keras_job("tests.elastic_job", "jax", spec, timeout=300, env=env)
    seen = [x for run in report["runs"] for batch in run["seen"] for x in batch]
    if case == "bad":  # (the check may find it while the first world runs, and stop it)
        spoiled = report["whole"][2][0]
        assert re.search(rf"img/{spoiled:04d}\.png", report["error"]), report["error"]
        assert spoiled not in seen and len(set(seen)) == len(seen)
        return
    first, rest = (run["seen"] for run in report["runs"])
    assert len(first) == 2 and sum(len(batch) for batch in first) == 8
    if case == "skip":
        assert rest == [] and "on_error: skip" in report["error"]
        assert "restore it on that world" in report["error"]
        return
    assert "error" not in report and sorted(seen) == list(range(23))
    for i, run in enumerate((first, rest)):
        for label in {x for batch in run for x in batch}:
            assert np.array_equal(pixels[f"run{i}_{label}"], pixels[f"whole{label}"])


JOB_TIMEOUT = 300
"""Seconds a :func:`kill_job` run may take (they take a few here)."""


def kill_job(spec: dict[str, Any], kill_at: int | None = None) -> int:
    """Runs :mod:`tests.kill_job`; with ``kill_at``, SIGKILLs it once it has handed on that
    many batches (it waits for a line after each). The batches it handed on."""
    with tempfile.TemporaryFile("w+") as errors:  # (not a pipe: what it says cannot block it)
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.kill_job", json.dumps({**spec, "free": kill_at is None})],
            cwd=Path(__file__).parents[1],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env={**os.environ, "CUDA_VISIBLE_DEVICES": "", **backend_of(spec)},
        )
        assert process.stdin is not None and process.stdout is not None
        hung = threading.Event()
        watchdog = threading.Timer(JOB_TIMEOUT, lambda: hung.set() or process.kill())
        watchdog.start()  # (a job that hangs is ended, and named below)
        handed = 0
        try:
            for line in process.stdout:
                handed = int(line.split()[1])
                if handed == kill_at:
                    process.send_signal(signal.SIGKILL)
                    break
                if kill_at is not None:
                    try:
                        process.stdin.write("\n")
                        process.stdin.flush()
                    except BrokenPipeError:  # (it ended: its code and stderr say how)
                        break
            process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            hung.set()
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.communicate()
        errors.seek(0)
        said = errors.read()[-3000:]
    assert not hung.is_set(), f"tests.kill_job ran past {JOB_TIMEOUT} s: {said}"
    expected = -signal.SIGKILL if kill_at is not None else 0
    assert process.returncode == expected, said
    return handed


def backend_of(spec: dict[str, Any]) -> dict[str, str]:
    """The environment that picks Keras' backend for the job's output."""
    framework = spec.get("framework")
    return {"KERAS_BACKEND": framework} if framework in ("jax", "torch") else {}


@pytest.fixture(
    scope="module",
    params=["opencv", "cpu", "records", "cpu-jax", "opencv-torch", "cpu-tensorflow"],
)
def uninterrupted(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    numbered_records: Path,
) -> tuple[dict[str, Any], list[str], int]:
    """The job's two epochs run through on engine ``param`` (``records``: the 23 numbered
    TFRecords through DALI's own reader on the CPU; ``engine-framework``: that output, else
    NumPy's): its spec, records and sample count."""
    root = tmp_path_factory.mktemp("whole")
    backend, _, framework = request.param.partition("-")
    spec: dict[str, Any] = {"backend": backend, **({"framework": framework} if framework else {})}
    if request.param == "records":
        spec = {"backend": "cpu", "records": str(numbered_records), "index_dir": str(root)}
    out = root / "out.jsonl"
    kill_job({**spec, "out": str(out), "state": str(root / "state.json"), "resume": False})
    return spec, out.read_text().splitlines(), 23 if "records" in spec else 22


@pytest.mark.slow
@settings(max_examples=3, derandomize=True, deadline=None)
@given(kill_at=st.integers(1, 11))
def test_killed_at_any_batch_and_resumed_gives_the_uninterrupted_stream(
    uninterrupted: tuple[dict[str, Any], list[str], int], kill_at: int
) -> None:
    """SIGKILL after ``kill_at`` batches (of 12 over two epochs): the job resumed from the state
    it last wrote hands on exactly the uninterrupted run's remaining batches (their bytes'
    digest), and over the two runs each epoch holds every sample exactly once; on the NumPy
    output (DALI on the CPU, OpenCV, DALI's own TFRecord reader), JAX's, PyTorch's and
    ``tf.data`` (whose state is asked for the batches consumed)."""
    job, whole, count = uninterrupted
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        spec = {**job, "out": str(root / "out.jsonl"), "state": str(root / "s")}
        assert kill_job({**spec, "resume": False}, kill_at) == kill_at
        kill_job({**spec, "resume": True})
        records = (root / "out.jsonl").read_text().splitlines()
    assert records == whole
    labels = [json.loads(r)["labels"] for r in records]
    for epoch in (labels[:6], labels[6:]):
        assert sorted(x for batch in epoch for x in batch) == list(range(count))


@pytest.mark.slow
@settings(max_examples=3, derandomize=True, deadline=None)
@given(kill_at=st.integers(1, 11), worlds=st.sampled_from([(2, 1), (1, 4), (4, 2)]))
def test_killed_on_one_world_and_resumed_on_another_gives_each_sample_once(
    kill_at: int, worlds: tuple[int, int]
) -> None:
    """SIGKILL after ``kill_at`` batches of JAX's batches split over ``worlds[0]`` devices,
    resumed from the state it last wrote on ``worlds[1]``: over the two runs each of the two
    epochs holds every sample exactly once (padding left out), the killed epoch's rest in the
    first world's order."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        spec = {"backend": "opencv", "framework": "jax", "out": str(root / "out.jsonl")}
        spec |= {"state": str(root / "s")}
        assert kill_job({**spec, "world": worlds[0], "resume": False}, kill_at) == kill_at
        kill_job({**spec, "world": worlds[1], "resume": True})
        records = [json.loads(r) for r in (root / "out.jsonl").read_text().splitlines()]
    for epoch in (0, 1):
        seen = [x for r in records if r["epoch"] == epoch for x in r["labels"]]
        assert sorted(seen) == list(range(22)), (epoch, seen)


@pytest.mark.parametrize("check", ["full", "background"])
def test_a_state_of_files_since_replaced_or_added_is_refused(
    numbered_list: Path, tmp_path: Path, check: str
) -> None:
    """The fingerprint holds each file's name, size and modification time as listed (with
    ``check: background``, whose listing reads no file, as taken when the state is made): a
    file rewritten, or one more in the list, and the state is refused, never resumed onto
    them."""
    copy = tmp_path / "numbered"
    shutil.copytree(numbered_list.parent, copy)
    listing = copy / numbered_list.name
    source = {"type": "file_list", "path": str(listing), "check": check}
    config = config_for(copy, source=source, shuffle=True, batch_size=5, backend="opencv")
    state = daliaug.make_dataset(config, framework="numpy").stream.state(0, 2)
    image = copy / "img" / "0003.png"
    shutil.copyfile(copy / "img" / "0004.png", image)
    os.utime(image, ns=(1, 1))
    with pytest.raises(DataError, match="samples changed"):
        daliaug.make_dataset(config, framework="numpy", state=state)
    listing.write_text(listing.read_text() + "img/0004.png,4\n")
    with pytest.raises(DataError, match=r"23 samples.*now 24"):
        daliaug.make_dataset(config, framework="numpy", state=state)


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """18 images in two class folders as two TFRecord files (``records/``)."""
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    root = tmp_path_factory.mktemp("two")
    images = {name: [structured_image(30 + i, 36, seed=i) for i in range(9)] for name in "ab"}
    write_image_dir(root / "img", images)
    write_tfrecords(DirectorySource(path=root / "img").samples(), root / "records", shards=2)
    return root


def records_config(root: Path, backend: str, **fields: Any) -> Any:
    """The TFRecords of ``root`` in batches of 4, shuffled, rotated and colour-jittered."""
    source = {"type": "tfrecord", "path": str(root / "records"), "index_dir": str(root)}
    chain = [{"type": "rotation", "angle": 30}, {"type": "color_jitter", "brightness": 0.4}]
    fields = {"shuffle": True, "transforms": chain, "label_mode": "int", **fields}
    return config_for(root, source=source, backend=backend, **fields)


@pytest.mark.parametrize("backend", ["tf", "cpu"])
def test_tfrecords_read_by_tf_data_resume_mid_epoch(two_folders: Path, backend: str) -> None:
    """TFRecords read by ``tf.data`` (the TF engine's graph, or packed for DALI's) resume at
    batch k: the rest of the epoch and the next epoch byte for byte as the uninterrupted
    run's. DALI's own reader (the NumPy output) does not take a state without its checkpoints
    mid-epoch: refused by name."""
    config = records_config(two_folders, backend)
    whole = epochs_of(daliaug.make_dataset(config), 2)
    state = daliaug.make_dataset(config).stream.state(0, 2)
    rest = epochs_of(daliaug.make_dataset(config, state=state), 2)
    assert len(whole[0]) == 5 and same(rest[0], whole[0][2:]) and same(rest[1], whole[1])
    if backend == "cpu":
        with pytest.raises(ConfigError, match=r"DALI's own reader .* does not hold"):
            daliaug.make_dataset(config, framework="numpy", state=state)


def test_tfrecords_read_by_dalis_own_reader_resume_at_any_batch(two_folders: Path) -> None:
    """DALI's own reader (the NumPy output, DALI on the CPU) shuffles through a buffer and draws
    the parameters in its graph, so its states hold DALI's checkpoints: restored at any batch
    of any epoch (an epoch's end included), the stream gives byte for byte the uninterrupted
    run's batches from there, each epoch every record once; a ``DaliLoader`` gives the same
    stream and seeks in it. Refused by name: its state on ``tf.data``, a state of another
    process's shard."""
    from daliaug.outputs.dali_loader import DaliLoader

    config = records_config(two_folders, "cpu")
    dataset = daliaug.make_dataset(config, framework="numpy")
    whole, states = [], []
    for _ in range(3):
        for batch in dataset:
            whole.append(tuple(np.asarray(t) for t in batch))
            states.append(dataset.get_state())
    assert len(dataset) == 5 and len(whole) == 15
    for e in range(3):
        labels = np.concatenate([b[1] for b in whole[5 * e : 5 * e + 5]])
        assert sorted(labels.tolist()) == [0] * 9 + [1] * 9
    assert all(s.readers for s in states) and len(states[0].to_json()) < 20_000
    for k in (1, 4, 5, 7, 14):
        resumed = daliaug.make_dataset(config, framework="numpy", state=states[k - 1])
        assert (resumed.epoch, states[k - 1].position) == (k // 5, 4 * (k % 5))
        rest = [tuple(np.asarray(t) for t in b) for _ in range(3) for b in resumed]
        assert same(rest[: 15 - k], whole[k:])
    loader = DaliLoader(config)
    first = [b for _ in range(2) for b in loader]
    assert same(first, whole[:10])
    loader.set_state(states[6])  # epoch 1, batch 2
    assert same(list(loader), whole[7:10])
    with pytest.raises(ConfigError, match=r"DALI's own reader .* reads them otherwise"):
        daliaug.make_dataset(config, state=states[6])  # tf.data
    fields = {k: v for k, v in states[6].as_dict().items() if k != "digest"}
    other = State(**{**fields, "readers": {"1": fields["readers"]["0"]}})
    with pytest.raises(ConfigError, match=r"shards \[1\], and this process runs shard 0"):
        daliaug.make_dataset(config, framework="numpy", state=other)


def test_reader_checkpoints_are_held_for_the_recent_batches() -> None:
    """The checkpoints of the last :data:`HELD` batches are kept (an epoch's end also as the
    next epoch's start); one older is refused by name, the start of an epoch no pipeline ran
    before is none (a new pipeline is that state)."""
    from daliaug.reader_checkpoints import ReaderCheckpoints, decoded

    assert decoded({"0": "RQ=="}) == {0: b"E"}
    for bad in (["RQ=="], {"0": 5}, {"zero": "RQ=="}, {"0": "not base64!"}):
        with pytest.raises(ConfigError, match="readers holds DALI's checkpoints"):
            decoded(bad)
    held = ReaderCheckpoints()
    for batch in range(1, held.HELD + 6):
        held.record(0, batch, 0, bytes([batch]), end=batch == held.HELD + 5)
    assert held(0, held.HELD + 5) == held(1, 0) == {"0": "RQ=="}
    assert held(0, 0) == {}
    with pytest.raises(ConfigError, match=r"after batch 3 of epoch 0 is not held"):
        held(0, 3)
