"""How an output runs its epochs beyond what the config says: the epoch clock, weights, length
and placement, shared by every output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from daliaug.epoch import EpochClock, Epochs, RestOfEpoch
from daliaug.reader_checkpoints import ReaderCheckpoints
from daliaug.sources.base import Samples

if TYPE_CHECKING:
    from daliaug.run import Run


@dataclass(frozen=True)
class DatasetOptions:
    """How a dataset runs its epochs beyond what the config says."""

    clock: EpochClock | None = None
    """The dataset's epoch clock (one per ``make_dataset``, shared by all its replicas); by
    default a new one counting from 0."""
    class_weights: np.ndarray | None = None
    """One weight per class: batches become ``(images, targets, weights)``."""
    length: int | None = None
    """Positions per epoch, where replicas pad or cut to equal batch counts (see
    :class:`~daliaug.epoch.Epochs`)."""
    weighted: bool = False
    """Yield ``(images, targets, weights)`` even without class weights (padding weighs 0)."""
    place: str | None = None
    """The TensorFlow device to place the dataset on (a replica's device); default: the host
    CPU, or DALI's GPU for DALI on the GPU."""
    sample_weights: np.ndarray | None = None
    """One weight per sample (column sources), times its class weight if there are any."""
    resumes: bool = False
    """Made with a state (:mod:`daliaug.resume`): its first epoch may start mid-way, so a
    ``tf.data`` dataset reports its length (:func:`~daliaug.outputs.tfdata.streams.epoch_length`)
    rather than asserting it."""
    resumed: RestOfEpoch | None = None
    """The rest of an epoch begun by another world, which this shard runs instead of its own
    epochs (:class:`~daliaug.epoch.RestOfEpoch`, a state restored elastically)."""
    readers: ReaderCheckpoints | None = None
    """Where DALI's own readers (TFRecords) record their checkpoints after each batch, which
    the dataset's states hold (one per ``make_dataset``, shared by its shards)."""
    gpus: int = 1
    """The GPU pipelines this process runs side by side (one per local GPU of a distribution
    or strategy), which share its CPU cores (:meth:`~daliaug.config.Config.dali_threads`)."""

    @property
    def weighs(self) -> bool:
        """Whether batches carry weights."""
        return self.weighted or self.class_weights is not None or self.sample_weights is not None

    def weights(self, num_classes: int) -> np.ndarray | None:
        """The per-class weights of a weighted dataset (ones without class weights), else
        ``None``."""
        if self.class_weights is not None or not self.weighs:
            return self.class_weights
        return np.ones(num_classes, np.float32)

    def per_sample(self, samples: Samples) -> np.ndarray | None:
        """Each sample's weight (its own times its class's) for a weighted dataset, else
        ``None``."""
        if not self.weighs:
            return None
        weights = np.ones(len(samples), np.float32)
        if self.sample_weights is not None:
            weights = weights * np.asarray(self.sample_weights, np.float32)
        if self.class_weights is not None and samples.labels is not None:
            weights = weights * self.class_weights[samples.labels]
        return weights

    def epochs(self, run: Run) -> Epochs | RestOfEpoch:
        """The run's epochs as these options run them (padded or cut to ``length``, or the
        rest of an epoch another world began)."""
        return self.resumed or run.epochs(self.length)

    def epoch_clock(self) -> EpochClock:
        return self.clock or EpochClock()


DEFAULT_OPTIONS = DatasetOptions()
