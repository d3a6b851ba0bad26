"""An epoch per pass over DALI's batches without TensorFlow: :class:`Batches` (an iterable with
a length, as NumPy batches for any loop) and :func:`fit_batches` (the same as a Keras data
adapter, what ``model.fit`` takes on the JAX and PyTorch backends).

Every pass of a :class:`Batches` is one epoch, numbered from ``initial_epoch``, like iterating a
``tf.data`` dataset. The pipelines behind it run their epochs in order, so a pass left
unfinished (Keras takes one batch to build the model before the first epoch) does not count:
the next pass runs the same epoch again, from pipelines opened anew at that epoch.

Why a Keras ``DataAdapter`` (``keras.src.trainers.data_adapters``; ``fit`` takes one as it is,
Keras 3.7 on) rather than a ``keras.utils.PyDataset``: under ``fit(shuffle=True)``, its default,
Keras asks a PyDataset for its batches in a random order of their indices, which a pipeline
that computes an epoch in order cannot serve without losing its prefetch, and which would
change the order the config fixes (Keras leaves a ``tf.data`` dataset's order alone); and under
a multi-process ``keras.distribution`` Keras refuses any input but ``tf.data`` unless
``auto_shard_dataset=False``, while these batches are sharded per process already.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from daliaug.outputs.batch_layout import BatchLayout

if TYPE_CHECKING:
    from daliaug.config import Config
    from daliaug.engines.select import Choice
    from daliaug.outputs.options import DatasetOptions
    from daliaug.sources.sample_set import SampleSet

Batch = tuple[Any, ...]


class Batches:
    """``(images, targets[, weights])`` batches, one epoch per pass, from ``open_at(epoch)``:
    an iterable whose every ``iter()`` runs the next epoch of pipelines opened at ``epoch``
    (reused while passes run to their end). ``length``: batches per epoch; ``batch_size`` and
    ``partial``: the full batch and the last one's size if smaller (else 0); ``pipelines``: how
    many run side by side (one per local shard)."""

    def __init__(
        self,
        open_at: Callable[[int], Iterable[Batch]],
        length: int,
        batch_size: int,
        partial: int = 0,
        initial_epoch: int = 0,
        pipelines: int = 1,
    ) -> None:
        self._open_at = open_at
        self.pipelines = pipelines
        self._length = length
        self._batch_size = batch_size
        self._partial = partial
        self._epoch = initial_epoch
        self._stream: Iterable[Batch] | None = None
        self._ended = False

    def __len__(self) -> int:
        """Batches per epoch."""
        return self._length

    @property
    def epoch(self) -> int:
        """The epoch the next pass runs."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass run ``epoch`` (:class:`~daliaug.keras.EpochSync`, a restore)."""
        if epoch != self._epoch:
            self._epoch, self._stream = epoch, None

    def __iter__(self) -> Iterator[Batch]:
        epoch = self._epoch
        if self._stream is None or not self._ended:
            self._stream = self._open_at(epoch)
        self._ended = False
        batches = iter(self._stream)
        for count, batch in enumerate(batches, 1):
            if count == self._length:
                # Keras stops at the last batch without asking for more: end the pipelines'
                # epoch now, so that the next pass finds them at the next one.
                if next(batches, None) is not None:
                    raise RuntimeError(f"epoch {epoch} ran past its {self._length} batches")
                self._ended, self._epoch = True, epoch + 1
            yield batch


class Joined:
    """Several shards' epochs side by side: every ``iter()`` runs the next epoch of each, and
    each batch is theirs joined along the batch axis, in order (they run equal batch counts),
    passed through ``convert`` and nested as ``layout`` says."""

    def __init__(
        self, shards: list[Iterable[Batch]], convert: Callable[[Batch], Batch], layout: BatchLayout
    ) -> None:
        self.shards, self.convert, self.layout = shards, convert, layout

    def __iter__(self) -> Iterator[Batch]:
        if len(self.shards) == 1:
            for batch in self.shards[0]:
                yield self.layout.nest(self.convert(batch))
            return
        for parts in zip(*self.shards, strict=True):
            joined = tuple(np.concatenate(a) for a in zip(*parts, strict=True))
            yield self.layout.nest(self.convert(joined))


Shard = tuple["Config", "SampleSet", "DatasetOptions"]
"""One shard's config, samples and options (see :class:`~daliaug.outputs.shards.Shards`)."""


def shard_layout(shard: Shard) -> BatchLayout:
    """The layout of a shard's batches (DALI's iterators' ``output_map`` is its names)."""
    config, samples, options = shard
    return BatchLayout.of(samples, config.label_mode, config.max_boxes, options.weighs)


def local_batches(
    shards: list[Shard],
    open_at: Callable[[int], Iterable[Batch]],
    initial_epoch: int,
    kind: type[Batches] = Batches,
) -> Batches:
    """The batches of this process's ``shards`` (run side by side, equal batch counts) as
    ``kind``, their epochs opened by ``open_at``."""
    config, samples, options = shards[0]
    bounds = options.epochs(config, len(samples)).bounds
    full = config.batch_size * len(shards)
    last = (bounds[-1][1] - bounds[-1][0]) * len(shards)
    partial = last if last < full else 0
    return kind(open_at, len(bounds), full, partial, initial_epoch, len(shards))


def cpu_loaders(
    shards: list[Shard], convert: Callable[[Batch], Batch], choice: Choice
) -> Callable[[int], Joined]:
    """``open_at`` for ``shards`` run on the host's side of ``choice``: one loader each, their
    NumPy batches joined and ``convert``-ed: the OpenCV engine's
    :class:`~daliaug.outputs.opencv.CvLoader` where ``choice`` names it, else DALI's
    :class:`~daliaug.outputs.numpy.DaliLoader` on its device."""
    device = choice.device
    if choice.engine == "opencv":
        from daliaug.outputs.opencv import CvLoader

        def loader(c: Config, s: SampleSet, o: DatasetOptions, epoch: int) -> Iterable[Batch]:
            return CvLoader(c, samples=s, options=o, initial_epoch=epoch)
    else:
        from daliaug.outputs.numpy import DaliLoader

        def loader(c: Config, s: SampleSet, o: DatasetOptions, epoch: int) -> Iterable[Batch]:
            return DaliLoader(c, samples=s, device=device, options=o, initial_epoch=epoch)

    layout = shard_layout(shards[0])

    def open_at(epoch: int) -> Joined:
        loaders = [loader(c, s, o, epoch) for c, s, o in shards]
        return Joined(loaders, convert, layout)

    return open_at
