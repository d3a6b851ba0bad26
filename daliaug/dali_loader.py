"""Iterate a config's DALI pipeline directly, without TensorFlow: NumPy batches per epoch.

Used by ``daliaug preview``, the parity harness, the GPU suite and the benchmarks. Each epoch
visits every sample exactly once in a fresh order (``seed`` and the epoch number fix it); the
last batch is smaller unless ``drop_remainder``. Column sources are fed from NumPy one batch
at a time (no per-sample Python loop); TFRecords are read by DALI's own reader, whose shuffle
is a buffer rather than a full permutation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import numpy as np
from nvidia.dali.pipeline import Pipeline

from daliaug.config import Config
from daliaug.dali_pipeline import GraphOptions, build_pipeline
from daliaug.device import Device, resolve_device
from daliaug.epochs import batch_bounds, epoch_order, resolve_seed
from daliaug.errors import DataError, first_line
from daliaug.numpy_ops import draw_params, warp_batch
from daliaug.sources import Samples, prepare_samples
from daliaug.sources.base import explain_failure
from daliaug.sources.tfrecord import RecordSamples


class _EpochFeed:
    """The one external source: every input of a batch per call, epoch by epoch.

    Parameters are drawn (or taken from the explicit ``params``) and the plan evaluated with
    NumPy, vectorized over the batch. Raising ``StopIteration`` ends an epoch; the next call
    (after the pipeline's reset) starts the next epoch in a new order.
    """

    def __init__(self, loader: DaliLoader, samples: Samples) -> None:
        self.loader = loader
        self.samples = samples
        config = loader.config
        self.plan = config.plan
        self.feed = self.plan.graph_feed(samples.columns)
        self.warp_names = self.plan.warp_input_names(**self.feed)
        self.epoch = 0
        self.rng: np.random.Generator | None = None
        self.pending: deque[np.ndarray] | None = None
        self.recent: deque[np.ndarray] = deque(maxlen=config.prefetch + 2)
        self.params: deque[np.ndarray] = deque()

    @property
    def inputs(self) -> tuple[str, ...]:
        return (*self.samples.columns, "warp")

    def __call__(self) -> tuple[np.ndarray, ...]:
        if self.pending is None:
            self.pending = deque(self.loader.batch_indices(self.epoch))
            self.rng = np.random.default_rng([self.loader.seed, self.epoch, 1])
        if not self.pending:
            self.pending = None
            self.epoch += 1
            raise StopIteration
        idx = self.pending.popleft()
        self.recent.append(idx)
        if self.loader.params is not None:
            rows = self.loader.params[idx]
        else:
            rows = draw_params(self.plan, self.rng, len(idx))
        self.params.append(rows)
        warp = warp_batch(self.plan, rows, self.samples.sizes[idx], **self.feed)
        columns = [column[idx] for column in self.samples.columns.values()]
        flat = [warp[name].reshape(len(idx), -1) for name in self.warp_names]
        return (*columns, np.concatenate(flat, axis=1))


class DaliLoader:
    """A config's DALI pipeline over its samples, yielding NumPy ``(images, targets[, params])``.

    ``samples`` replaces the config's source (for example in-memory arrays); ``params``, one
    row of :attr:`Plan.param_keys` per sample, replaces the random draws (which are NumPy's,
    seeded by the config's ``seed`` and the epoch); ``return_params`` also yields the
    parameters each sample got.
    """

    def __init__(
        self,
        config: Config,
        *,
        samples: Samples | RecordSamples | None = None,
        device: Device | None = None,
        params: np.ndarray | None = None,
        return_params: bool = False,
    ) -> None:
        self.config = config
        self.samples = prepare_samples(config, samples)
        self.device = device or resolve_device(config)
        self.params = None if params is None else np.asarray(params, dtype=np.float32)
        self.return_params = return_params
        if self.params is not None and self.params.shape[0] != len(self.samples):
            raise ValueError(
                f"params has {self.params.shape[0]} rows for {len(self.samples)} samples"
            )
        self.seed = resolve_seed(config.seed)
        self._feed: _EpochFeed | None = None
        if isinstance(self.samples, RecordSamples):
            if self.params is not None or return_params:
                raise ValueError("explicit or returned params need a column source, not TFRecords")
            options = GraphOptions(
                self.device, self.samples.num_classes, inputs=(), records=self.samples
            )
        else:
            self._feed = _EpochFeed(self, self.samples)
            options = GraphOptions(
                self.device, self.samples.num_classes, inputs=self._feed.inputs, feed=self._feed
            )
        self.pipeline: Pipeline = build_pipeline(config, options)
        self.pipeline.build()

    def batch_indices(self, epoch: int) -> list[np.ndarray]:
        order = epoch_order(len(self.samples), self.config.shuffle, self.seed, epoch)
        bounds = batch_bounds(len(order), self.config.batch_size, self.config.drop_remainder)
        return [order[a:b] for a, b in bounds]

    def __len__(self) -> int:
        n = len(self.samples)
        return len(batch_bounds(n, self.config.batch_size, self.config.drop_remainder))

    def raw_batches(self) -> Iterator[tuple]:
        """One epoch of DALI ``TensorList`` outputs (on the GPU for the GPU device)."""
        if self._feed is None:
            yield from self._reader_batches()
            return
        while True:
            try:
                outputs = self.pipeline.run()
            except StopIteration:
                self.pipeline.reset()
                self._feed.params.clear()
                return
            except RuntimeError as e:
                raise self._explain(e) from None
            yield outputs

    def _reader_batches(self) -> Iterator[tuple]:
        """One epoch of DALI's TFRecord reader, which stays on its shard and repeats the
        shard's last record up to the batches of the largest shard: the repeats are cut off."""
        n, size = len(self.samples), self.config.batch_size
        meta = self.pipeline.reader_meta("records")
        largest = meta["epoch_size_padded"] // meta["number_of_shards"]
        for start in range(0, largest, size):
            try:
                outputs = self.pipeline.run()
            except RuntimeError as e:
                raise DataError(f"reading TFRecords failed: {first_line(e)}") from None
            if start + size <= n:
                yield outputs
            elif start < n and not self.config.drop_remainder:
                yield tuple(_Trimmed(t, n - start) for t in outputs)

    def __iter__(self) -> Iterator[tuple[np.ndarray, ...]]:
        for outputs in self.raw_batches():
            batch = tuple(_to_numpy(t) for t in outputs)
            if self._feed is not None:
                params = self._feed.params.popleft()
                batch = (*batch, params) if self.return_params else batch
            yield batch

    def _explain(self, error: RuntimeError) -> DataError:
        assert self._feed is not None and isinstance(self.samples, Samples)
        recent = [int(i) for idx in self._feed.recent for i in idx]
        files = [paths[i] for paths in self.samples.files.values() for i in recent]
        return explain_failure(
            error, files, f"DALI failed on a batch of {len(recent)} recent samples"
        )


class _Trimmed:
    """The first ``count`` samples of a DALI output batch."""

    def __init__(self, tensors: object, count: int) -> None:
        self.tensors, self.count = tensors, count

    def as_cpu(self) -> _Trimmed:
        return _Trimmed(_on_cpu(self.tensors), self.count)

    def as_array(self) -> np.ndarray:
        return np.asarray(self.tensors.as_array())[: self.count]


def _on_cpu(tensors: object) -> object:
    return tensors.as_cpu() if hasattr(tensors, "as_cpu") else tensors


def _to_numpy(tensors: object) -> np.ndarray:
    return np.asarray(_on_cpu(tensors).as_array())
