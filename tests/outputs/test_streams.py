"""The epoch streams under every ``make_dataset`` (``daliaug.outputs.tfdata.streams``): one
epoch per iteration from the clock, errors with their message, a bound on iterations dropped
half read, and no ``Dataset.from_generator`` (whose op fixes glibc's ``mmap`` threshold at
128 KiB for the whole process, so that DALI's buffers are page-faulted in afresh on every use)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import numpy as np
import pytest
import tensorflow as tf

from daliaug.epoch import EpochClock
from daliaug.errors import DataError
from daliaug.outputs.dataset import make_dataset
from daliaug.outputs.tfdata import streams
from daliaug.outputs.tfdata.streams import counted
from tests.helpers import spec_of

PAIR = (tf.TensorSpec((None,), tf.int64), tf.TensorSpec((None, 2), tf.float32))


def epoch_rows(epoch: int, first: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Three batches of ``epoch`` from batch ``first``: indices ``10 * epoch + i`` and rows of
    ``i`` (as int64, cast to the stream's float32)."""
    for i in range(first, 3):
        yield np.full(i + 1, 10 * epoch + i), np.full((i + 1, 2), i)


def read(iterator: Iterator) -> list:
    return [tuple(t.numpy().tolist() for t in item) for item in iterator]


def test_each_iteration_reads_the_next_epoch_with_the_given_shapes_and_dtypes() -> None:
    stream = counted(epoch_rows, PAIR, EpochClock(start=2))
    assert stream.element_spec == PAIR
    first, second = read(stream), read(stream)
    assert [index for index, _ in first] == [[20], [21, 21], [22, 22, 22]]
    assert [index[0] for index, _ in second] == [30, 31, 32]
    assert first[2][1] == [[2.0, 2.0]] * 3

    single = counted(lambda e, _: iter([np.arange(e, e + 2)]), PAIR[0], EpochClock())
    assert single.element_spec == PAIR[0]
    assert [[t.numpy().tolist() for t in single] for _ in range(2)] == [[[0, 1]], [[1, 2]]]


def test_a_seeked_clock_starts_each_stream_once_at_its_batch() -> None:
    """A resumed epoch: the first iteration of the seeked epoch begins at the given batch,
    the iterations after it at batch 0."""
    stream = counted(epoch_rows, PAIR, EpochClock(start=4, first=2))
    assert [index for index, _ in read(stream)] == [[42, 42, 42]]
    assert [index[0] for index, _ in read(stream)] == [50, 51, 52]
    stream = counted(epoch_rows, PAIR, clock := EpochClock())
    clock.seek(7, 1)
    assert [index[0] for index, _ in read(stream)] == [71, 72]


def test_iterations_read_at_once_keep_their_own_epochs() -> None:
    stream = counted(epoch_rows, PAIR, EpochClock())
    a, b = iter(stream), iter(stream)
    assert next(a)[0].numpy().tolist() == [0]
    assert next(b)[0].numpy().tolist() == [10]  # b claimed its epoch when first read
    assert [index[0] for index, _ in read(a)] == [1, 2]
    assert [index[0] for index, _ in read(b)] == [11, 12]


def test_an_iteration_dropped_half_read_is_released_after_a_few_newer_ones() -> None:
    stream = counted(epoch_rows, PAIR, EpochClock())
    iterators = [iter(stream) for _ in range(6)]
    for iterator in iterators:
        next(iterator)
    with pytest.raises(tf.errors.OpError, match="iterations of one daliaug dataset"):
        read(iterators[0])  # a batch read ahead before the drop may still come
    assert [index[0] for index, _ in read(iterators[-1])] == [51, 52]


def test_an_error_in_python_reaches_the_iterator_with_its_message() -> None:
    def failing(epoch: int, first: int) -> Iterator[np.ndarray]:
        yield np.zeros(1, np.int64)
        raise DataError("photos/cat.jpg changed since it was checked")

    iterator = iter(counted(failing, PAIR[0], EpochClock()))
    next(iterator)
    with pytest.raises(tf.errors.OpError, match=r"photos/cat\.jpg changed since it was checked"):
        next(iterator)


def graph_ops(dataset: tf.data.Dataset) -> set[str]:
    """Every op of ``dataset``'s graph, its functions' included."""
    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return {node.op for node in nodes}


@pytest.mark.parametrize("backend", ["cpu", "tf"])
def test_make_dataset_has_no_generator_op(backend: str) -> None:
    config = {"source": {"type": "arrays"}, "image_size": 8, "batch_size": 2, "backend": backend}
    dataset = make_dataset(config, x=np.zeros((4, 8, 8, 3), np.uint8), y=np.zeros(4, int))
    ops = graph_ops(dataset)
    assert "EagerPyFunc" in ops or "PyFunc" in ops  # the feed is there, from Python
    assert "GeneratorDataset" not in ops


MALLOC = """
import resource, sys
import numpy as np
import tensorflow as tf
import daliaug

if sys.argv[1] == "daliaug":
    config = {"source": {"type": "arrays"}, "image_size": 8, "batch_size": 2, "backend": "cpu"}
    x, y = np.zeros((4, 8, 8, 3), np.uint8), np.zeros(4, int)
    assert len(list(daliaug.make_dataset(config, x=x, y=y))) == 2
else:  # the control: the threshold fixed at 128 KiB, as mallopt(M_MMAP_THRESHOLD) fixes it
    import ctypes
    assert ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 17) == 1
np.ones(1 << 17)  # one MiB, freed: glibc's dynamic threshold now keeps such blocks
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    np.ones(1 << 17)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_daliaug_dataset_leaves_the_processs_malloc_settings_alone() -> None:
    """A MiB allocated and freed 100 times after an epoch: reused memory (a few page faults)
    after a daliaug dataset; with the ``mmap`` threshold fixed at 128 KiB (the control:
    ``mallopt``, which some libraries call when they load, a ``tf.data`` generator op once did
    here) a fresh mapping each time, 256 page faults each."""

    def faults(mode: str) -> int:
        run = subprocess.run(
            [sys.executable, "-c", MALLOC, mode], capture_output=True, text=True, timeout=180
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return int(run.stdout.split()[-1])

    assert faults("daliaug") < 2_000
    assert faults("fixed") > 20_000, "the control no longer maps each MiB afresh"


def test_an_aligned_batch_reaches_tf_data_without_a_copy() -> None:
    """The OpenCV engine's batches (:func:`~daliaug.engines.opencv.image.output_array`) are
    aligned so that ``tf.numpy_function`` takes them as they are (any other array is copied,
    at about 1 ms per MB)."""
    from daliaug.config import load_config
    from daliaug.engines.opencv.image import output_array

    config = load_config({"source": {"type": "arrays"}, "image_size": [7, 9], "batch_size": 2})
    batch = output_array(spec_of(config), 2)
    batch[...] = 1.5
    spec = tf.TensorSpec((None, 7, 9, 3), tf.float32)
    (tensor,) = counted(lambda epoch, _: iter([batch]), spec, EpochClock())
    assert np.shares_memory(np.asarray(tensor), batch)


@pytest.fixture
def exiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streams' exit bookkeeping of this test's own (ending it stops no other stream)."""
    monkeypatch.setattr(streams, "_CALLS", streams._StreamCalls())
    monkeypatch.setattr(streams, "_STREAMS", weakref.WeakSet())


def _begun() -> tuple[streams._Epochs, np.int64]:
    """A stream with one iteration begun (its first item read) and that iteration's token."""
    stream = streams._Epochs(epoch_rows, PAIR, EpochClock())
    token, more, *_ = stream.read(streams._Epochs.NEW)
    assert more and stream.live
    return stream, token


@pytest.mark.usefixtures("exiting")
def test_exit_waits_for_an_iteration_still_read_to_make_its_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An iterator filling its buffers at exit calls its stream again a little later (here
    after 0.2 s, when the old wait had returned): the exit waits for that call, which ends the
    iteration, so that the call does not begin once Python's teardown has (the thread asking
    for the GIL then is ended, its call never returns, and the iterator's destructor waits for
    it)."""
    monkeypatch.setattr(streams, "IDLE", 2.0)  # (a loaded machine's delays well within it)
    stream, token = _begun()
    answers: list[tuple] = []

    def later_call() -> None:
        time.sleep(0.2)
        answers.append(stream.read(token))

    caller = threading.Thread(target=later_call)
    caller.start()
    streams._end_streams()
    assert not stream.live  # the call came, and ended the iteration
    caller.join()
    assert not answers[0][1]


@pytest.mark.usefixtures("exiting")
def test_exit_does_not_wait_long_for_an_iteration_that_makes_no_call() -> None:
    """An iterator whose buffers are full (or that was dropped) makes no call: the exit waits
    about :data:`IDLE` seconds for it, not its whole timeout."""
    stream, _ = _begun()
    started = time.monotonic()
    streams._end_streams(timeout=5.0)
    assert time.monotonic() - started < 2.5
    assert stream.live
