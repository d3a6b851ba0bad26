"""``make_dataset``: a config's ``tf.data.Dataset`` for ``model.fit``, from the backend it picks.

With DALI (``backend`` auto, gpu or cpu) the DALI graph does the pixels; with ``backend: tf``
(or auto without DALI) TensorFlow ops do. Either way the epochs are :mod:`daliaug.epoch`'s.
Importing this module imports neither TensorFlow nor DALI; the chosen backend does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daliaug.backends import select_backend
from daliaug.config import load_config
from daliaug.sources.base import Samples
from daliaug.sources.prepare import prepare_samples
from daliaug.sources.tfrecord import RecordSamples

if TYPE_CHECKING:
    import tensorflow as tf


def make_dataset(
    config: Any,
    *,
    samples: Samples | RecordSamples | None = None,
    x: Any = None,
    y: Any = None,
    initial_epoch: int = 0,
) -> tf.data.Dataset:
    """A dataset of ``(images, labels or masks)`` batches, augmented as the config says.

    ``config`` is anything :func:`~daliaug.config.load_config` takes. For an ``arrays``
    source pass the uint8 images ``x`` (N, H, W, C) and integer labels ``y``; ``samples``
    replaces the config's source altogether.

    One iteration is one epoch: every sample exactly once, in a new order each epoch when
    ``shuffle``; the last batch is smaller unless ``drop_remainder``. The first iteration is
    epoch ``initial_epoch`` (the same order and parameters as in a run that started at 0), so
    ``model.fit(..., initial_epoch=k)`` resumes the data stream too. Images come out of DALI on
    the GPU with ``backend`` gpu (or auto on a GPU machine), else from DALI on the CPU, or from
    TensorFlow ops with ``backend: tf`` (or auto without DALI), with the same element spec.
    """
    config = load_config(config)
    samples = prepare_samples(config, samples, x, y)
    backend, device = select_backend(config)
    if isinstance(samples, RecordSamples):
        from daliaug.backends.streams import check_record_keys

        check_record_keys(samples)
    return backend.dataset(config, samples, device, initial_epoch=initial_epoch)
