"""A ``tf.data`` stream's place as a ``tf.train.Checkpoint`` dependency, the way TensorFlow
users save an iterator (:class:`DataCheckpoint`).

daliaug's ``tf.data`` iterators run Python and DALI, which TensorFlow's own iterator
checkpointing cannot save; the stream's state is a few integers instead
(:class:`~daliaug.resume.State`), taken from the training loop's step counter (a ``tf.Variable``
counting the batches trained since epoch 0, such as ``optimizer.iterations``) when a
checkpoint is written, and read back when one is restored; the dataset is then made at it
(``make_dataset``'s ``state``: its first epoch holds the batches left, and is no longer than
that).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from daliaug.errors import ConfigError
from daliaug.resume import State


class DataCheckpoint(tf.train.experimental.PythonState):
    """The place of a ``tf.data`` dataset after ``step`` batches (a ``tf.Variable``, read when
    a checkpoint is written): epoch ``step // batches_per_epoch``, batch ``step %
    batches_per_epoch``. Put it in the checkpoint, restore the checkpoint, then make the
    dataset with :meth:`make_dataset`, which starts it where the restored state says::

        step = tf.Variable(0, dtype=tf.int64)
        data = DataCheckpoint(step)
        checkpoint = tf.train.Checkpoint(model=model, step=step, data=data)
        manager = tf.train.CheckpointManager(checkpoint, "ckpt", max_to_keep=2)
        manager.restore_or_initialize()
        ds = data.make_dataset(config)  # the rest of the saved epoch first
    """

    def __init__(self, step: tf.Variable) -> None:
        self.step = step
        self.state: State | None = None
        """The state restored, where a checkpoint was."""
        self.dataset: Any = None

    def make_dataset(self, config: Any, **kwargs: Any) -> Any:
        """``daliaug.make_dataset(config, **kwargs)`` (``tf.data``), started at the restored
        state if any, and the dataset this checkpoint saves the place of."""
        from daliaug.outputs.dataset import make_dataset

        dataset = make_dataset(config, state=self.state, framework="tensorflow", **kwargs)
        state = self.state
        if state is not None and state.position and state.order_world != dataset.stream.world:
            raise ConfigError(
                f"DataCheckpoint: the state restored was taken in the order of a world of "
                f"{state.order_world} shards, and this dataset is one of "
                f"{dataset.stream.world}: the training step counts this world's epochs, not "
                "the rest of that one's; resume it with make_dataset(config, state=...) or "
                "daliaug.keras.BackupAndRestore, or on the world that took it"
            )
        self.dataset = dataset
        return dataset

    def serialize(self) -> str:
        """The state after ``step`` batches, as JSON."""
        if self.dataset is None:
            raise ConfigError("DataCheckpoint: saved before its make_dataset made the dataset")
        epoch, batch = divmod(int(self.step.numpy()), self.dataset.stream.batches)
        return self.dataset.state_at(epoch, batch).to_json()

    def deserialize(self, string: bytes | str) -> None:
        """The saved state kept for :meth:`make_dataset`."""
        if self.dataset is not None:
            raise ConfigError(
                "DataCheckpoint: restore the checkpoint before its make_dataset makes the dataset"
            )
        self.state = State.from_json(string.decode() if isinstance(string, bytes) else string)
