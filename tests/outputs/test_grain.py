"""The Grain output's iterators (daliaug/outputs/grain.py) on stand-in pipelines: one epoch per
iterator or epoch after epoch, a state at every batch that Grain's own checkpoint handler saves
and restores (through a Grain ``map``, as Keras wraps it), the rest of the stream given again
exactly, and every state that does not fit refused by name. The real pipelines through Keras'
``fit`` on JAX, one process and two: tests/outputs/test_grain_fit.py and
tests/outputs/test_jax_distribution.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.errors import BackendError, ConfigError
from daliaug.outputs.batches import Batches
from tests.helpers import config_for
from tests.outputs.test_framework_outputs import Counting

grain = pytest.importorskip("grain")

from daliaug.outputs.grain import GrainBatches  # noqa: E402  (needs grain)

SEED = 7


def dataset(initial_epoch: int = 0, opened: list[int] | None = None) -> GrainBatches:
    """A Grain dataset of 3 batches ``(epoch, i)`` per epoch."""
    opened = [] if opened is None else opened
    batches = Batches(
        lambda e, first: Counting(e, opened, first), 3, 1, initial_epoch=initial_epoch
    )
    return GrainBatches(batches, SEED)


def test_every_iterator_is_the_next_epoch_and_one_left_unfinished_runs_again() -> None:
    opened: list[int] = []
    ds = dataset(2, opened)
    assert next(iter(ds)) == (2, 0)  # Keras' look at the element spec, then left
    assert list(ds) == [(2, 0), (2, 1), (2, 2)]
    assert list(ds) == [(3, 0), (3, 1), (3, 2)]
    assert opened == [2, 2] and len(ds) == 3


def test_the_state_names_the_epoch_and_the_next_batch() -> None:
    it = iter(dataset(1))
    states = [it.get_state()]
    for _ in it:
        states.append(it.get_state())
    assert [(s["epoch"], s["batch"]) for s in states] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert all(s["batches"] == 3 and s["seed"] == SEED for s in states)
    assert json.loads(json.dumps(states[1])) == states[1]  # what Grain's handler writes


def test_a_repeated_dataset_runs_epoch_after_epoch() -> None:
    it = iter(dataset().repeat())
    got = [next(it) for _ in range(7)]
    assert got == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert it.get_state() == {"epoch": 2, "batch": 1, "batches": 3, "seed": SEED}


@pytest.mark.parametrize("taken", [0, 2, 3, 4, 6])
def test_grains_checkpoint_handler_restores_the_rest_of_the_stream(
    tmp_path: Path, taken: int
) -> None:
    """Saved and restored by ``grain.checkpoint.CheckpointHandler`` through a Grain ``map``
    (what Keras' Grain adapter adds), into a fresh dataset: the same batches from there on,
    across an epoch's end included, and the restored epoch's pipeline opened once."""
    from etils import epath

    handler = grain.checkpoint.CheckpointHandler()
    ds = dataset().repeat().map(lambda b: (b, "mapped"))
    it = iter(ds)
    for _ in range(taken):
        next(it)
    handler.save(epath.Path(tmp_path), item=it)
    want = [next(it) for _ in range(5)]
    opened: list[int] = []
    restored = iter(dataset(opened=opened).repeat().map(lambda b: (b, "mapped")))
    handler.restore(epath.Path(tmp_path), item=restored)
    assert [next(restored) for _ in range(5)] == want
    assert opened[0] == taken // 3


def test_an_epoch_iterator_restored_at_its_end_ends_and_the_next_is_the_next_epoch() -> None:
    ds = dataset()
    it = iter(ds)
    it.set_state({"epoch": 4, "batch": 3, "batches": 3, "seed": SEED})
    assert list(it) == []
    assert list(ds) == [(5, 0), (5, 1), (5, 2)]


def test_a_restored_epoch_iterator_gives_the_rest_of_its_epoch() -> None:
    ds = dataset()
    it = iter(ds)
    it.set_state({"epoch": 3, "batch": 1, "batches": 3, "seed": np.int64(SEED)})
    assert list(it) == [(3, 1), (3, 2)]
    assert list(ds) == [(4, 0), (4, 1), (4, 2)]


GOOD = {"epoch": 1, "batch": 1, "batches": 3, "seed": SEED}


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ({**GOOD, "seed": 8}, "saved with seed 8, but this dataset's seed is 7"),
        ({**GOOD, "batches": 4}, "saved from a dataset of 4 batches per epoch; this one has 3"),
        ({**GOOD, "batch": 4}, "batch 4 is past the epoch's 3"),
        ({**GOOD, "epoch": -1}, "epoch must be a whole number >= 0, got -1"),
        ({**GOOD, "batch": 1.5}, "batch must be a whole number >= 0, got 1.5"),
        ({**GOOD, "epoch": True}, "epoch must be a whole number >= 0, got True"),
        ({"epoch": 1, "batch": 1}, ".*has the keys"),
        ({**GOOD, "world": 2}, ".*has the keys"),
        ("epoch 1", ".*has the keys .* got str"),
    ],
)
def test_a_state_that_does_not_fit_is_refused_by_name(state: Any, says: str) -> None:
    it = iter(dataset())
    with pytest.raises(ConfigError, match=f"state: {says}"):
        it.set_state(state)
    assert it.get_state() == {"epoch": 0, "batch": 0, "batches": 3, "seed": SEED}  # unchanged


def test_grain_not_installed_is_a_backend_error_naming_the_extra(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "grain", None)  # as if not installed
    with pytest.raises(BackendError, match=r"install daliaug's grain extra: pip install"):
        daliaug.make_dataset(config_for(demo_dir), framework="grain")


def test_a_grain_state_without_the_streams_state_is_refused_by_name(demo_dir: Path) -> None:
    """Over ``make_dataset``'s batches a Grain state holds the stream's state, which decides
    the restore; one without it (an earlier daliaug's) is refused, naming why."""
    config = config_for(demo_dir, backend="opencv", seed=SEED)
    iterator = iter(GrainBatches(daliaug.make_dataset(config, framework="numpy"), SEED))
    next(iterator)
    state = iterator.get_state()
    assert state["stream"]["position"] == config.batch_size and state["batch"] == 1
    with pytest.raises(ConfigError, match=r"state: .*has none: saved by an earlier daliaug"):
        iterator.set_state({k: v for k, v in state.items() if k != "stream"})
    iterator.set_state(state)
    assert iterator.get_state() == state
