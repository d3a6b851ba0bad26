"""Workload (b) written as Keras preprocessing layers, run two ways: the Keras way (the layers
mapped over batches in ``tf.data``) and compiled by ``daliaug.from_keras`` into one pipeline.

The stack (:func:`stack`): ``RandomZoom`` in by up to ``1 - sqrt(min area)`` per axis and
``RandomTranslation`` (the random resized crop's stand-in, as in ``tfdata-layers``),
``RandomFlip("horizontal")``, ``RandomBrightness``, ``RandomContrast`` and
``RandomSaturation`` with the workload's ranges (Keras' saturation ``factor`` ``f`` scales by
``f / (1 - f)``: ``0.6..1.4`` is ``f`` in ``0.375..0.583``), ``Normalization`` with its mean and
variance; ``fill_mode="nearest"`` (DALI's warp has Keras' default ``reflect`` not). The Keras way
reads, decodes and resizes each file to 224x224 in ``tf.data`` first (as
``image_dataset_from_directory`` does); ``from_keras`` gets ``image_size=224``, the same resize
fused into its one warp.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from bench.tools import Epoch, Unavailable
from bench.tools.tfdata import _decoded_files, _finish
from bench.workloads import Data, Workload


def stack(workload: Workload) -> list[Any]:
    """Workload (b) as Keras layers."""
    import keras

    eq = workload.equivalent
    zoom = (eq.zoom[0] - 1.0, 0.0)
    shift = (1.0 - eq.zoom[0]) / 2
    layers = keras.layers
    return [
        layers.RandomZoom(zoom, zoom, fill_mode="nearest"),
        layers.RandomTranslation(shift, shift, fill_mode="nearest"),
        layers.RandomFlip("horizontal"),
        layers.RandomBrightness(eq.brightness),
        layers.RandomContrast(eq.contrast),
        layers.RandomSaturation(
            tuple(f / (1.0 + f) for f in (1.0 - eq.saturation, 1.0 + eq.saturation)),
            value_range=(0, 255),
        ),
        layers.Normalization(mean=list(eq.mean), variance=[s * s for s in eq.std]),
    ]


def aug_mix_stack(workload: Workload) -> list[Any]:
    """The AugMix row: ``RandomFlip("horizontal")``, Keras' ``AugMix`` with its defaults
    (3 chains of up to 3 of its 11 layers, ``factor`` 0.3, ``reflect`` fill) and
    ``Normalization`` with the workload's mean and variance."""
    import keras

    eq = workload.equivalent
    layers = keras.layers
    return [
        layers.RandomFlip("horizontal"),
        layers.AugMix(value_range=(0, 255)),
        layers.Normalization(mean=list(eq.mean), variance=[s * s for s in eq.std]),
    ]


STACKS = {"b": stack, "aug_mix": aug_mix_stack}
"""The stacks a run times, by name (``--stack``)."""


TRACED_DRAWS = 8
"""Keras' ``AugMix`` picks its chains' layers with Python's ``random`` when it is traced, so in
``tf.data`` one draw serves every batch of a run and its cost is that draw's (109 to 283
images/s over eight seeds here). The Keras way of the AugMix stack therefore traces the stack
this many times (a model each), under Python seeds 0, 1, ..., and sends the batches through
them in turn: it times Keras' layer over its draws, as a layer drawing anew for each batch
would run."""


def keras_way(
    workload: Workload, data: Data, threads: int | None, device: str, name: str = "b"
) -> Epoch:
    """The layers in one ``map`` over decoded, resized, batched files (``training=True``); the
    AugMix stack's batches take its :data:`TRACED_DRAWS` traces in turn."""
    import keras
    import tensorflow as tf

    eq = workload.equivalent
    calls = threads or tf.data.AUTOTUNE
    draws = TRACED_DRAWS if name == "aug_mix" else 1
    augments = [keras.Sequential(STACKS[name](workload)) for _ in range(draws)]

    def traced(seed: int, x: tf.Tensor) -> Callable[[], tf.Tensor]:
        def branch() -> tf.Tensor:
            random.seed(seed)  # runs while the branch is traced: Keras' draw for this trace
            return augments[seed](x, training=True)

        return branch

    def augmented(i: tf.Tensor, batch: tuple[tf.Tensor, tf.Tensor]) -> tuple[tf.Tensor, ...]:
        x, y = batch
        if draws == 1:
            return augments[0](x, training=True), y
        return tf.switch_case(tf.cast(i % draws, tf.int32), [traced(k, x) for k in range(draws)]), y

    ds = _decoded_files(data, eq.size, calls).batch(eq.batch_size).enumerate()
    return _finish(ds.map(augmented, num_parallel_calls=calls), threads)


def compiled(
    workload: Workload, data: Data, threads: int | None, device: str, name: str = "b"
) -> Epoch:
    """``make_dataset(from_keras(layers, ...))`` with ``backend`` auto, or the engine named by
    ``device`` (``cpu``: DALI on the CPU, ``tf``: the TensorFlow engine)."""
    import daliaug
    from daliaug.outputs.dataset import make_dataset

    eq = workload.equivalent
    extra = {"num_threads": threads} if threads is not None else {}
    if device == "gpu":
        raise Unavailable("the Keras-layers comparison runs on the CPU")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = daliaug.from_keras(
            STACKS[name](workload),
            source={"type": "directory", "path": str(data.directory)},
            image_size=eq.size,
            batch_size=eq.batch_size,
            seed=0,
            backend={"default": "auto"}.get(device, device),
            **extra,
        )
    dataset = make_dataset(config, samples=data.samples())

    def epoch() -> Iterator[int]:
        for images, _ in dataset:
            yield int(images.shape[0])

    return epoch


def keras_way_aug_mix(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """:func:`keras_way` of :func:`aug_mix_stack`."""
    return keras_way(workload, data, threads, device, "aug_mix")


def compiled_aug_mix(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """:func:`compiled` of :func:`aug_mix_stack`."""
    return compiled(workload, data, threads, device, "aug_mix")
