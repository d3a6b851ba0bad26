"""Iterate a config's DALI pipeline directly, without TensorFlow: NumPy batches per epoch.

Used by ``daliaug preview``, the parity harness, the GPU suite and the benchmarks. Each epoch
visits every sample exactly once in a fresh order (``seed`` and the epoch number fix it); the
last batch is smaller unless ``drop_remainder``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import numpy as np
from nvidia.dali.pipeline import Pipeline

from daliaug.config import Config
from daliaug.dali_pipeline import GraphOptions, build_pipeline, encode_paths
from daliaug.device import Device, resolve_device
from daliaug.epochs import batch_bounds, epoch_order, resolve_seed
from daliaug.errors import DataError
from daliaug.sources import FileSamples
from daliaug.sources.base import find_undecodable


class _EpochFeed:
    """The one external source: a batch of (paths, labels[, params]) per call, epoch by epoch.

    Raising ``StopIteration`` ends an epoch; the next call (after the pipeline's reset)
    starts the next epoch in a new order.
    """

    def __init__(self, loader: DaliLoader) -> None:
        self.loader = loader
        self.epoch = 0
        self.pending: deque[np.ndarray] | None = None
        self.recent: deque[np.ndarray] = deque(maxlen=loader.config.prefetch + 2)

    def __call__(self) -> tuple[np.ndarray, ...]:
        if self.pending is None:
            self.pending = deque(self.loader.batch_indices(self.epoch))
        if not self.pending:
            self.pending = None
            self.epoch += 1
            raise StopIteration
        idx = self.pending.popleft()
        self.recent.append(idx)
        out = [self.loader.encoded_paths[idx], self.loader.samples.labels[idx]]
        if self.loader.params is not None:
            out.append(self.loader.params[idx])
        return tuple(out)


class DaliLoader:
    """A config's DALI pipeline over its samples, yielding NumPy ``(images, labels[, params])``."""

    def __init__(
        self,
        config: Config,
        *,
        samples: FileSamples | None = None,
        device: Device | None = None,
        params: np.ndarray | None = None,
        return_params: bool = False,
    ) -> None:
        self.config = config
        self.samples = samples if samples is not None else config.source.samples()
        self.device = device or resolve_device(config)
        self.params = None if params is None else np.asarray(params, dtype=np.float32)
        if self.params is not None and self.params.shape[0] != len(self.samples):
            raise ValueError(
                f"params has {self.params.shape[0]} rows for {len(self.samples)} samples"
            )
        self.seed = resolve_seed(config.seed)
        self.encoded_paths = encode_paths(self.samples.paths)
        self._feed = _EpochFeed(self)
        self.pipeline: Pipeline = build_pipeline(
            config,
            GraphOptions(
                device=self.device,
                num_classes=self.samples.num_classes,
                explicit_params=self.params is not None,
                feed=self._feed,
                return_params=return_params,
            ),
        )
        self.pipeline.build()

    def batch_indices(self, epoch: int) -> list[np.ndarray]:
        order = epoch_order(len(self.samples), self.config.shuffle, self.seed, epoch)
        bounds = batch_bounds(len(order), self.config.batch_size, self.config.drop_remainder)
        return [order[a:b] for a, b in bounds]

    def __len__(self) -> int:
        return len(
            batch_bounds(len(self.samples), self.config.batch_size, self.config.drop_remainder)
        )

    def raw_batches(self) -> Iterator[tuple]:
        """One epoch of DALI ``TensorList`` outputs (on the GPU for the GPU device)."""
        while True:
            try:
                outputs = self.pipeline.run()
            except StopIteration:
                self.pipeline.reset()
                return
            except RuntimeError as e:
                raise self._explain(e) from None
            yield outputs

    def __iter__(self) -> Iterator[tuple[np.ndarray, ...]]:
        for outputs in self.raw_batches():
            yield tuple(_to_numpy(t) for t in outputs)

    def _explain(self, error: RuntimeError) -> DataError:
        paths = [self.samples.paths[i] for idx in self._feed.recent for i in idx]
        bad = find_undecodable(paths)
        if bad is not None:
            return DataError(f"cannot decode image {bad[0]}: {bad[1]}")
        first_line = next((line for line in str(error).splitlines() if line.strip()), str(error))
        return DataError(f"DALI failed on a batch from {len(paths)} recent files: {first_line}")


def _to_numpy(tensors: object) -> np.ndarray:
    if hasattr(tensors, "as_cpu"):
        tensors = tensors.as_cpu()
    return np.asarray(tensors.as_array())
