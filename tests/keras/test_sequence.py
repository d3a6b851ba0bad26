"""The flows as Keras ``Sequence``s: ``it[i]`` is batch ``i`` of the current epoch, the batch
iterating the dataset yields in that epoch (computed on its own, in any order, across pipeline
windows); ``len``, ``next``, ``reset`` and ``on_epoch_end`` behave as Keras' own iterators'."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.keras.conftest import daliaug_generator, images, keras_generator

AUGMENT = {"rotation_range": 30, "zoom_range": 0.2, "horizontal_flip": True}


def epoch(ds: object) -> list[tuple[np.ndarray, ...]]:
    return [tuple(t.numpy() for t in b) for b in ds]


def same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pipelines of two batches of 4, so that reading in order crosses windows."""
    monkeypatch.setattr("daliaug.keras.random_access.WINDOW", 8)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs",
    [AUGMENT, {**AUGMENT, "samplewise_center": True, "channel_shift_range": 20.0}],
    ids=["in-graph", "with-stage"],
)
def test_item_is_the_batch_iteration_yields(backend: str, kwargs: dict, small_windows) -> None:
    x, y = images(11, 16, 16), np.arange(11) % 3
    flow = daliaug_generator(backend=backend, **kwargs).flow(
        x, y, batch_size=4, sample_weight=np.linspace(1, 2, 11)
    )
    first, second = epoch(flow), epoch(flow)
    assert len(flow) == len(first) == 3
    for i in (2, 0, 1):  # any order
        assert same(flow[i], first[i]), i
    flow.on_epoch_end()
    assert [same(flow[i], second[i]) for i in range(3)] == [True] * 3


def test_files_item_is_the_batch_iteration_yields(backend: str, class_dir: Path) -> None:
    flow = daliaug_generator(backend=backend, **AUGMENT).flow_from_directory(
        str(class_dir), target_size=(20, 20), batch_size=5, class_mode="sparse"
    )
    batches = epoch(flow)
    assert [same(flow[i], batches[i]) for i in (1, 0, 2)] == [True] * 3


@pytest.mark.slow
def test_item_does_not_move_the_epochs_of_iteration() -> None:
    flow = daliaug_generator(**AUGMENT).flow(images(6), np.arange(6), batch_size=4, seed=1)
    peek = flow[1]
    next(flow)
    batches = epoch(flow)
    assert same(peek, batches[1])


@pytest.mark.slow
def test_protocol_as_keras() -> None:
    """``len``, ``next`` running on into the next epoch, ``reset``, the error past the end,
    and ``flow(x)`` giving the images alone, as Keras' own iterators."""
    x, y = images(10, 12, 12), np.arange(10)
    ours = daliaug_generator().flow(x, y, batch_size=4, shuffle=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = keras_generator().flow(x, y, batch_size=4, shuffle=False)
    assert len(ours) == len(theirs) == 3
    for _ in range(5):
        a, b = next(ours), next(theirs)
        assert np.array_equal(a[1], b[1]) and a[0].shape == b[0].shape
    ours.reset()
    theirs.reset()
    assert np.array_equal(next(ours)[1], next(theirs)[1])
    with pytest.raises(ValueError) as keras_error:
        theirs[3]
    with pytest.raises(ValueError, match=str(keras_error.value)):
        ours[3]
    only_x = daliaug_generator().flow(x, batch_size=4, shuffle=False)
    assert isinstance(only_x[0], np.ndarray) and isinstance(next(only_x), np.ndarray)
    assert np.array_equal(only_x[2], keras_generator().flow(x, batch_size=4, shuffle=False)[2])
