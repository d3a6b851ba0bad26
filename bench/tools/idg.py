"""Keras' legacy ``ImageDataGenerator``, in one process and through a worker pool.

(a) ``flow(x, y)`` with ``rotation_range``, ``width_shift_range``, ``height_shift_range``,
``horizontal_flip``, ``fill_mode`` and ``rescale`` taken from the workload.
(b) ``ImageDataGenerator`` has no random resized crop. The closest equivalent used here:
``flow_from_directory(target_size=224x224, interpolation="bilinear")`` loads each file and
resizes it whole, then ``zoom_range=[sqrt(min area), 1]`` (each axis drawn separately, which
also varies the aspect ratio) zooms in and ``width/height_shift_range=(1 - sqrt(min area)) / 2``
moves the window; ``horizontal_flip``; ``brightness_range``; contrast and saturation jitter in a
NumPy ``preprocessing_function`` (IDG has neither); ImageNet mean/std through
``featurewise_center`` / ``featurewise_std_normalization`` with the statistics set directly.

The pool is the one Keras 3 offers for this (what ``fit_generator(workers=N,
use_multiprocessing=True)`` became): a ``keras.utils.PyDataset`` with ``workers=N,
use_multiprocessing=True``, iterated through Keras' own ``PyDatasetAdapter`` as ``model.fit``
does; each batch is built in a forked worker process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.tools import Epoch
from bench.workloads import Data, Equivalent, Workload

LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


class ColourJitter:
    """Contrast about the image mean and saturation towards its luma, per image (NumPy)."""

    def __init__(self, contrast: float, saturation: float) -> None:
        self.contrast, self.saturation = contrast, saturation

    def __call__(self, x: np.ndarray) -> np.ndarray:
        c = np.random.uniform(1 - self.contrast, 1 + self.contrast)
        s = np.random.uniform(1 - self.saturation, 1 + self.saturation)
        mean = x.mean()
        x = (x - mean) * c + mean
        grey = (x @ LUMA)[..., None]
        return np.clip(grey + (x - grey) * s, 0, 255)


def keras_class() -> type:
    """Keras' own ``ImageDataGenerator``."""
    from keras.src.legacy.preprocessing.image import ImageDataGenerator

    return ImageDataGenerator


def _generator(eq: Equivalent, generator_class: type) -> Any:
    """The workload's generator: ``generator_class`` (Keras' class, or daliaug's drop-in) built
    with the same arguments either way."""
    zoom_min = eq.zoom[0]
    window_shift = (1.0 - zoom_min) / 2
    uniform_std = len(set(eq.std)) == 1 and not any(eq.mean)
    jitter = eq.contrast or eq.saturation
    idg = generator_class(
        rotation_range=eq.rotation,
        width_shift_range=eq.shift[0] or window_shift,
        height_shift_range=eq.shift[1] or window_shift,
        zoom_range=[zoom_min, 1.0] if zoom_min < 1 else 0.0,
        horizontal_flip=eq.flip,
        fill_mode=eq.fill,
        brightness_range=[1 - eq.brightness, 1 + eq.brightness] if eq.brightness else None,
        preprocessing_function=ColourJitter(eq.contrast, eq.saturation) if jitter else None,
        rescale=1.0 / eq.std[0] if uniform_std else None,
        featurewise_center=not uniform_std,
        featurewise_std_normalization=not uniform_std,
    )
    if not uniform_std:
        idg.mean = np.array(eq.mean, dtype=np.float32).reshape(1, 1, 3)
        idg.std = np.array(eq.std, dtype=np.float32).reshape(1, 1, 3)
    return idg


def flow_of(workload: Workload, data: Data, generator_class: type) -> Any:
    """The flow over one pass of the data: Keras' iterator wraps around by itself; daliaug's
    dataset gives one epoch per iteration."""
    eq = workload.equivalent
    idg = _generator(eq, generator_class)
    if data.arrays is not None:
        x, y = data.arrays_xy()
        return idg.flow(x, y, batch_size=eq.batch_size, shuffle=True, seed=0)
    return idg.flow_from_directory(
        str(data.directory),
        target_size=eq.size,
        interpolation="bilinear",
        class_mode="sparse",
        batch_size=eq.batch_size,
        shuffle=True,
        seed=0,
    )


def single(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``ImageDataGenerator`` in the calling process, one batch after another."""
    iterator = flow_of(workload, data, keras_class())

    def epoch() -> Iterator[int]:
        while True:
            images, _ = next(iterator)
            yield len(images)

    return epoch


def pool(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``ImageDataGenerator`` batches built by ``threads`` worker processes."""
    import keras
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    iterator = flow_of(workload, data, keras_class())
    repeat = data.repeat if data.directory is not None else 1  # arrays come repeated already

    class Batches(keras.utils.PyDataset):
        def __len__(self) -> int:
            return len(iterator) * repeat

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            return iterator[index % len(iterator)]

    batches = Batches(workers=threads, use_multiprocessing=True)

    def epoch() -> Iterator[int]:
        adapter = PyDatasetAdapter(batches, shuffle=False)
        try:
            for images, _ in adapter.get_numpy_iterator():
                yield len(images)
        finally:
            adapter.on_epoch_end()  # what fit does: stop the pool once its queued batches finish

    return epoch
