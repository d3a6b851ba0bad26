"""The epochs of :mod:`daliaug.epoch` as ``tf.data`` streams, for every backend's dataset.

A ``tf.data`` dataset is iterated once per epoch (``model.fit`` makes a new iterator each
epoch), so each stream asks the dataset's :class:`~daliaug.epoch.EpochClock` which epoch a new
iteration is. Streams of one dataset are built from one :class:`EpochFeed` (one seed) and one
clock, so they stay aligned sample for sample. Column sources come from the host
(:class:`EpochFeed`, through :func:`counted`: one Python call per chunk of batches, arrays of
indices and per-sample numbers); TFRecords are read by ``tf.data`` itself
(:mod:`daliaug.engines.tf.records`, on these streams' clock through :func:`counted`).
"""

from __future__ import annotations

import atexit
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from daliaug.batch_layout import BatchLayout
from daliaug.engine_spec import EngineSpec
from daliaug.engines.feed import INPUTS, WARP_PART, EpochFeed
from daliaug.engines.tf.held import held_constant
from daliaug.engines.tf.traced import plain
from daliaug.epoch import EpochClock
from daliaug.run import Run
from daliaug.sources.segmentation import MaskTargets

CHUNK = 8192
"""Samples per Python call of a feed stream (index arrays and per-sample numbers are small)."""


def in_flight(run: Run) -> int:
    """The batches a feed stream's graph may be reading at once: the chunk being cut into
    batches and the next one, and the queues after them."""
    return 2 * max(1, CHUNK // run.batch_size) + run.spec.prefetch + 4


_TF_DTYPES = {"float32": tf.float32, "float16": tf.float16, "uint8": tf.uint8}


def element_spec(
    spec: EngineSpec, num_classes: int, layout: BatchLayout, target_shape: tuple[int, ...] = ()
) -> tuple[tf.TensorSpec, ...]:
    """Shapes and dtypes of a graph's flat batch in ``layout``, known from the run's ``spec``
    (``target_shape``: the per-sample shape of ``raw`` targets); with
    ``label_mode: none`` ``(images[, weights])`` (DALI's datasets yield tuples; Keras unpacks
    a 1-tuple as the inputs). Detection inputs have the per-sample shapes of
    :attr:`BatchLayout.boxes`; :func:`nested` makes them Keras' dict."""
    h, w = spec.image_size
    c = spec.channels
    batch = spec.batch_size if spec.drop_remainder else None
    nhwc = spec.output.layout == "NHWC"
    image_shape = (batch, h, w, c) if nhwc else (batch, c, h, w)
    images = tf.TensorSpec(image_shape, _TF_DTYPES[spec.output.dtype])
    specs = {"images": images, "weights": tf.TensorSpec((batch,), tf.float32)}
    for name, shape in layout.boxes.items():
        specs[name] = tf.TensorSpec((batch, *shape), INPUTS[name].dtype)
    source = spec.masks
    if layout.target == "masks":
        assert isinstance(source, MaskTargets)
        if source.mask_output == "one_hot":
            shape = (batch, h, w, num_classes) if nhwc else (batch, num_classes, h, w)
            specs["targets"] = tf.TensorSpec(shape, tf.float32)
        else:
            specs["targets"] = tf.TensorSpec((batch, h, w), tf.as_dtype(source.mask_dtype))
    elif layout.target == "images":
        specs["targets"] = images
    elif layout.target == "labels":
        specs["targets"] = {
            "int": tf.TensorSpec((batch,), tf.int32),
            "categorical": tf.TensorSpec((batch, num_classes), tf.float32),
            "binary": tf.TensorSpec((batch, 1), tf.float32),
            "float": tf.TensorSpec((batch,), tf.float32),
            "raw": tf.TensorSpec((batch, *target_shape), tf.float32),
        }[spec.label_mode]
    return layout.flat(specs)


def signature(run: Run, weighted: bool) -> tuple[BatchLayout, tuple[tf.TensorSpec, ...]]:
    """The layout of the run's batches (``weighted``: with weights) and the element spec of a
    graph's flat batches in it."""
    samples, layout = run.samples, run.layout(weighted)
    shape = samples.target_shape
    return layout, element_spec(run.spec, samples.num_classes, layout, shape)


def nested(dataset: tf.data.Dataset, layout: BatchLayout) -> tf.data.Dataset:
    """A graph's flat batches as ``layout`` nests them (:meth:`BatchLayout.nest
    <daliaug.batch_layout.BatchLayout.nest>`); ``dataset`` itself without detection
    inputs."""
    if not layout.boxes:
        return dataset
    return dataset.map(plain(lambda *batch: layout.nest(batch)))


def counted(
    epoch_batches: Callable[[int, int], Iterator],
    signature: tf.TensorSpec | tuple[tf.TensorSpec, ...],
    clock: EpochClock,
) -> tf.data.Dataset:
    """A dataset whose iterations yield ``epoch_batches(e, first)`` for the epochs ``e`` the
    clock gives this stream, each from its batch ``first`` (0 but in a resumed epoch).

    Built from ``tf.numpy_function`` calls, not ``Dataset.from_generator``: TensorFlow's
    generator op fixes glibc's ``mmap`` threshold at 128 KiB for the whole process (a
    workaround for Python 3.11, applied when the op is made), after which every buffer above
    that size, DALI's image batches included, is mapped afresh and page-faulted in on each use
    (20-40% more CPU per image on DALI's CPU path; ``bench/README.md``)."""
    specs = signature if isinstance(signature, tuple) else (signature,)
    stream = _Epochs(epoch_batches, specs, clock)

    def epoch_read(token: tf.Tensor, _: tf.Tensor) -> tuple[tf.Tensor, tuple[tf.Tensor, ...]]:
        token, more, *items = tf.numpy_function(
            stream.read, [token], (tf.int64, tf.bool, *(spec.dtype for spec in specs))
        )
        token.set_shape(())
        more.set_shape(())
        for item, spec in zip(items, specs, strict=True):
            item.set_shape(spec.shape)
        return token, (more, *items)

    # the token is the scan's state: each iterator starts from NEW and reads its own epoch
    steps = tf.data.Dataset.from_tensors(np.int64(0)).repeat().scan(_Epochs.NEW, plain(epoch_read))
    items = steps.take_while(plain(lambda more, *_: more))
    return items.map(plain(lambda _, *item: item if isinstance(signature, tuple) else item[0]))


class _Epochs:
    """The Python side of a :func:`counted` stream: each iteration of the stream reads with
    the token :data:`NEW` first, which starts it (:meth:`begin`: asks the clock for its epoch
    and makes the iteration's token), then with the token :meth:`read` gave back; each call
    gives the iteration's next item, ``(token, more, *arrays)``.

    An iterator dropped half read never says so; so that its epoch is not held for ever, a
    stream keeps its :data:`LIVE` newest iterations only, and reading an older one fails."""

    LIVE = 4
    NEW = np.int64(-1)
    """The token of an iteration not started yet."""

    def __init__(
        self,
        epoch_batches: Callable[[int, int], Iterator],
        specs: tuple[tf.TensorSpec, ...],
        clock: EpochClock,
    ) -> None:
        self.epoch_batches, self.clock = epoch_batches, clock
        self.specs = [(spec.dtype.as_numpy_dtype, spec.shape) for spec in specs]
        self.live: dict[int, Iterator] = {}
        self.tokens = itertools.count()
        self.dropped: set[int] = set()
        _STREAMS.add(self)

    def begin(self) -> np.int64:
        token = next(self.tokens)
        if not _CALLS.exiting:
            with _CALLS:
                self.live[token] = iter(self.epoch_batches(*self.clock.begin(self)))
        while len(self.live) > self.LIVE:
            oldest = min(self.live)
            self.dropped.add(oldest)
            del self.live[oldest]
        return np.int64(token)

    def read(self, token: np.int64) -> tuple[np.ndarray, ...]:
        if token == self.NEW:
            token = self.begin()
        items = self.live.get(int(token))
        if items is None and int(token) in self.dropped:
            raise RuntimeError(
                f"more than {self.LIVE} iterations of one daliaug dataset were being read at "
                "once; the oldest was dropped (finish or delete iterators you no longer read)"
            )
        with _CALLS:
            item = _END if items is None or _CALLS.exiting else next(items, _END)
        if item is _END:
            self.live.pop(int(token), None)
            return (token, np.bool_(False), *self._empty())
        arrays = item if isinstance(item, tuple) else (item,)
        typed = (np.asarray(a, dtype) for a, (dtype, _) in zip(arrays, self.specs, strict=True))
        return (token, np.bool_(True), *typed)

    def _empty(self) -> list[np.ndarray]:
        """Arrays of the stream's dtypes and ranks with no rows (an ended stream's filler)."""
        return [np.zeros([d or 0 for d in shape.as_list()], dtype) for dtype, shape in self.specs]


class _StreamCalls:
    """The streams' Python calls in progress, when the last began, and whether the
    interpreter is exiting.

    A ``tf.data`` iterator still being read when a script ends is destroyed during the
    interpreter's teardown, which holds the GIL while the iterator waits for its stream's call
    in flight; that call needs the GIL (a thread that asks for it once the teardown has begun
    is ended by Python, and its call never returns), and the process would hang. So at exit
    every stream is ended first (:func:`_end_streams`): calls in progress finish, later ones
    end the stream without running."""

    def __init__(self) -> None:
        self.exiting = False
        self.running = 0
        self.began = time.monotonic()
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.running += 1
            self.began = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.running -= 1


_CALLS = _StreamCalls()
_END = object()
_STREAMS: weakref.WeakSet[_Epochs] = weakref.WeakSet()
IDLE = 0.5
"""Seconds of the exit without a stream's call after which the iterations left unended are
taken as idle (their iterators full, or dropped) and the exit goes on: a heuristic (an
iterator may still call later, as its autotuning grows a buffer), long enough for a thread
of a machine loaded past its cores to be run."""


@atexit.register
def _end_streams(timeout: float = 5.0) -> None:
    """Ends every stream before Python tears its objects down (see :class:`_StreamCalls`):
    calls already waiting for the GIL get it while this sleeps, those running finish, and the
    iterations still read (an iterator filling its buffers) are each ended by their next call;
    where none comes for :data:`IDLE` seconds of the exit, the exit goes on."""
    _CALLS.exiting = True
    began = time.monotonic()
    deadline = began + timeout
    time.sleep(0.02)
    while time.monotonic() < deadline:
        if not _CALLS.running:
            if _all_ended():
                return
            if time.monotonic() - max(began, _CALLS.began) > IDLE:
                return
        time.sleep(0.01)


def _all_ended() -> bool:
    """Whether no stream has an iteration still live (asked again later where a stream was
    being made meanwhile)."""
    try:
        return not any(stream.live for stream in list(_STREAMS))
    except RuntimeError:  # (the set changed size while it was copied)
        return False


def _spec(feed: EpochFeed, name: str) -> tf.TensorSpec:
    """The batch ``TensorSpec`` of a feed's ``name`` (an input, ``index`` or ``params``)."""
    if name == "index":
        return tf.TensorSpec((None,), tf.int64)
    if name == "params":
        return tf.TensorSpec((None, len(feed.plan.param_keys)), tf.float32)
    if name == "warp":
        return tf.TensorSpec((None, feed.layout.width), tf.float32)
    if name.startswith(WARP_PART):
        return tf.TensorSpec((None, *feed.layout.shape(name.removeprefix(WARP_PART))), tf.float32)
    if name == "weight":
        return tf.TensorSpec((None,), tf.float32)
    if feed.boxes is not None and name in feed.boxes.shapes:
        return tf.TensorSpec((None, *feed.boxes.shapes[name]), tf.as_dtype(INPUTS[name].dtype))
    if name not in feed.samples.columns:  # bytes the host reads from files
        return tf.TensorSpec((None, None), tf.uint8)
    column = feed.samples.columns[name]
    spec = INPUTS[name]
    shape = column.shape[1:] if spec.ndim < 0 else column.shape[1 : 1 + spec.ndim]
    return tf.TensorSpec((None, *shape), tf.as_dtype(spec.dtype))


def feed_stream(
    feed: EpochFeed,
    names: str | Sequence[str],
    clock: EpochClock,
    check_files: bool = False,
    rows: bool = False,
) -> tf.data.Dataset:
    """Batches of ``names`` (see :meth:`EpochFeed.batches`, also for ``check_files``), one
    epoch per iteration: tuples, or plain tensors for a single name given as a string; with
    ``rows``, their samples one by one. Python makes them a chunk of batches at a time
    (:data:`CHUNK` samples), which ``tf.data`` cuts back into batches (or samples); a daliaug
    error in Python reaches the iterator with its message."""
    single = isinstance(names, str)
    wanted = (names,) if single else tuple(names)

    def epoch_chunks(epoch: int, first: int) -> Iterator:
        for chunk in feed.chunks(epoch, wanted, CHUNK, check_files, first):
            yield chunk[wanted[0]] if single else tuple(chunk[name] for name in wanted)

    specs = tuple(_spec(feed, name) for name in wanted)
    chunks = counted(epoch_chunks, specs[0] if single else specs, clock)
    return chunks.unbatch() if rows else chunks.rebatch(feed.epochs.batch_size)


def column_stream(feed: EpochFeed, name: str, clock: EpochClock) -> tf.data.Dataset:
    """Batches of the source column ``name``, gathered in the graph from the epoch's sample
    indices."""
    column = held_constant(feed.samples, name, lambda: feed.samples.columns[name])
    indices = feed_stream(feed, "index", clock, check_files=name in feed.samples.files)
    return indices.map(plain(lambda index: tf.gather(column, index)))


def report_length(dataset: tf.data.Dataset, batches: int) -> None:
    """Make ``dataset.cardinality()`` say ``batches``, the batches of one full iteration, where
    ``tf.data`` cannot be told: a DALI dataset reports an infinite cardinality (its pipelines
    run until their inputs end), a GPU-placed one takes no further ``tf.data`` stage
    (``assert_cardinality`` has no GPU kernel), and a resumed epoch (:mod:`daliaug.resume`)
    holds fewer batches than the others (:func:`epoch_length`). Keras' dataset adapter asks
    ``cardinality()``; told infinite, ``model.fit`` shows no progress target in the first epoch
    and warns that the input "ran out of data" at the end of every epoch."""

    def cardinality() -> tf.Tensor:
        return tf.constant(batches, tf.int64)

    dataset.cardinality = cardinality


def epoch_length(dataset: tf.data.Dataset, batches: int, resumes: bool) -> tf.data.Dataset:
    """``dataset``, whose every iteration holds ``batches`` batches: asserted
    (``assert_cardinality``: it fails loudly should an epoch ever hold another number, and
    stages after it know the length), or, for a dataset made with a state whose first epoch
    holds only the batches left (``resumes``), reported (:func:`report_length`)."""
    if not resumes:
        return dataset.apply(tf.data.experimental.assert_cardinality(batches))
    report_length(dataset, batches)
    return dataset
