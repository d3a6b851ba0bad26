"""DALI's own JAX and PyTorch iterators (what ``make_dataset`` hands over on GPUs) resumed
mid-epoch and on another world. They run here over DALI's CPU pipelines (``iterates`` made to
say yes, the rest of ``make_dataset`` as it is): the same code that defines the GPU pipelines,
feeds them from the state's batch and sizes DALI's iterator for the positions left, compared
with the host's batches of the same config (DALI on the CPU, NumPy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.config import load_config
from daliaug.engine_names import Choice
from daliaug.outputs.batches import host_loaders, local_batches
from daliaug.outputs.fit import FitBatches
from daliaug.outputs.jax import _dali_jax
from daliaug.outputs.options import DEFAULT_OPTIONS
from daliaug.outputs.resumable import resumable
from daliaug.outputs.shards import Shards
from daliaug.prepare import prepare
from tests.helpers import run_keras_job
from tests.test_resume import X, Y, arrays_config, epochs_of, same

pytestmark = [
    pytest.mark.filterwarnings("ignore::daliaug.errors.BackendWarning"),
    pytest.mark.filterwarnings("ignore:Please set `reader_name`"),
]


@pytest.fixture
def iterators(monkeypatch: pytest.MonkeyPatch) -> None:
    """DALI's framework iterators over CPU pipelines for the JAX and PyTorch outputs."""
    monkeypatch.setattr("daliaug.outputs.jax.iterates", lambda run: True)
    monkeypatch.setattr("daliaug.outputs.torch.iterates", lambda run: True)


def _config() -> dict[str, Any]:
    return arrays_config("cpu")


def _iterated(framework: str, state: Any = None) -> Any:
    dataset = daliaug.make_dataset(_config(), framework=framework, state=state, x=X, y=Y)
    assert "IteratorEpochs" in type(dataset._open_at(0, 0)).__name__  # DALI's own iterator
    return dataset


def _host(state: Any = None) -> Any:
    return daliaug.make_dataset(_config(), framework="numpy", state=state, x=X, y=Y)


@pytest.mark.usefixtures("iterators")
@pytest.mark.parametrize("framework", ["jax", "torch"])
@pytest.mark.parametrize("after", [1, 3, 5])
def test_dalis_iterators_resume_mid_epoch_byte_for_byte(framework: str, after: int) -> None:
    """A state after ``after`` of an epoch's 6 batches (5: before its smaller last one),
    restored into DALI's iterator: the rest of that epoch and the whole next one, byte for byte
    the host's uninterrupted batches (the iterator opened anew for the next epoch)."""
    host = _host()
    whole = epochs_of(host, 2)
    taken = _host()
    for count, _ in enumerate(taken, 1):
        if count == after:
            break
    resumed = _iterated(framework, taken.get_state())
    rest, following = epochs_of(resumed, 2)
    assert same(rest, whole[0][after:])
    assert same(following, whole[1])
    assert resumed.get_state().epoch == 2


@pytest.mark.usefixtures("iterators")
def test_dalis_iterator_gives_its_state_and_set_state_seeks() -> None:
    """A state taken from DALI's iterator mid-epoch is the host's at the same batch, and
    ``set_state`` on a running iterator output makes its next pass the rest."""
    host = _host()
    iterated = _iterated("torch")
    for count, _ in enumerate(iterated, 1):
        if count == 2:
            break
    for count, _ in enumerate(host, 1):
        if count == 2:
            break
    state = iterated.get_state()
    assert state == host.get_state()
    again = _iterated("torch")
    again.set_state(state)
    assert same(epochs_of(again, 1)[0], epochs_of(_host(state), 1)[0])


@pytest.mark.slow
@pytest.mark.usefixtures("iterators")
@pytest.mark.parametrize("framework", ["jax", "torch", "grain"])
def test_dalis_iterator_takes_the_rest_of_an_epoch_another_world_began(
    framework: str, tmp_path: Path
) -> None:
    """A state a world of 2 took (JAX devices under DataParallel, host batches) restored into
    DALI's iterator on a world of 1: every sample left exactly once, each with the pixels the
    host's rest of the same state gives it, and the next epoch whole (through Grain too: a
    Grain dataset made with the state)."""
    spec = {"worlds": [2], "after": [2], "out": str(tmp_path / "out.npz"), "backend": "cpu"}
    report, _ = run_keras_job("tests.elastic_job", "jax", spec, timeout=300)
    state = report["runs"][0]["state"]
    assert (state["world"], state["position"]) == (2, 8)
    from tests.elastic_job import X as JX
    from tests.elastic_job import Y as JY
    from tests.elastic_job import config_of

    config, _ = config_of({"backend": "cpu"})
    made = {"x": JX, "y": JY, "state": state}
    rest = daliaug.make_dataset(config, framework=framework, **made)
    host = daliaug.make_dataset(config, framework="numpy", **made)
    got, expected = epochs_of(rest, 1)[0], epochs_of(host, 1)[0]
    assert same(got, expected)
    labels = sorted(int(x) for batch in got for x in batch[1])
    before = [x for batch in report["runs"][0]["seen"] for x in batch]
    assert sorted(labels + before) == list(range(len(JY)))
    following = epochs_of(rest, 1)[0]
    assert same(following, epochs_of(host, 1)[0])
    assert sorted(int(x) for batch in following for x in batch[1]) == list(range(len(JY)))


def _world(count: int, iterated: bool, state: Any = None) -> Any:
    """The batches of a world of ``count`` shards run in this process side by side: the
    host's (joined) or DALI's JAX iterator over a pipeline per shard (without a device
    sharding, its shards stacked, joined here)."""
    run = prepare(load_config(_config()), Choice("dali", "cpu"), x=X, y=Y)
    split = Shards.split(run, DEFAULT_OPTIONS, count, "device", "a test")
    shards = [split.shard(i) for i in range(count)]
    open_at = _dali_jax(shards, None) if iterated else host_loaders(shards, lambda b: b)
    return resumable(local_batches(shards, open_at, 0, FitBatches), run, state)


def _joined(epoch: list[tuple[np.ndarray, ...]]) -> list[tuple[np.ndarray, ...]]:
    return [tuple(a.reshape(-1, *a.shape[2:]) for a in batch) for batch in epoch]


@pytest.mark.parametrize("taken_by", [2, 4])
def test_dalis_jax_iterator_over_two_pipelines_runs_the_positions_left(taken_by: int) -> None:
    """DALI's JAX iterator over two pipelines (its epoch's size told, all batches full)
    restoring a state a world of ``taken_by`` took after 2 batches: the host's batches of the
    same state, byte for byte, then the next epoch whole."""
    taking = _world(taken_by, False)
    for count, _ in enumerate(taking, 1):
        if count == 2:
            break
    state = taking.get_state()
    iterated, host = _world(2, True, state), _world(2, False, state)
    for _ in range(2):
        assert same(_joined(epochs_of(iterated, 1)[0]), epochs_of(host, 1)[0])
