"""A dataset made by ``make_dataset`` given its :class:`~daliaug.resume.Stream` (what its
states say and must match) and started where a state says. Imports no framework.

The NumPy, JAX and PyTorch batches (:class:`~daliaug.outputs.batches.Batches`) know how many
batches they have handed on, so they give their state themselves (``get_state``). A
``tf.data`` dataset does not (its iterators run ahead of the training step), so it takes the
batches consumed from its caller: ``state_at(epoch, batches)``; ``set_state(state)`` makes its
next iteration the rest of the state's epoch (through its epoch clock), as ``make_dataset``'s
``state`` does; a dataset made without a state asserts its full length, so it is for callers
that stop the resumed epoch at its last step (``daliaug.keras.BackupAndRestore``). It also
takes a state another world took: that iteration is the rest of the epoch in that world's
order (:class:`~daliaug.resume.Rest`; under a strategy each replica runs its part of it), and
``state_at`` counts its batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from daliaug.epoch import EpochClock, replica_length
from daliaug.reader_checkpoints import ReaderCheckpoints, keeps
from daliaug.resume import Readers, Rest, State, Stream, config_fingerprint, source_fingerprint
from daliaug.sources.base import Samples
from daliaug.version import __version__

if TYPE_CHECKING:
    from daliaug.run import Run


def resumable(
    dataset: Any,
    run: Run,
    state: State | Mapping[str, Any] | str | None,
    strategy: Any = None,
    readers: ReaderCheckpoints | None = None,
) -> Any:
    """``dataset`` (made of ``run``, all its samples, with ``strategy`` if any) with its
    stream, started at ``state`` if one is given (refused by name if it is not a state of this
    stream); ``readers``: where DALI's own readers keep their checkpoints, if they read it."""
    tf_data = hasattr(dataset, "epoch_clock")  # tf.data: the clock numbers its iterations
    config, samples = run.config, run.samples
    world, per_shard = run.shards, run.batch_size
    if strategy is not None:
        world = strategy.num_replicas_in_sync
        per_shard = run.batch_size // world
    if tf_data:
        length = replica_length(len(samples), world, per_shard, config.drop_remainder)
        batches = getattr(dataset, "batches_per_epoch", length // per_shard)
    else:
        world, per_shard, batches = dataset.world, dataset.shard_batch, len(dataset)
    stream = stream_of(run, world, per_shard, batches, tf_data, run.shards == 1, readers)
    dataset.stream = stream
    if tf_data:
        dataset.state_at, dataset.set_state = _tf_data_states(stream, dataset.epoch_clock)
    else:
        dataset.samples = samples
    if state is not None:
        dataset.set_state(state)
    return dataset


def _tf_data_states(
    stream: Stream, clock: EpochClock
) -> tuple[Callable[[int, int], State], Callable[[Any], None]]:
    """A ``tf.data`` dataset's ``state_at(epoch, batches)`` and ``set_state(state)``: a state
    seeks its clock; one another world took makes the next iteration the rest of that epoch
    (a world of one runs all of it), whose batches ``state_at`` counts from its start."""
    resumed: dict[int, Rest] = {}

    def set_state(given: Any) -> None:
        epoch, start = stream.start(given)
        resumed.clear()
        if isinstance(start, Rest):
            resumed[epoch] = start  # a strategy's replicas deal it out (their ShardClocks)
            start = start.shard(0) if stream.world == 1 else start
        assert not isinstance(start, Readers)  # (no reader checkpoints on tf.data)
        clock.seek(epoch, start)

    def state_at(epoch: int, batches: int) -> State:
        return stream.state(epoch, batches, resumed.get(epoch))

    return state_at, set_state


def stream_of(
    run: Run,
    world: int,
    per_shard: int,
    batches: int,
    tf_data: bool = False,
    elastic: bool = False,
    readers: ReaderCheckpoints | None = None,
) -> Stream:
    """The stream of ``batches`` per epoch of ``run`` over its samples (all of them) split
    over ``world`` shards of ``per_shard``: it seeks mid-epoch over column samples, or where
    ``tf_data`` reads TFRecords itself, or from the checkpoints DALI's own reader keeps in
    ``readers`` (on the devices that keep them); ``elastic``: it takes the rest of an epoch
    another world began (column samples only)."""
    config, samples = run.config, run.samples
    columns = isinstance(samples, Samples)
    check = samples.background if columns else None
    if columns or tf_data or not keeps(run.device):
        readers = None
    return Stream(
        run.seed,
        world,
        per_shard,
        batches,
        len(samples),
        partial(source_fingerprint, samples),
        config_fingerprint(config),
        __version__,
        config.shuffle,
        config.drop_remainder,
        seeks=columns or tf_data,  # (tf.data reads TFRecords itself)
        elastic=columns and elastic,
        skips=check is not None and check.on_error == "skip",
        readers=readers,
    )
