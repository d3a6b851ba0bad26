"""``flow*``: a generator's config, the samples, ``make_dataset``, and Keras' iterator
attributes on the dataset it returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from daliaug.keras.iterator import keras_iterator
from daliaug.keras.samples import Listing
from daliaug.outputs.tfdata.dataset import make_dataset
from daliaug.sources.arrays import array_samples

if TYPE_CHECKING:
    from daliaug.config import Config
    from daliaug.keras.generator import ImageDataGenerator
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


def label_mode(class_mode: str | None) -> str:
    """daliaug's ``label_mode`` for Keras' ``class_mode``: binary and sparse give the class
    index as float32 ``(batch,)``, ``input`` the images, ``None`` nothing."""
    if class_mode is None:
        return "none"
    return {"binary": "float", "sparse": "float"}.get(class_mode, class_mode)


def _dataset(
    generator: ImageDataGenerator,
    config: Config,
    samples: Samples,
    weights: np.ndarray | None,
    attributes: dict[str, Any],
) -> Any:
    """``make_dataset`` on ``samples``, the standardization stage after it if needed, as a
    Keras iterator with ``attributes``."""
    standardization = generator.standardization()
    standardization.warn_unfit(stacklevel=4)  # the user's flow* call
    ds = make_dataset(config, samples=samples, sample_weight=weights)
    batches = ds.batches_per_epoch
    if standardization.off_graph:
        stage = standardization.stage(generator.dtype, config.label_mode)
        ds = ds.map(stage, num_parallel_calls=tf.data.AUTOTUNE)
    h, w = config.image_size
    c = config.channels
    shape = (h, w, c) if generator.data_format == "channels_last" else (c, h, w)
    return keras_iterator(
        ds,
        batches_per_epoch=batches,
        n=len(samples),
        samples=len(samples),
        batch_size=config.batch_size,
        shuffle=config.shuffle,
        seed=config.seed,
        image_shape=shape,
        image_data_generator=generator,
        data_format=generator.data_format,
        dtype=generator.dtype,
        config=config,
        **attributes,
    )


def flow(
    generator: ImageDataGenerator,
    images: np.ndarray,
    y: np.ndarray | None,
    weights: np.ndarray | None,
    *,
    batch_size: int,
    shuffle: bool,
    seed: int | None,
) -> Any:
    """The dataset of ``flow``: uint8 NHWC ``images``, targets ``y`` passed through."""
    if weights is not None and y is None:
        weights = None  # Keras yields the images alone when y is None
    samples = array_samples(images, y, raw=True)
    config = generator.config(
        images.shape[1:3],
        images.shape[3],
        label_mode="none" if y is None else "raw",
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
    )
    return _dataset(
        generator,
        config,
        samples,
        weights,
        {"x": images, "y": y, "sample_weight": weights},
    )


def flow_files(
    generator: ImageDataGenerator,
    listing: Listing,
    target_size: tuple[int, int],
    color_mode: str,
    class_mode: str | None,
    *,
    batch_size: int,
    shuffle: bool,
    seed: int | None,
    attributes: dict[str, Any],
) -> Any:
    """The dataset of a file flow: ``listing``'s files resized to ``target_size``."""
    config = generator.config(
        target_size,
        COLOR_MODES[color_mode],
        resize=True,
        label_mode=label_mode(class_mode),
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
    )
    names = listing.class_names
    classes = listing.labels if listing.labels is not None else listing.targets
    return _dataset(
        generator,
        config,
        listing.samples(),
        listing.weights,
        {
            "class_indices": {name: i for i, name in enumerate(names)},
            "classes": classes,
            "labels": classes,
            "num_classes": len(names),
            "filenames": listing.filenames,
            "filepaths": listing.filepaths,
            "class_mode": class_mode,
            "color_mode": color_mode,
            "target_size": target_size,
            "sample_weight": listing.weights,
            **attributes,
        },
    )
