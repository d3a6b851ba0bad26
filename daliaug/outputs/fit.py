""":class:`FitBatches`: :class:`~daliaug.outputs.batches.Batches` as a Keras data adapter,
what ``model.fit``, ``evaluate`` and ``predict`` take on the JAX and PyTorch backends (imports
Keras). Every pass Keras starts is one epoch; Keras' own ``shuffle`` does not reorder it, as it
does not reorder a ``tf.data`` dataset. See :mod:`daliaug.outputs.batches` for why an adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from keras.src.trainers.data_adapters import data_adapter_utils
from keras.src.trainers.data_adapters.data_adapter import DataAdapter

from daliaug.errors import ConfigError
from daliaug.outputs.batches import Batch, Batches


class FitBatches(Batches, DataAdapter):
    """Batches of the backend's arrays for Keras' ``fit``; iterate it for a loop of your own."""

    def get_jax_iterator(self) -> Iterator[Batch]:
        return iter(self)

    def get_numpy_iterator(self) -> Iterator[Batch]:
        return data_adapter_utils.get_numpy_iterator(self)

    def get_torch_dataloader(self) -> Any:
        return data_adapter_utils.get_torch_dataloader(self)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: batches are no array. What converts its input with ``np.asarray`` or
        ``tf.data.Dataset.from_tensor_slices`` (a KerasHub task's ``fit``, which takes only
        ``tf.data`` or grain datasets) gets this error, naming the fix, not its own."""
        raise ConfigError(
            "framework: these are daliaug's batches for Keras' own fit on JAX or PyTorch, not an "
            "array; a KerasHub task's fit (or anything else that wants a tf.data dataset) takes "
            "make_dataset(..., framework='tensorflow'), which Keras trains on with every backend"
        )

    def get_tf_dataset(self) -> Any:
        raise ConfigError(
            "framework: these batches are for Keras' JAX or PyTorch backend; on TensorFlow use "
            "make_dataset(..., framework='tensorflow') (the default there)"
        )

    @property
    def num_batches(self) -> int:
        return len(self)

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def has_partial_batch(self) -> bool:
        return self._partial > 0

    @property
    def partial_batch_size(self) -> int | None:
        return self._partial or None
