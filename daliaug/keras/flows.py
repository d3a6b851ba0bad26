"""``flow*``: a config and samples through ``make_dataset``, the stage after it
(:mod:`daliaug.keras.after_pipeline`) where needed, and Keras' iterator protocol and attributes on
the dataset it returns. Knows nothing of the generator: it gets the config and the outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from daliaug.config import Config
from daliaug.keras.after_pipeline import Outputs
from daliaug.keras.iterator import keras_iterator
from daliaug.keras.random_access import EpochBatches
from daliaug.outputs import framework_of
from daliaug.outputs.dataset import make_dataset
from daliaug.sources.base import Samples

COLOR_MODES = {"rgb": 3, "grayscale": 1}


def check_file_flow(
    color_mode: str, class_mode: str | None, interpolation: str, allowed: set[str | None]
) -> None:
    """Keras' checks of a file flow's arguments, with its messages (``rgba`` is refused:
    daliaug decodes RGB or grey)."""
    from keras.src.utils.image_utils import PIL_INTERPOLATION_METHODS

    if color_mode not in {"rgb", "rgba", "grayscale"}:
        raise ValueError(
            f'Invalid color mode: {color_mode}; expected "rgb", "rgba", or "grayscale".'
        )
    if color_mode == "rgba":
        raise ValueError("color_mode='rgba' is not supported: daliaug decodes RGB or grayscale")
    if class_mode not in allowed:
        raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: {allowed}")
    if interpolation not in PIL_INTERPOLATION_METHODS:
        raise ValueError(
            f"Invalid interpolation method {interpolation} specified. Supported methods are "
            f"{', '.join(PIL_INTERPOLATION_METHODS)}"
        )


def make_flow(
    config: Config,
    samples: Samples,
    weights: np.ndarray | None,
    outputs: Outputs,
    data_format: str,
    attributes: dict[str, Any],
) -> Any:
    """``make_dataset`` of ``config`` (its seed fixed, so that ``it[i]`` finds the same
    epochs) on ``samples``, then ``outputs``' stage if needed, as a Keras iterator with
    ``attributes``; an empty iterator when there are no samples."""
    h, w = config.image_size
    c = config.channels
    shape = (h, w, c) if data_format == "channels_last" else (c, h, w)
    common = {
        "n": len(samples),
        "samples": len(samples),
        "batch_size": config.batch_size,
        "shuffle": config.shuffle,
        "seed": config.seed,
        "image_shape": shape,
        "data_format": data_format,
        "dtype": outputs.dtype,
        "config": config,
        **attributes,
    }
    framework = framework_of(None)
    if framework != "tensorflow":
        del common["batch_size"]  # the data adapter's own property, the same number
    if len(samples) == 0:
        empty = (np.zeros((0, *shape), outputs.dtype),)
        if outputs.targets != "none":
            empty += (np.zeros((0,), np.float32),)
        return keras_iterator(
            _empty(framework, empty, config.batch_size),
            None,
            empty_batch=empty,
            batches_per_epoch=0,
            epoch_clock=None,
            **common,
        )
    ds = make_dataset(config, samples=samples, sample_weight=weights, framework=framework)
    finish = outputs.stage() if outputs.needed else None
    access = EpochBatches(config, samples, weights, finish, framework)
    if framework != "tensorflow":  # no stage (daliaug.keras.backends), epochs counted by passes
        return keras_iterator(ds, access, batches_per_epoch=len(ds), epoch_clock=None, **common)
    import tensorflow as tf

    batches, clock = ds.batches_per_epoch, ds.epoch_clock
    if finish is not None:
        ds = ds.map(finish, num_parallel_calls=tf.data.AUTOTUNE)
    return keras_iterator(ds, access, batches_per_epoch=batches, epoch_clock=clock, **common)


def _empty(framework: str, empty: tuple[np.ndarray, ...], batch_size: int) -> Any:
    """An empty flow's dataset for ``framework``: no batches, ``empty``'s types."""
    if framework == "tensorflow":
        import tensorflow as tf

        return tf.data.Dataset.from_tensors(empty).take(0)
    from daliaug.outputs.fit import FitBatches

    return FitBatches(lambda epoch: (), 0, batch_size)
