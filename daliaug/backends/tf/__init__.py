"""The TensorFlow backend: the plan computed with TensorFlow ops in ``tf.data`` (``backend: tf``,
and ``auto`` where DALI cannot be imported). Importing this package imports TensorFlow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf

from daliaug.backends import DEFAULT_OPTIONS, Backend, DatasetOptions
from daliaug.backends.select import Device
from daliaug.config import Config
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples


class TfBackend(Backend):
    name = "tf"

    def dataset(
        self,
        config: Config,
        samples: Samples | RecordSamples,
        device: Device,
        options: DatasetOptions = DEFAULT_OPTIONS,
    ) -> tf.data.Dataset:
        from daliaug.backends.tf.dataset import tf_dataset

        return tf_dataset(config, samples, options)

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.backends.tf.verify import undecodable

        return undecodable(paths)

    def batches(
        self,
        config: Config,
        samples: Samples,
        device: Device,
        *,
        params: np.ndarray | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        from daliaug.backends.tf.dataset import tf_dataset

        for batch in tf_dataset(config, samples, params=params):
            yield tuple(t.numpy() for t in batch)


BACKEND = TfBackend()
