"""The feed protocol: what a backend's graph takes for each batch, and the host side that makes it.

Every backend computes the same thing from the same inputs. Per batch of samples those are:

* the source's columns (:data:`INPUTS`): ``path`` and ``mask_path`` (UTF-8 file names,
  zero-padded to one ``uint8`` row each), ``encoded`` (encoded images read from WebDataset
  shards, zero-padded likewise), ``image`` (``uint8`` HWC arrays), ``label``
  (``int32``) or ``target`` (``float32`` targets passed through, ``label_mode: raw``), or for
  TFRecords one packed ``record`` row per sample (:class:`RecordLayout`);
* ``warp``: the plan evaluated for each sample (decode window, warp matrices, colour matrix),
  flattened into one ``float32`` vector per sample (:class:`WarpLayout`);
* for weighted datasets, ``weight``: each sample's weight (its own weight times its class
  weight, 0 for padding), which the graph passes through as the last output,
  ``(images, targets, weights)``.

The plan is evaluated once, by :meth:`WarpLayout.evaluate`, over an array namespace
(:class:`~daliaug.kernels.arrays.Arrays`): NumPy on the host here (:class:`EpochFeed`),
TensorFlow where only the TensorFlow graph knows the images' sizes (TFRecords). Only DALI's own
TFRecord reader evaluates the plan inside the DALI graph (:mod:`daliaug.engines.dali.pipeline`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from math import prod
from typing import Any, ClassVar

import numpy as np

from daliaug.algebra import Canvas
from daliaug.config import target_column
from daliaug.detection import BoxTargets
from daliaug.engine_spec import EngineSpec
from daliaug.epoch import Epochs, ParameterRows, RestOfEpoch, RestRows
from daliaug.errors import DataError, carried_error
from daliaug.kernels.arrays import NUMPY, Arrays
from daliaug.plan import Plan
from daliaug.sources.background import (
    BackgroundCheck,
    CheckedEpoch,
    CheckedRest,
    LazyBatches,
)
from daliaug.sources.base import Samples, padded
from daliaug.sources.checks import explain_failure
from daliaug.sources.sample_set import SampleSet
from daliaug.sources.tfrecord import RecordSamples
from daliaug.sources.watch import FileWatch


@dataclass(frozen=True)
class Input:
    """One input of the graph: dtype (NumPy name) and dimensions per sample (-1: the
    column's own, :attr:`Samples.target_shape`)."""

    dtype: str
    ndim: int
    layout: str | None = None


INPUTS: dict[str, Input] = {
    "path": Input("uint8", 1),
    "mask_path": Input("uint8", 1),
    "image": Input("uint8", 3, "HWC"),
    "label": Input("int32", 0),
    "target": Input("float32", -1),
    "record": Input("uint8", 1),
    "encoded": Input("uint8", 1),
    "mask_encoded": Input("uint8", 1),
    "warp": Input("float32", 1),
    "weight": Input("float32", 0),
    "boxes": Input("float32", 2),
    "box_labels": Input("int32", 1),
    "keypoints": Input("float32", 3),
}
"""Every input a graph can take, by name."""


@dataclass(frozen=True)
class WarpLayout:
    """Which of the plan's per-sample inputs a graph takes, and their place in ``warp``.

    ``fuse_roi``: the graph decodes files, so a leading random resized crop becomes the decode
    window (``crop_start``, ``crop_shape``); ``masks``: masks come along and get their own
    resampling inputs (prefixed ``mask_``); ``resize``: the plan is axis-aligned and clamps at
    the border, so it is resampled as a resize of a source window (``resize_start``,
    ``resize_end``) rather than warped (``matrix``). See :meth:`Plan.warp_inputs`. With a
    colour map comes ``recolour``, computed here: 1.0 where the map changes some value (its
    float32 ``colour`` is not the identity, or ``colour_mean`` not zero), else 0.0, the
    graph's predicate for recolouring a sample at all.
    """

    plan: Plan
    fuse_roi: bool
    masks: bool
    resize: bool

    @staticmethod
    def of(plan: Plan, columns: Sequence[str], resizes: bool) -> WarpLayout:
        """The layout for a graph fed these source columns (or ``record``); ``resizes``: the
        graph resamples axis-aligned plans as resizes (where the plan allows)."""
        return WarpLayout(
            plan,
            fuse_roi="image" not in columns,
            masks="mask_path" in columns or "mask_encoded" in columns,
            resize=resizes and plan.resizes,
        )

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The inputs, in their order in ``warp``."""
        resampling = ["resize_start", "resize_end"] if self.resize else ["matrix"]
        names = list(resampling)
        if self.fuse_roi and self.plan.roi_step is not None:
            names += ["crop_start", "crop_shape"]
        if self.masks:
            names += [f"mask_{name}" for name in resampling]
        if self.plan.has_offset:
            names.append("offset")
        if self.plan.has_colour:
            names.append("colour")
            if self.plan.uses_mean:
                names.append("colour_mean")
            names.append("recolour")
        if self.plan.stage_keys:
            names.append("stages")
        return tuple(names)

    def shape(self, name: str) -> tuple[int, ...]:
        """The per-sample shape of input ``name``."""
        c = self.plan.channels
        if name == "recolour":
            return ()
        if name == "colour":
            return (c, c + 1)
        if name == "colour_mean":
            return (c, c)
        if name == "offset":
            return (1,)
        if name == "stages":
            return (len(self.plan.stage_keys),)
        return (2, 3) if name.endswith("matrix") else (2,)

    @cached_property
    def slices(self) -> tuple[tuple[str, int, int, tuple[int, ...]], ...]:
        """``(name, start, stop, shape)`` of each input within one sample's ``warp`` vector."""
        out, start = [], 0
        for name in self.names:
            shape = self.shape(name)
            out.append((name, start, start + prod(shape), shape))
            start += prod(shape)
        return tuple(out)

    @property
    def width(self) -> int:
        """The length of one sample's ``warp`` vector."""
        return self.slices[-1][2]

    def evaluate(self, params: Mapping[str, Any], sizes: Any, xp: Arrays) -> Any:
        """The ``(samples, width)`` float32 ``warp`` of samples with ``params`` (by name, the
        partners paired: :meth:`Plan.paired <daliaug.plan.Plan.paired>`) on images of ``sizes``
        ((height, width) rows)."""
        plan = self.plan
        source = Canvas(h=xp.floats(sizes[:, 0]), w=xp.floats(sizes[:, 1]))
        values = plan.warp_inputs(
            params, source, xp.math, fuse_roi=self.fuse_roi, masks=self.masks, resize=self.resize
        )
        count = xp.length(sizes)
        if "recolour" in self.names:
            colour = xp.columns(values["colour"] + values.get("colour_mean", []), count)
            values["recolour"] = [xp.differs(colour, self.unchanged_colour)]
        flat = [v for name in self.names for v in values[name]]
        return xp.columns(flat, count)

    @property
    def unchanged_colour(self) -> list[float]:
        """``colour`` (and ``colour_mean``) of a map that changes no value: ``[I | 0]`` and
        ``N = 0``."""
        c = self.plan.channels
        identity = np.eye(c, c + 1, dtype=np.float32).ravel().tolist()
        return identity + ([0.0] * c * c if self.plan.uses_mean else [])

    def unpack(
        self, warp: Any, reshape: Callable[[Any, list[int]], Any], batched: bool = False
    ) -> dict[str, Any]:
        """One sample's ``warp`` vector (or a batch of them) cut into its named inputs: a
        scalar indexed, a vector sliced, a matrix sliced and reshaped with the backend's
        ``reshape`` (in a DALI graph, one CPU operator per input but the matrices)."""
        out = {}
        for name, a, b, shape in self.slices:
            if not shape:
                out[name] = warp[:, a] if batched else warp[a]
                continue
            part = warp[:, a:b] if batched else warp[a:b]
            if len(shape) > 1:
                part = reshape(part, [-1, *shape] if batched else list(shape))
            out[name] = part
        return out


@dataclass(frozen=True)
class RecordLayout:
    """One TFRecord sample as one ``uint8`` row: the encoded image's length, the label (two
    little-endian ``int32``) and the sample's weight (``float32``), its ``warp`` (``float32``,
    :class:`WarpLayout`), then the encoded image, zero-padded to the longest of its batch.
    TensorFlow reads the records and packs them; the DALI graph unpacks them."""

    warp: WarpLayout
    length: ClassVar[slice] = slice(0, 4)
    label: ClassVar[slice] = slice(4, 8)
    weight: ClassVar[slice] = slice(8, 12)

    @property
    def warp_bytes(self) -> slice:
        return slice(12, 12 + 4 * self.warp.width)

    @property
    def image_start(self) -> int:
        return self.warp_bytes.stop


READ_ON_HOST = {"path": "encoded", "mask_path": "mask_encoded"}
"""The input a file column becomes where the host reads the files (:attr:`FeedForm.reads`)."""

WARP_PART = "warp_"
"""The prefix of an input holding one named part of ``warp`` (:attr:`FeedForm.warp`)."""


@dataclass(frozen=True)
class FeedForm:
    """How a graph takes its inputs. ``reads``: the host reads the files of the file columns
    (:data:`READ_ON_HOST`), each checked to be the file the full check passed, and the graph
    takes their bytes; ``warp``: the parts of ``warp`` (:attr:`WarpLayout.names`) the graph
    reads, each an input of its own (``warp_<name>``, in its per-sample shape), or ``None``
    for the one flat ``warp`` vector. A graph that reads its parameters without cutting a
    vector apart needs no operator per parameter."""

    reads: bool = False
    warp: tuple[str, ...] | None = None


FLAT = FeedForm()
"""The graph reads the files named by the file columns and cuts ``warp`` apart itself."""


def input_spec(name: str, layout: WarpLayout) -> Input:
    """The :class:`Input` of ``name``: one of :data:`INPUTS`, or a part of ``warp`` in
    ``layout`` (:data:`WARP_PART`)."""
    if name.startswith(WARP_PART):
        return Input("float32", len(layout.shape(name.removeprefix(WARP_PART))))
    return INPUTS[name]


def graph_inputs(
    samples: SampleSet, weighted: bool, label_mode: str = "int", form: FeedForm = FLAT
) -> tuple[str, ...]:
    """The inputs of a graph fed ``samples`` in ``form``: packed ``record`` rows for
    TFRecords, else the source's columns that ``label_mode`` uses (files as their bytes where
    the host reads them), ``warp`` (or its parts), and ``weight`` if ``weighted`` (the feed
    protocol's one choice between the kinds of :class:`SampleSet`)."""
    if isinstance(samples, RecordSamples):
        return ("record",)
    unused = {"label", "target"} - {target_column(label_mode)}
    used = [name for name in samples.columns if name not in unused]
    if form.reads:
        used = [READ_ON_HOST.get(name, name) for name in used]
    warp = ("warp",) if form.warp is None else tuple(WARP_PART + name for name in form.warp)
    return (*used, *warp, *(("weight",) if weighted else ()))


FEED_CHUNK = 1024
"""Samples per evaluation of the plan for :meth:`EpochFeed.batches` (whole batches, at least
one)."""


class _Tail(LazyBatches):
    """An epoch's batches from batch ``first`` on, each taken from ``batches`` when asked (a
    :class:`CheckedEpoch` checks a batch's files then, so none past the one asked for)."""

    def __init__(self, batches: Sequence[np.ndarray], first: int) -> None:
        self._batches, self._first = batches, first

    def __len__(self) -> int:
        return max(0, len(self._batches) - self._first)

    def batch(self, k: int) -> np.ndarray:
        return self._batches[self._first + k]


class EpochFeed:
    """A shard's samples (columns) as a graph's inputs, one epoch at a time, made on the host:
    :class:`~daliaug.epoch.Epochs` gives each batch's samples and parameter rows (or the
    explicit ``params``, one row per sample), the columns are gathered and the plan evaluated
    with NumPy, vectorized over the batch. ``resizes``: see :meth:`WarpLayout.of`; ``form``:
    how the graph takes the inputs (:class:`FeedForm`). With ``weights`` (one per sample) the
    feed also gives each sample's ``weight``, 0 where the epoch pads. It keeps the sample
    indices of the ``recent`` batches it gave with ``check_files`` (the ones a graph may be
    reading), to name the file when the graph fails (:meth:`explain`)."""

    def __init__(
        self,
        spec: EngineSpec,
        samples: Samples,
        *,
        resizes: bool,
        form: FeedForm = FLAT,
        params: np.ndarray | None = None,
        epochs: Epochs | RestOfEpoch | None = None,
        weights: np.ndarray | None = None,
        recent: int = 2,
    ) -> None:
        self.samples = samples
        self.form = form
        self.recent: deque[np.ndarray] = deque(maxlen=recent)
        self.label_mode = spec.label_mode
        self.plan = spec.plan
        self.epochs = epochs or Epochs(
            len(samples), spec.batch_size, spec.drop_remainder, spec.shuffle, spec.seed
        )
        self.layout = WarpLayout.of(self.plan, tuple(samples.columns), resizes)
        self.weights = weights
        self.boxes = (
            BoxTargets(spec, samples, self.layout.fuse_roi) if "boxes" in samples.columns else None
        )
        self.params = None if params is None else np.asarray(params, dtype=np.float32)
        self._shared: OrderedDict[tuple[Hashable, ...], dict[str, np.ndarray]] = OrderedDict()
        self._shared_lock = threading.Lock()
        self._checked: OrderedDict[Hashable, CheckedEpoch] = OrderedDict()
        # input -> file column, for the files the host reads (form.reads)
        self._host_files = {
            READ_ON_HOST[name]: name
            for name in READ_ON_HOST
            if form.reads and name in samples.columns and name in samples.files
        }
        expected = (len(samples), len(self.plan.param_keys))
        if self.params is not None and self.params.shape != expected:
            raise ValueError(f"params has shape {self.params.shape}, expected {expected}")

    def explain(self, error: Exception, what: str) -> DataError:
        """The :class:`DataError` for a graph that failed reading this feed's recent batches:
        the one it carries, else the first of their files that changed, went missing or does
        not decode, else ``what`` with the error's informative line (see
        :func:`~daliaug.sources.checks.explain_failure`)."""
        carried = error if isinstance(error, DataError) else carried_error(error)
        if isinstance(carried, DataError):
            return carried
        recent = np.concatenate([np.zeros(0, np.int64), *self.recent])
        try:
            self.samples.assert_unchanged(recent)
        except DataError as changed:
            return changed
        files = [paths[i] for paths in self.samples.files.values() for i in recent.tolist()]
        return explain_failure(error, files, f"{what} ({len(recent)} recent samples)")

    @property
    def inputs(self) -> tuple[str, ...]:
        return graph_inputs(self.samples, self.weights is not None, self.label_mode, self.form)

    def gathers(self, name: str) -> bool:
        """Whether input ``name`` is a source column held as it is (a graph may gather it from
        the batch's indices), not made or read per batch here (``warp``, ``weight``, the moved
        boxes, images read from files or shards)."""
        made = () if self.boxes is None else self.boxes.shapes
        column = self.samples.columns.get(name)
        return isinstance(column, np.ndarray) and name not in made

    def checks_files(self, name: str) -> bool:
        """Whether a stream of input ``name`` alone should ask for ``check_files``: the first
        input the host reads from files (its reads check them; one stream keeps
        :attr:`recent`)."""
        return name == next(iter(self._host_files), None)

    def _stored(self, name: str) -> bool:
        """Whether input ``name`` is read from storage for each batch (files the host reads,
        a column read from shards), not held in memory (the moved boxes are made here, from
        whatever column holds them)."""
        made = () if self.boxes is None else self.boxes.shapes
        column = self.samples.columns.get(name)
        stored_column = column is not None and not isinstance(column, np.ndarray)
        return name in self._host_files or (stored_column and name not in made)

    def _read(self, name: str, index: np.ndarray) -> list[np.ndarray] | np.ndarray:
        """The stored input ``name`` of the samples ``index``: the files' bytes (one array a
        file) or the column's zero-padded rows."""
        column = self._host_files.get(name)
        if column is not None:
            return self.samples.read(column, index)
        return np.asarray(self.samples.columns[name][index])

    def chunks(
        self,
        epoch: int,
        names: Sequence[str],
        size: int,
        check_files: bool = False,
        first: int | RestOfEpoch = 0,
    ) -> Iterator[dict[str, np.ndarray]]:
        """:meth:`batches` joined a few at a time, about ``size`` samples per chunk (whole
        batches: cutting a chunk into ``batch_size`` pieces gives the batches back), each
        chunk made at once (the plan evaluated over all its samples), stored inputs as
        zero-padded ``uint8`` rows; one batch per chunk where ``names`` holds a stored input
        (files, shards), which is not held in memory. ``first``: as for :meth:`batches`."""
        stored = [name for name in names if self._stored(name)]
        per_chunk = 1 if stored else max(1, size // self.epochs.batch_size)
        groups = self._groups(epoch, names, per_chunk, check_files, first)
        for group, _, index, chunk, given in groups:
            for name in stored:
                rows = self._read(name, index)
                chunk[name] = padded(rows) if isinstance(rows, list) else rows
            for j in group:
                given(j)
            yield {name: chunk[name] for name in names}

    def _groups(
        self,
        epoch: int,
        names: Sequence[str],
        per_chunk: int,
        check_files: bool,
        first: int | RestOfEpoch,
    ) -> Iterator[
        tuple[range, list[np.ndarray], np.ndarray, dict[str, np.ndarray], Callable[[int], None]]
    ]:
        """Each chunk of ``per_chunk`` batches from batch ``first`` on: its batches' numbers
        (counting from ``first``) and samples, all its samples, its arrays of ``names`` but the
        stored ones, and ``given``, to call for each batch before it is handed on (with
        ``check_files``: the batch's files checked unchanged, unless the host reads them, which
        checks them as it reads; its samples kept as :attr:`recent`). With ``source.check:
        background`` the batches are those of :meth:`checked_epoch`, each file decoded before
        its batch is made, and the chunks grow from one batch to ``per_chunk`` (the first batch
        waits for its own files only). A :class:`~daliaug.epoch.RestOfEpoch` as ``first``: its
        batches whole, in place of the epoch's."""
        epochs, first = (first, 0) if isinstance(first, RestOfEpoch) else (self.epochs, first)
        key = self._key(epoch, epochs)
        drawn = epochs.rows(self.plan, epoch) if self.params is None else None
        checked = self.checked_epoch(epoch, epochs)
        batches = _Tail(epochs.batches(epoch) if checked is None else checked, first)
        bounds = epochs.bounds[first:]
        watched = check_files and self.samples.checked is not None and not self._host_files
        watch = FileWatch(self.samples, batches) if watched else None
        made = [name for name in names if not self._stored(name)]

        def given(j: int) -> None:
            if watch is not None:
                watch.verify(j)
            if check_files:
                self.recent.append(batches[j])

        try:
            k, size = 0, per_chunk if checked is None else 1
            while k < len(batches):
                group = batches[k : k + size]
                index = group[0] if len(group) == 1 else np.concatenate(group)
                span = (bounds[k][0], bounds[k][0] + len(index))  # (a last batch cut short)
                valid = (epochs if checked is None else checked).valid(*span)
                chunk = self._batch(made, index, span, drawn, key, valid)
                yield range(k, k + len(group)), group, index, chunk, given
                k, size = k + len(group), min(2 * size, per_chunk)
        finally:
            if watch is not None:
                watch.close()

    def batches(
        self,
        epoch: int,
        names: Sequence[str],
        check_files: bool = False,
        first: int | RestOfEpoch = 0,
    ) -> Iterator[dict[str, Any]]:
        """Each batch of ``epoch`` as the arrays ``names`` asks for: inputs of :attr:`inputs`
        (files the host reads as a list of their bytes), ``index`` (the samples' indices) and
        ``params`` (their parameter rows). With ``check_files``, a file that changed since
        the full check stops it, before the first batch that holds it, with a
        :class:`~daliaug.errors.DataError` naming the file (the feed that makes the batches
        the graph reads its files from should ask for it); the files are checked as the host
        reads them, or else on a thread of their own (:class:`FileWatch`). The batches are
        made :data:`FEED_CHUNK` samples at a time and cut apart (the plan's Python work paid
        once per chunk: ``bench/host_cost.py``), their stored inputs read batch by batch.
        ``first``: the batches before it are left out, neither made nor read (a resumed
        epoch, :mod:`daliaug.resume`): each batch's samples and rows depend on its position
        only, so batch ``first`` on is what it is in the whole epoch; or the
        :class:`~daliaug.epoch.RestOfEpoch` to run in place of the epoch (a state another
        world took)."""
        stored = [name for name in names if self._stored(name)]
        per_chunk = max(1, FEED_CHUNK // self.epochs.batch_size)
        groups = self._groups(epoch, names, per_chunk, check_files, first)
        for group, parts, index, chunk, given in groups:
            at = 0
            for j, part in zip(group, parts, strict=True):
                size = len(part)
                batch = {name: array[at : at + size] for name, array in chunk.items()}
                batch.update({name: self._read(name, index[at : at + size]) for name in stored})
                given(j)
                yield {name: batch[name] for name in names}
                at += size

    def _batch(
        self,
        names: Sequence[str],
        index: np.ndarray,
        bounds: tuple[int, int],
        drawn: ParameterRows | RestRows | None,
        epoch: Hashable,
        valid: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """The arrays ``names`` of the batches at positions ``bounds`` of ``epoch`` (its
        number, or a rest's number and tag), samples ``index``, ``valid`` where they are no
        padding; ``drawn``: the epoch's parameter rows (``None``: the explicit ``params``)."""
        start, stop = bounds
        out: dict[str, np.ndarray] = {"index": index}
        moves_boxes = self.boxes is not None and not self.boxes.shapes.keys().isdisjoint(names)
        parts = any(name.startswith(WARP_PART) for name in names)
        evaluates = "warp" in names or parts
        if evaluates or "params" in names or moves_boxes:
            rows = self.params[index] if drawn is None else drawn[start:stop]
            out["params"] = rows
        if evaluates or moves_boxes:  # the partners paired once, for both
            params = self.plan.paired(out["params"], valid, self.epochs.batch_size)
            sizes = self.samples.sizes_at(index)
        if "warp" in names:
            out["warp"] = self.layout.evaluate(params, sizes, NUMPY)
        if parts:
            out.update(
                self._made(("warp", epoch, start, stop), partial(self._parts, params, sizes))
            )
        if moves_boxes:
            assert self.boxes is not None
            boxes = partial(self.boxes.batch, index, params, sizes, valid, self.epochs.batch_size)
            out.update(self._made(("boxes", epoch, start, stop), boxes))
        if "weight" in names and self.weights is not None:
            out["weight"] = np.where(valid, self.weights[index], 0.0).astype(np.float32)
        for name in names:
            if name in self.samples.columns and name not in out:
                out[name] = np.asarray(self.samples.columns[name][index])
        return {name: out[name] for name in names}

    CHECKED_KEPT = 2
    """Epochs whose checked batches (:meth:`checked_epoch`) a feed keeps: its streams read one
    epoch, or two where one stream starts the next before another ends."""

    def checked_epoch(
        self, epoch: int, epochs: Epochs | RestOfEpoch | None = None
    ) -> CheckedEpoch | None:
        """With ``source.check: background``, ``epoch``'s batches as the check leaves them
        (:class:`~daliaug.sources.background.CheckedEpoch`), one for every stream of the feed;
        ``None`` otherwise. A dataset without weights or ``drop_remainder`` ends an epoch
        short of samples with a shorter last batch, any other pads it (weight 0). ``epochs``:
        the feed's, or a rest of the epoch run in its place."""
        check = self.samples.background
        if check is None:
            return None
        epochs = self.epochs if epochs is None else epochs
        key = self._key(epoch, epochs)
        with self._shared_lock:
            found = self._checked.get(key)
            if found is None:
                found = self._checked_batches(check, epoch, epochs)
                self._checked[key] = found
                while len(self._checked) > self.CHECKED_KEPT:
                    self._checked.popitem(last=False)
            return found

    def _key(self, epoch: int, epochs: Epochs | RestOfEpoch) -> Hashable:
        """What the feed's caches know ``epoch`` of ``epochs`` by: its number, and a rest's
        tag where a rest runs in its place."""
        return epoch if epochs is self.epochs else (epoch, *epochs.tag)

    def _checked_batches(
        self, check: BackgroundCheck, epoch: int, epochs: Epochs | RestOfEpoch
    ) -> CheckedEpoch:
        """``epoch``'s batches of ``epochs`` checked by ``check``: the rest of an epoch another
        world began keeps that world's positions
        (:class:`~daliaug.sources.background.CheckedRest`)."""
        if isinstance(epochs, RestOfEpoch):
            rest = epochs.batches(epoch)
            return CheckedRest(self.samples, check, rest, epochs.bounds, epochs.valid)
        shorten = self.weights is None and not epochs.drop_remainder
        return CheckedEpoch(self.samples, check, epochs.order(epoch), epochs.bounds, shorten)

    def _parts(self, params: Mapping[str, np.ndarray], sizes: np.ndarray) -> dict[str, np.ndarray]:
        """The parts of ``warp`` (:attr:`FeedForm.warp`) of samples with ``params`` on images
        of ``sizes``, each as one contiguous array of its per-sample shape."""
        warp = self.layout.evaluate(params, sizes, NUMPY)
        parts = self.layout.unpack(warp, np.reshape, batched=True)
        return {
            WARP_PART + name: np.ascontiguousarray(parts[name]) for name in self.form.warp or ()
        }

    SHARED_KEPT = 16
    """Chunks whose made inputs (box targets, warp parts) a feed keeps: the streams of one
    dataset (one per input: ``boxes``, ``box_labels``, ``keypoints``, each part of ``warp``)
    ask for the same chunks, a few apart."""

    def _made(
        self, key: tuple[Hashable, ...], make: Callable[[], dict[str, np.ndarray]]
    ) -> dict[str, np.ndarray]:
        """What ``make`` gives for the chunk ``key`` (what, epoch, start, stop), made once for
        every stream that asks (made again only if it was let go)."""
        with self._shared_lock:
            made = self._shared.get(key)
        if made is None:
            made = make()
            with self._shared_lock:
                self._shared[key] = made
                while len(self._shared) > self.SHARED_KEPT:
                    self._shared.popitem(last=False)
        return made
