"""A data stream's state between batches, and the stream a state must match to resume it.

Every sample's place in an epoch and its random parameters are fixed by the seed, the shard
and the epoch (:mod:`daliaug.epoch`), so where a stream stands is a few integers: the epoch
and how many of its positions the world has consumed. :class:`State` holds them (with what
identifies the stream: seed, world, batch, a fingerprint of the config and one of the
samples), JSON-serialisable and small; :class:`Stream`, one per dataset, makes states
(:meth:`Stream.state`) and turns one back into where to start (:meth:`Stream.start`),
refusing by name a state of other data. Resuming seeks: the epoch starts at the state's batch,
with no batch before it made and no file before it read (``EpochFeed.batches``' ``first``).
The exception is DALI's own reader of TFRecords, whose shuffle buffer and in-graph draws are
no function of the seed alone: its states also hold DALI's checkpoints of it
(:mod:`daliaug.reader_checkpoints`), whence DALI restores it (:class:`Readers`).

Every output speaks it: ``make_dataset(..., state=...)``; the NumPy, JAX and PyTorch
batches' ``get_state`` / ``set_state`` (Grain's names) and ``state_dict`` /
``load_state_dict`` (PyTorch's); a ``tf.data`` dataset's ``state_at(epoch, batches)`` and
``set_state``; ``daliaug.keras.BackupAndRestore`` for ``model.fit``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from daliaug.epoch import RestOfEpoch, replica_length, world_order
from daliaug.errors import ConfigError, DataError
from daliaug.reader_checkpoints import ReaderCheckpoints, decoded
from daliaug.sources.checks import size_and_time
from daliaug.sources.sample_set import shard_range

if TYPE_CHECKING:
    from daliaug.config import Config
    from daliaug.sources.sample_set import SampleSet

FORMAT = 2
"""The version of :class:`State`'s fields; a state of another format is refused (2: with
``readers``)."""


@dataclass(frozen=True)
class State:
    """Where a data stream stands between two batches: ``position`` positions of epoch
    ``epoch``'s order consumed across the ``world`` (every shard's batches so far; an epoch's
    end is the next epoch at 0), for the stream of ``seed``, a global batch of ``batch_size``,
    ``samples`` samples with fingerprint ``source`` and the config with fingerprint
    ``config``, written by daliaug ``version`` in format ``format``. Where DALI's own reader
    streams the samples (TFRecords), ``readers`` holds each of this process's shards' reader
    checkpoint (DALI's, base64), by shard number: its shuffle buffer is no function of the
    seed alone.

    :meth:`as_dict` / :meth:`to_json` add a ``digest`` of the fields, which
    :meth:`from_dict` / :meth:`from_json` check, so that a truncated or edited state is
    refused rather than resumed."""

    epoch: int
    position: int
    seed: int
    world: int
    batch_size: int
    samples: int
    source: str
    config: dict[str, str]
    version: str
    order_world: int
    readers: dict[str, str] = dataclasses.field(default_factory=dict)
    format: int = FORMAT

    def as_dict(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        return {**fields, "digest": _digest(fields)}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    @staticmethod
    def from_dict(given: Mapping[str, Any]) -> State:
        """The state of ``given`` (what :meth:`as_dict` wrote), checked: every field there, of
        its type, and the digest matching them."""
        if not isinstance(given, Mapping):
            raise ConfigError(f"state: expected a daliaug state, got a {type(given).__name__}")
        if "format" in given and given["format"] != FORMAT:
            raise ConfigError(f"state: format {given['format']!r}, this daliaug reads {FORMAT}")
        names = [f.name for f in dataclasses.fields(State)]
        missing = [n for n in [*names, "digest"] if n not in given]
        if missing:
            raise ConfigError(f"state: {', '.join(missing)} missing (a truncated state?)")
        extra = sorted(set(given) - {*names, "digest"})
        if extra:
            raise ConfigError(f"state: unknown fields {', '.join(extra)}")
        fields = {n: given[n] for n in names}
        for f in dataclasses.fields(State):
            kind = {"str": str, "int": int}.get(str(f.type), dict)
            value = fields[f.name]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ConfigError(f"state: {f.name} is {value!r}, not a {kind.__name__}")
        if not all(isinstance(v, str) for v in fields["config"].values()):
            raise ConfigError("state: config holds a fingerprint per config field")
        decoded(fields["readers"])  # each shard's checkpoint, base64 text
        if given["digest"] != _digest(fields):
            raise ConfigError(
                "state: its digest does not match its fields (the state was edited or damaged)"
            )
        return State(**fields)

    @staticmethod
    def from_json(text: str) -> State:
        try:
            given = json.loads(text)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"state: not a daliaug state's JSON (truncated?): {e}") from None
        return State.from_dict(given)

    @staticmethod
    def of(given: State | Mapping[str, Any] | str) -> State:
        """A :class:`State`, its dictionary or its JSON, as a state."""
        if isinstance(given, State):
            return State.from_dict(given.as_dict())
        return State.from_json(given) if isinstance(given, str) else State.from_dict(given)


def _short(value: Any, length: int = 16) -> str:
    """A short digest of ``value``'s JSON."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _digest(fields: Mapping[str, Any]) -> str:
    return _short(dict(fields))


@dataclass(frozen=True)
class Rest:
    """The rest of epoch ``epoch`` begun by a world of ``order_world`` shards, from entry
    ``position`` of its global order (:func:`~daliaug.epoch.world_order`), for a world that
    deals it out over its own shards (:class:`~daliaug.epoch.RestOfEpoch`) in ``batches``
    batches each: a state restored by another number of processes, or taken mid-way through
    such a rest."""

    epoch: int
    order_world: int
    position: int
    batches: int
    stream: Stream
    samples: Any = dataclasses.field(default=None, compare=False)
    """All the samples (each shard of the new world reads from all of them)."""

    @cached_property
    def order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.stream
        per_shard = s.step // self.order_world
        return world_order(
            s.samples, self.order_world, per_shard, s.drop_remainder, s.shuffle, s.seed, self.epoch
        )

    def shard(self, shard: int) -> RestOfEpoch:
        """The rest for shard ``shard`` of the stream's world."""
        s = self.stream
        return RestOfEpoch.of(
            self.order,
            self.position,
            shard,
            s.world,
            s.batch_size,
            s.drop_remainder,
            s.seed,
            self.epoch,
        )


@dataclass(frozen=True)
class Readers:
    """Where DALI's own readers resume a stream: batch ``first`` of the epoch, each shard's
    pipeline restored from its ``checkpoints`` (DALI's, by shard number)."""

    first: int
    checkpoints: dict[int, bytes]

    def of(self, shard: int) -> bytes:
        """Shard ``shard``'s checkpoint; a :class:`ConfigError` where the state holds none."""
        if shard not in self.checkpoints:
            raise ConfigError(
                f"state: holds the reader checkpoints of shards {sorted(self.checkpoints)}, and "
                f"this process runs shard {shard}: each process restores the state it took"
            )
        return self.checkpoints[shard]


def first_batch(start: int | Rest | Readers) -> int:
    """The batch of its epoch a pass from ``start`` (:meth:`Stream.start`) begins at (a rest
    counts its own, from 0)."""
    return start.first if isinstance(start, Readers) else start if isinstance(start, int) else 0


@dataclass(frozen=True)
class Stream:
    """A dataset's stream of batches as a state sees it: the config's ``seed``, the ``world``
    of shards the epoch is split over, each shard's ``batch_size``, ``batches`` per epoch,
    ``samples`` with ``fingerprint`` (:attr:`source`), the config's fingerprint ``config``,
    daliaug's ``version`` (whose states alone it takes), ``shuffle`` and ``drop_remainder``;
    ``seeks``: whether it can start mid-epoch (not where DALI's own reader streams TFRecords);
    ``elastic``: whether it can take the rest of an epoch begun by another world
    (:class:`Rest`: every output of ``make_dataset`` over column sources, TFRecords listed as
    columns among them, on any engine and device, but not a source the config shards itself);
    ``skips``: whether its files are checked beside training with ``on_error: skip``, which
    moves each shard's samples after a bad file (so another world's positions may hold other
    samples: such a rest is refused); ``readers``: where DALI's own reader streams TFRecords
    and keeps its checkpoints, the checkpoints after batch ``b`` of epoch ``e``
    (:class:`~daliaug.reader_checkpoints.ReaderCheckpoints`), which its states hold and whence
    it starts mid-epoch."""

    seed: int
    world: int
    batch_size: int
    batches: int
    samples: int
    fingerprint: Callable[[], str]
    config: dict[str, str]
    version: str
    shuffle: bool = True
    drop_remainder: bool = False
    seeks: bool = True
    elastic: bool = False
    skips: bool = False
    readers: ReaderCheckpoints | None = None

    @cached_property
    def source(self) -> str:
        """The samples' fingerprint, taken when a state is first taken or checked (a flow whose
        files' headers are read as its batches need them opens none when it is made)."""
        return self.fingerprint()

    @property
    def step(self) -> int:
        """Positions the world consumes per batch of every shard (the global batch)."""
        return self.batch_size * self.world

    def entries(self, world: int) -> int:
        """The samples of an epoch split over ``world`` shards (padding not counted)."""
        per_shard = self.step // world
        length = replica_length(self.samples, world, per_shard, self.drop_remainder)
        return sum(
            min(length, stop - start)
            for start, stop in (shard_range(self.samples, s, world) for s in range(world))
        )

    def state(self, epoch: int, batches: int, rest: Rest | None = None) -> State:
        """The state after ``batches`` batches of epoch ``epoch`` (of every shard; of the
        ``rest`` of it, where the epoch resumed one)."""
        total = self.batches if rest is None else rest.batches
        if not 0 <= batches <= total:
            raise ConfigError(f"state: batch {batches} is not in an epoch of {total}")
        readers = {} if self.readers is None else self.readers(epoch, batches)
        world, position = self.world, batches * self.step
        if batches == total:
            epoch, position = epoch + 1, 0
        elif rest is not None:
            world, position = rest.order_world, rest.position + position
        return State(
            epoch,
            position,
            self.seed,
            self.world,
            self.step,
            self.samples,
            self.source,
            self.config,
            self.version,
            world,
            readers,
        )

    def start(self, given: State | Mapping[str, Any] | str) -> tuple[int, int | Rest | Readers]:
        """Where ``given`` resumes this stream: its epoch and the batch to start it at, or
        the :class:`Rest` of it where another world began it, or the :class:`Readers` to
        restore where DALI's own reader streams it; a :class:`ConfigError`
        (another config, version, seed, batch or format, a damaged state) or
        :class:`DataError` (other samples, a position past the epoch) naming what differs."""
        state = State.of(given)
        if state.version != self.version:
            raise ConfigError(
                f"state: written by daliaug {state.version}, this is {self.version} (a "
                "stream's order and parameters are only promised within one version)"
            )
        if state.config != self.config:
            differ = sorted(
                name
                for name in {*state.config, *self.config}
                if state.config.get(name) != self.config.get(name)
            )
            raise ConfigError(
                f"state: taken with another config: {', '.join(differ)} differ; resume with "
                "the config the state was taken with"
            )
        if state.seed != self.seed:
            raise ConfigError(
                f"state: seed {state.seed}, this dataset's is {self.seed} (give the config a "
                "seed, or make the dataset with the state: make_dataset(..., state=...))"
            )
        if state.samples != self.samples or state.source != self.source:
            raise DataError(
                f"source: the samples changed since the state was taken ({state.samples} "
                f"samples, fingerprint {state.source}; now {self.samples}, {self.source}): "
                "files added, removed or replaced; a state resumes the very same data only"
            )
        if state.batch_size != self.step:
            raise ConfigError(
                f"state: a global batch of {state.batch_size}, this dataset's is {self.step}"
            )
        if state.order_world < 1 or state.batch_size % state.order_world:
            raise ConfigError(
                f"state: order_world {state.order_world} does not divide its global batch"
            )
        native = state.order_world == state.world == self.world
        restores = bool(state.readers) and self.readers is not None and native
        if state.readers and state.position and not restores:
            other = (
                "reads them otherwise (tf.data, or DALI on the GPU)"
                if self.readers is None
                else f"is a world of {self.world}"
            )
            raise ConfigError(
                f"state: holds the checkpoints of DALI's own reader (TFRecords read by DALI on "
                f"the CPU) in a world of {state.world}; this dataset {other}: resume it with "
                "the output, device and world it was taken with"
            )
        if state.position == 0 and not restores:
            return state.epoch, 0  # an epoch not begun: this world's own
        end = self.batches * self.step if native else self.entries(state.order_world)
        if not 0 <= state.position < end:
            raise DataError(
                f"state: position {state.position} is past the end of an epoch of {end} positions"
            )
        if state.position and not (self.seeks or restores):
            raise ConfigError(
                "state: TFRecords read by DALI's own reader (the NumPy, JAX and PyTorch "
                "outputs) resume mid-epoch from the reader's checkpoints, which DALI on the CPU "
                "keeps and this state does not hold (DALI's reader on the GPU resumes at an "
                "epoch's start only): restore a state taken at the end of an epoch, or read "
                "them with DALI on the CPU or through tf.data (framework='tensorflow')"
            )
        if restores and state.position % self.step == 0:
            assert self.readers is not None
            first = state.position // self.step
            checkpoints = self.readers.restored(state.epoch, first, state.readers)
            return state.epoch, Readers(first, checkpoints)
        if native and state.position % self.step == 0:
            return state.epoch, state.position // self.step
        if native:
            raise ConfigError(
                f"state: position {state.position} is not between two batches of "
                f"{self.step} positions"
            )
        if not self.elastic:
            raise ConfigError(
                f"state: taken by a world of {state.world} shards (in the order of "
                f"{state.order_world}), this dataset is one of {self.world}: another world's "
                "state resumes where make_dataset reads files, arrays or shards over all their "
                "samples (not streamed TFRecords: give source.listed: true to list them; not a "
                "source sharded by its config's num_shards, or a DaliLoader); restore it on "
                "the world that took it"
            )
        if self.skips:
            raise ConfigError(
                f"state: the rest of an epoch begun by a world of {state.order_world} shards, "
                f"for one of {self.world}; this source's files are checked beside training "
                "with on_error: skip, which moves each shard's samples after a bad file, so "
                "that world's positions may not hold the same samples: restore it on that "
                "world, or list the source with check: full (bad files left out before any "
                "epoch begins)"
            )
        left = self.entries(state.order_world) - state.position
        per_shard = left / self.world / self.batch_size
        batches = int(per_shard if self.drop_remainder else -(-per_shard // 1))
        if batches == 0:
            raise DataError(
                f"state: the {left} samples left of epoch {state.epoch} make no batch of "
                f"{self.batch_size} for each of {self.world} shards (drop_remainder)"
            )
        return state.epoch, Rest(state.epoch, state.order_world, state.position, batches, self)


def config_fingerprint(config: Config) -> dict[str, str]:
    """What identifies a config's stream, a short digest per field (so a refusal names the
    fields that differ), but its seed (kept apart) and which shard of how many this process
    reads (the world)."""
    dumped = config.model_dump(mode="json")
    dumped.pop("seed", None)
    for name in ("shard_id", "num_shards"):
        dumped.get("source", {}).pop(name, None)
    return {name: _short(value, 8) for name, value in sorted(dumped.items())}


def source_fingerprint(samples: SampleSet) -> str:
    """What identifies the samples: their columns (file names, labels, arrays, targets),
    image sizes and each file's size and modification time, as listed or checked (a file
    replaced or rewritten differs; names as the file system has them, odd bytes included); for
    streamed records, their files."""
    digest = hashlib.sha256(str(len(samples)).encode())
    columns = getattr(samples, "columns", None)
    if columns is None:
        for path in samples.image_files:
            digest.update(os.fsencode(path) + b"\n")
        return digest.hexdigest()[:16]
    for name, column in sorted(columns.items()):
        digest.update(name.encode())
        _update(digest, column)
    _update(digest, np.asarray(samples.sizes))
    for paths in samples.files.values():
        keys = _file_keys(samples, paths)
        lines = [f"{p}\0{k if k else ''}\n" for p, k in zip(paths, keys, strict=True)]
        digest.update(os.fsencode("".join(lines)))  # (the bytes of a line per file, at once)
    return digest.hexdigest()[:16]


def _file_keys(samples: Any, paths: list[str]) -> list[tuple[int, int] | None]:
    """Each file's size and modification time as the listing or the check took them; where
    the listing took none and the background check takes them as it goes (``Samples.sized``
    false), each taken now (one ``stat``)."""
    if not samples.sized:
        return list(map(size_and_time, paths))
    found = samples.held_keys
    if not found:
        return [None] * len(paths)
    return [key[:2] if (key := found.get(path)) else None for path in paths]


@runtime_checkable
class Keyed(Protocol):
    """A column read from storage as batches need it (members of shards:
    :class:`~daliaug.sources.member_listing.MemberColumn`; label files read late:
    :class:`~daliaug.sources.yolo_labels.LabelColumn`), identified by its files, not its
    contents."""

    def key(self) -> bytes:
        """Its files, each with what identifies it now, and its rows."""
        ...


def _update(digest: Any, column: Any) -> None:
    """``column``'s contents into ``digest`` (a NumPy column, ragged rows, or a column read
    from storage, which its files' identities and its rows identify: :class:`Keyed`)."""
    if isinstance(column, Keyed):
        digest.update(column.key())
        return
    if column.dtype != object:
        digest.update(f"{column.dtype}{column.shape}".encode())
        digest.update(np.ascontiguousarray(column).tobytes())
        return
    for row in column:
        values = np.asarray(row)
        data = repr(row).encode() if values.dtype == object else values.tobytes()
        digest.update(f"{values.dtype}{values.shape}".encode() + data + b"\0")
