"""What every output asks of a source's samples, whatever their kind: :class:`SampleSet`.

Two kinds implement it: :class:`~daliaug.sources.base.Samples` (columns the host holds and
feeds, batch by batch) and :class:`~daliaug.sources.tfrecord.RecordSamples` (TFRecord shards an
engine's reader streams past the host). Outputs ask only these questions, so they never test
which kind they hold; what a kind cannot do is refused here, by the kind itself, with an error
naming the field and the fix. Which reader an engine runs is chosen at one place per engine
(``engines/feed.py``'s ``graph_inputs``, ``engines/dali/pipeline.py``'s ``reader_pipeline``,
``engines/tf/records.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path


def shard_range(n: int, shard_id: int, num_shards: int) -> tuple[int, int]:
    """``[start, stop)`` of contiguous shard ``shard_id`` of ``num_shards`` over ``n`` samples,
    split as DALI's readers split them; the shards partition the samples."""
    return n * shard_id // num_shards, n * (shard_id + 1) // num_shards


class SampleSet(ABC):
    """One shard's samples of a source, with their ``class_names``. The ``check_*`` methods
    refuse what the kind cannot do; by default nothing is refused."""

    class_names: list[str]

    @abstractmethod
    def __len__(self) -> int:
        """The samples in this shard."""

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def column_names(self) -> tuple[str, ...]:
        """The inputs each sample holds (``path``, ``label``, ...; ``record`` and ``label`` for
        TFRecords)."""
        return ()

    @property
    def target_shape(self) -> tuple[int, ...]:
        """The per-sample shape of the ``target`` column (``()`` without one)."""
        return ()

    @property
    def has_boxes(self) -> bool:
        """Whether each sample holds boxes: the ``boxes`` (absolute ``xyxy``, or fractions of
        the image until its size is read: ``Samples.normalised``) and
        ``box_labels`` columns, and ``keypoints`` where the source has them."""
        return False

    @property
    def image_files(self) -> list[str]:
        """The image (and mask) files the samples decode, to name one that fails; none for
        arrays or records."""
        return []

    @property
    def size_hint(self) -> tuple[int, int] | None:
        """The largest ``(height, width)`` of the images, where the host knows it."""
        return None

    @abstractmethod
    def shard(self, shard_id: int, num_shards: int) -> SampleSet:
        """Contiguous shard ``shard_id`` of ``num_shards``; the shards partition the samples."""

    def check_readable(self) -> None:
        """The samples can be read as the source says: a ``DataError`` naming the file and
        the field to set if not (column sources were checked when listed)."""
        return None

    def check_params(self, which: str) -> None:
        """``which`` (``explicit``, ``returned``) parameter rows per sample are possible; a
        ``ValueError`` where the host never sees the samples."""
        return None

    def check_sample_weights(self) -> None:
        """``sample_weight`` (one weight per sample) is possible: a ``ConfigError`` if not."""
        return None

    def check_reader_weights(self, framework: str) -> None:
        """Weights are possible in DALI's graph for ``framework`` (no TensorFlow): a
        ``ConfigError`` if not."""
        return None

    def check_distribution(self, under: str) -> None:
        """The samples can be split over the devices or ranks of ``under`` (a
        ``keras.distribution``, ``torch.distributed``) for a framework other than
        TensorFlow: a ``ConfigError`` if not."""
        return None

    def check_split(self, field: str, folder: Path) -> None:
        """:meth:`split` is possible for the samples read from ``folder`` (given as
        ``field``): a ``DataError`` saying how to split them otherwise if not."""
        return None

    @abstractmethod
    def split(self, fraction: float, seed: int = 0) -> tuple[SampleSet, SampleSet]:
        """A reproducible ``(1 - fraction, fraction)`` random split, e.g. train and validation."""
