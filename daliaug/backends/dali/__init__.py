"""The DALI backend: the plan as one DALI graph, on the GPU (nvJPEG decoding, GPU warp, colour
and normalization) or on the CPU. Importing this package imports DALI, never TensorFlow; only
:mod:`daliaug.backends.dali.dataset`, the bridge to ``tf.data``, imports TensorFlow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from daliaug.backends import DEFAULT_OPTIONS, Backend, DatasetOptions
from daliaug.backends.dali.loader import DaliLoader
from daliaug.backends.select import Device
from daliaug.config import Config
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples

if TYPE_CHECKING:
    import tensorflow as tf


class DaliBackend(Backend):
    name = "dali"

    def dataset(
        self,
        config: Config,
        samples: Samples | RecordSamples,
        device: Device,
        options: DatasetOptions = DEFAULT_OPTIONS,
    ) -> tf.data.Dataset:
        from daliaug.backends.dali.dataset import dali_dataset

        return dali_dataset(config, samples, device, options)

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.backends.dali.verify import undecodable

        return undecodable(paths, device, device_id=device_id)

    def batches(
        self,
        config: Config,
        samples: Samples,
        device: Device,
        *,
        params: np.ndarray | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        yield from DaliLoader(config, samples=samples, device=device, params=params)


BACKEND = DaliBackend()
