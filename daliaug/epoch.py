"""The one definition of an epoch, used by every backend and tool.

An epoch of one shard's samples is their order (a permutation fixed by the seed, the shard and
the epoch number; the source order when ``shuffle`` is off), its batches (the last one smaller
unless ``drop_remainder``), and one row of random parameters per sample, drawn batch by batch
from a stream fixed by the same three numbers. ``make_dataset`` (both backends), ``DaliLoader``,
``preview`` and the parity harness all read their epochs from :class:`Epochs`, so for one seed
they see the same samples in the same order with the same parameters, and epoch ``k`` is the
same whether a run starts there or reaches it.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

import numpy as np

from daliaug.algebra import Scalar
from daliaug.errors import DataError
from daliaug.sources.sample_set import shard_range

if TYPE_CHECKING:
    from daliaug.config import Config
    from daliaug.plan import Plan


def resolve_seed(seed: int | None) -> int:
    """The config's seed, or a fresh random one when it has none."""
    return seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31)


def batch_bounds(n: int, batch_size: int, drop_remainder: bool) -> list[tuple[int, int]]:
    """``[start, stop)`` of each batch of an epoch of ``n`` samples."""
    stop = n - n % batch_size if drop_remainder else n
    return [(s, min(s + batch_size, stop)) for s in range(0, stop, batch_size)]


def replica_length(total: int, replicas: int, batch_size: int, drop_remainder: bool) -> int:
    """Positions per epoch for each of ``replicas`` contiguous shards of ``total`` samples, so
    that every replica runs the same number of batches: the largest shard rounded up to whole
    batches (the others padded, see :class:`Epochs`), or with ``drop_remainder`` the smallest
    rounded down (the same number of samples left out of every shard's epoch)."""
    sizes = [
        stop - start for start, stop in (shard_range(total, r, replicas) for r in range(replicas))
    ]
    if drop_remainder:
        batches = min(sizes) // batch_size
        if batches == 0:
            raise DataError(
                f"batch_size: {batch_size} per replica is more than the {min(sizes)} samples of "
                f"the smallest of {replicas} shards, and drop_remainder leaves no batch"
            )
    else:
        batches = -(-max(sizes) // batch_size)
    return batches * batch_size


class EpochClock:
    """Which epoch each stream of a dataset iterates next, and from which batch. A ``tf.data``
    dataset does not know which epoch an iteration of it is; each of its streams asks its
    clock when an iteration starts reading (:meth:`begin`): the next epoch for that stream,
    from ``start`` on, or the epoch :meth:`set` gave (Keras' own epoch number, through
    ``daliaug.keras.EpochSync``). Each stream's first iteration of epoch ``start`` begins at
    batch ``first`` (a resumed epoch, :meth:`seek`), or runs the :class:`RestOfEpoch` it is
    (a state another world took), every other one at batch 0. Iterators made
    and never read (``model.fit`` makes some) ask nothing, except those of a GPU-placed DALI
    dataset, whose pipeline starts reading when its iterator is made."""

    def __init__(self, start: int = 0, first: int | RestOfEpoch | Dealt = 0) -> None:
        self.start, self.first = start, first
        self._next: dict[object, int] = {}
        self._began: set[object] = set()
        self._lock = threading.Lock()

    def begin(self, stream: object) -> tuple[int, int | RestOfEpoch | Dealt]:
        """The epoch ``stream``'s new iteration is, and the batch it begins at."""
        with self._lock:
            epoch = self._next.get(stream, self.start)
            self._next[stream] = epoch + 1
            first = self.first if epoch == self.start and stream not in self._began else 0
            self._began.add(stream)
            return epoch, first

    def next(self, stream: object) -> int:
        """The epoch ``stream``'s new iteration is."""
        return self.begin(stream)[0]

    def seek(self, epoch: int, first: int | RestOfEpoch | Dealt = 0) -> None:
        """The next iteration of every stream is ``epoch``, from batch ``first`` (or the rest
        of it another world began: this shard's, or the world's to deal out, :class:`Dealt`)."""
        with self._lock:
            self.start, self.first = epoch, first
            self._next = dict.fromkeys(self._next, epoch)
            self._began = set()

    def set(self, epoch: int) -> None:
        """The next iteration of every stream is ``epoch``."""
        self.seek(epoch)


class Dealt(Protocol):
    """The rest of an epoch another world began, for a world whose shards share one clock
    (:class:`daliaug.resume.Rest`): each shard's part of it."""

    def shard(self, shard: int) -> RestOfEpoch: ...


class ShardClock(EpochClock):
    """Shard ``shard``'s view of the ``clock`` its world's datasets share (a replica's under a
    ``tf.distribute`` strategy): that clock's epochs, the rest of an epoch another world began
    (:class:`Dealt`) as this shard's part of it. Holds no state of its own."""

    def __init__(self, clock: EpochClock, shard: int) -> None:
        self.clock, self.shard = clock, shard

    def begin(self, stream: object) -> tuple[int, int | RestOfEpoch | Dealt]:
        epoch, first = self.clock.begin(stream)
        dealt = not isinstance(first, int | RestOfEpoch)  # the world's rest, not a shard's
        return epoch, first.shard(self.shard) if dealt else first

    def seek(self, epoch: int, first: int | RestOfEpoch | Dealt = 0) -> None:
        self.clock.seek(epoch, first)


class NumpyRandom:
    """Draws ``size`` values per call from a NumPy generator (float32, like every backend)."""

    def __init__(self, rng: np.random.Generator, size: int) -> None:
        self.rng, self.size = rng, size

    def uniform(self, low: float, high: float) -> Scalar:
        if low == high:
            return float(low)
        return self.rng.uniform(low, high, self.size).astype(np.float32)

    def bernoulli(self, p: float) -> Scalar:
        if p in (0.0, 1.0):
            return float(p)
        return (self.rng.random(self.size) < p).astype(np.float32)

    def choice(self, values: Sequence[float]) -> Scalar:
        if len(set(values)) == 1:
            return float(values[0])
        return np.asarray(values, np.float32)[self.rng.integers(len(values), size=self.size)]

    def beta(self, a: Scalar, b: Scalar) -> Scalar:
        return self.rng.beta(a, b, self.size).astype(np.float32)

    def normal(self) -> Scalar:
        return self.rng.standard_normal(self.size).astype(np.float32)


def columns(values: Sequence[Scalar], count: int) -> np.ndarray:
    """Per-sample scalars (arrays or constants) as a ``(count, len(values))`` float32 array."""
    out = np.empty((count, len(values)), dtype=np.float32)
    for i, v in enumerate(values):
        out[:, i] = v
    return out


def draw_rows(plan: Plan, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` rows of the plan's parameters (``plan.param_keys`` order), float32."""
    drawn = plan.draw(NumpyRandom(rng, count))
    return columns([drawn[k] for k in plan.param_keys], count)


@dataclass(frozen=True)
class Epochs:
    """The epochs of ``size`` samples: order, batches and parameter rows of epoch ``e``.

    An epoch has ``length`` positions (default: ``size``). Where ``length`` exceeds ``size``
    (replicas padded to equal batch counts) the extra positions repeat samples from the start
    of the order and are marked invalid (:meth:`valid`); where it falls short, the epoch ends
    there and the rest of the order is left out of it.
    """

    size: int
    batch_size: int
    drop_remainder: bool
    shuffle: bool
    seed: int
    stream: int = 0
    """The shard's own stream: shards of one seed draw different orders and parameters."""
    length: int | None = None
    offset: int = 0
    """The first sample's index, where the shard reads from all the samples (its own are
    ``offset`` to ``offset + size``)."""

    @staticmethod
    def of(config: Config, size: int, length: int | None = None) -> Epochs:
        """The epochs of ``size`` samples of the config's shard (a fresh seed if it has none:
        build one :class:`Epochs` per dataset and share it between its streams)."""
        return Epochs(
            size,
            config.batch_size,
            config.drop_remainder,
            config.shuffle,
            resolve_seed(config.seed),
            config.source.shard_id,
            length,
        )

    @property
    def positions(self) -> int:
        """Positions per epoch (``length``, else ``size``)."""
        return self.size if self.length is None else self.length

    @property
    def bounds(self) -> list[tuple[int, int]]:
        return batch_bounds(self.positions, self.batch_size, self.drop_remainder)

    def __len__(self) -> int:
        """Batches per epoch."""
        return len(self.bounds)

    def order(self, epoch: int) -> np.ndarray:
        """The sample order of ``epoch``: a permutation fixed by seed, shard and epoch (of the
        samples from ``offset`` on)."""
        if not self.shuffle:
            return np.arange(self.offset, self.offset + self.size)
        order = np.random.default_rng([self.seed, self.stream, epoch]).permutation(self.size)
        return order + self.offset if self.offset else order

    def batches(self, epoch: int) -> list[np.ndarray]:
        """The sample indices of each batch of ``epoch``."""
        bounds = self.bounds
        if not bounds:
            return []
        taken = self.order(epoch)[np.arange(bounds[-1][1]) % self.size]
        return np.split(taken, [stop for _, stop in bounds[:-1]])

    def valid(self, start: int, stop: int) -> np.ndarray:
        """Which of the positions ``[start, stop)`` hold a sample of this epoch (not padding)."""
        return np.arange(start, stop) < self.size

    def rows(self, plan: Plan, epoch: int) -> ParameterRows:
        """The parameter rows of ``epoch``, by position in its order."""
        return ParameterRows(plan, (self.seed, self.stream, epoch))

    def parameters(self, plan: Plan, epoch: int, first: int = 0) -> Iterator[np.ndarray]:
        """One array of parameter rows per batch of ``epoch`` from batch ``first`` on, in
        batch order (no row of an earlier batch drawn)."""
        rows = self.rows(plan, epoch)
        for a, b in self.bounds[first:]:
            yield rows[a:b]


class ParameterRows:
    """The parameter rows of one epoch, by position: drawn in chunks of :attr:`CHUNK`
    positions, each from its own stream, so a position's row does not depend on how the epoch
    is cut into batches (``preview``'s one batch sees what ``make_dataset``'s batches see)."""

    CHUNK = 1024

    def __init__(self, plan: Plan, key: tuple[int, ...]) -> None:
        self.plan, self.key = plan, key
        self._cached: tuple[int, np.ndarray] | None = None

    def _chunk(self, c: int) -> np.ndarray:
        if self._cached is None or self._cached[0] != c:
            rng = np.random.default_rng([*self.key, 1, c])
            self._cached = (c, draw_rows(self.plan, rng, self.CHUNK))
        return self._cached[1]

    def __getitem__(self, positions: slice) -> np.ndarray:
        """Rows of positions ``[start, stop)``."""
        start, stop = positions.start or 0, positions.stop
        parts = []
        for c in range(start // self.CHUNK, (stop - 1) // self.CHUNK + 1):
            lo = max(start, c * self.CHUNK) - c * self.CHUNK
            hi = min(stop, (c + 1) * self.CHUNK) - c * self.CHUNK
            parts.append(self._chunk(c)[lo:hi])
        if not parts:
            return np.zeros((0, len(self.plan.param_keys)), np.float32)
        return np.concatenate(parts)


def world_order(
    size: int,
    world: int,
    batch_size: int,
    drop_remainder: bool,
    shuffle: bool,
    seed: int,
    epoch: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Epoch ``epoch`` of ``size`` samples split over ``world`` contiguous shards (of
    ``batch_size`` each, as :class:`~daliaug.outputs.shards.Shards` splits them), as one global
    order: position by position, shard by shard (the order in which a world running its shards
    in step consumes them), padding and what ``drop_remainder`` leaves out not in it. Each
    entry's sample, the shard it came from and its position there (whose parameter row it
    keeps)."""
    length = replica_length(size, world, batch_size, drop_remainder)
    index = np.zeros((length, world), np.int64)
    valid = np.zeros((length, world), bool)
    for shard in range(world):
        start, stop = shard_range(size, shard, world)
        epochs = Epochs(stop - start, batch_size, drop_remainder, shuffle, seed, shard, length)
        taken = np.arange(min(length, stop - start))
        index[taken, shard] = start + epochs.order(epoch)[taken]
        valid[taken, shard] = True
    shards = np.broadcast_to(np.arange(world), (length, world))
    positions = np.broadcast_to(np.arange(length)[:, None], (length, world))
    return index[valid], shards[valid], positions[valid]


@dataclass(frozen=True, eq=False)
class RestOfEpoch:
    """The rest of one epoch for shard ``shard`` of a new ``world``: the entries of another
    world's global order (:func:`world_order`) from ``position`` on, dealt out in turn (entry
    ``i`` to shard ``i % world``), so that a world running its shards in step consumes them in
    that order, whatever its size: a state taken mid-way is again a position in the same global
    order. Each sample keeps the parameter row it had in the order's own world, so its pixels
    are those an uninterrupted run would have made. The :class:`Epochs` interface the feed
    reads (whatever epoch number it is asked for); padding (weight 0) repeats the shard's first
    sample up to equal batch counts."""

    index: np.ndarray
    origin: np.ndarray
    place: np.ndarray
    shard: int
    world: int
    batch_size: int
    drop_remainder: bool
    seed: int
    epoch: int

    @staticmethod
    def of(
        order: tuple[np.ndarray, np.ndarray, np.ndarray],
        position: int,
        shard: int,
        world: int,
        batch_size: int,
        drop_remainder: bool,
        seed: int,
        epoch: int,
    ) -> RestOfEpoch:
        index, origin, place = (a[position:] for a in order)
        return RestOfEpoch(
            index, origin, place, shard, world, batch_size, drop_remainder, seed, epoch
        )

    @property
    def positions(self) -> int:
        """Positions of each shard: the rest dealt out, rounded to whole batches (down with
        ``drop_remainder``, else up, with padding); a world of one ends with a smaller batch
        instead, as its own epochs do."""
        per_shard = len(self.index) / self.world
        if self.world == 1 and not self.drop_remainder:
            return len(self.index)
        batches = per_shard // self.batch_size
        if not self.drop_remainder:
            batches = -(-per_shard // self.batch_size)
        return int(batches) * self.batch_size

    @property
    def bounds(self) -> list[tuple[int, int]]:
        return batch_bounds(self.positions, self.batch_size, self.drop_remainder)

    def __len__(self) -> int:
        return len(self.bounds)

    def _entries(self) -> np.ndarray:
        """The global order's entry at each of this shard's positions (-1: padding)."""
        entries = np.arange(self.positions) * self.world + self.shard
        return np.where(entries < len(self.index), entries, -1)

    def batches(self, epoch: int) -> list[np.ndarray]:
        entries = self._entries()
        fill = self.index[self.shard] if self.shard < len(self.index) else self.index[0]
        taken = np.where(entries >= 0, self.index[entries], fill)
        return np.split(taken, [stop for _, stop in self.bounds[:-1]]) if self.bounds else []

    def valid(self, start: int, stop: int) -> np.ndarray:
        return self._entries()[start:stop] >= 0

    def rows(self, plan: Plan, epoch: int) -> RestRows:
        return RestRows(self, plan)

    @cached_property
    def tag(self) -> tuple[int, ...]:
        """What tells this rest's batches from those of another of the same epoch (another
        world's, another position): its shard, world and a digest of its entries."""
        digest = zlib.crc32(b"".join(a.tobytes() for a in (self.index, self.origin, self.place)))
        return self.shard, self.world, len(self.index), digest


class RestRows:
    """The parameter rows of a :class:`RestOfEpoch`, by position: each entry's row from its own
    shard's stream in the order's world (padding takes the shard's first entry's)."""

    def __init__(self, rest: RestOfEpoch, plan: Plan) -> None:
        self.rest, self.plan = rest, plan
        self._streams: dict[int, ParameterRows] = {}

    def __getitem__(self, positions: slice) -> np.ndarray:
        rest = self.rest
        entries = rest._entries()[positions]
        entries = np.where(entries >= 0, entries, min(rest.shard, len(rest.index) - 1))
        out = np.zeros((len(entries), len(self.plan.param_keys)), np.float32)
        origins = rest.origin[entries]
        for origin in np.unique(origins).tolist():
            mine = np.flatnonzero(origins == origin)
            rows = self._streams.setdefault(
                origin, ParameterRows(self.plan, (rest.seed, origin, rest.epoch))
            )
            places = rest.place[entries[mine]]
            chunks = places // ParameterRows.CHUNK
            for c in np.unique(chunks).tolist():
                at = chunks == c
                out[mine[at]] = rows._chunk(c)[places[at] - c * ParameterRows.CHUNK]
        return out
