"""Workload (c)'s baselines: the same pipeline in Keras 3 layers inside ``tf.data`` and in a
hand-written DALI pipeline around DALI's own ``auto_aug.rand_augment`` (the anchor for
daliaug's DALI-CPU path).

Keras (:func:`keras_layers`): each file decoded and resized whole to 224 in ``tf.data`` (Keras
has no random resized crop: ``RandomZoom`` and ``RandomTranslation`` stand in, as in
``tfdata-layers``), batched, then ``RandomFlip``, ``RandAugment(num_ops=2, factor=9/30)``
(Keras' factor bounds each op's random range: magnitude 9 of torchvision's 30 bins), ``MixUp``
on one-hot labels and ``Normalization`` in one parallel ``map``.

DALI (:func:`dali_pipeline`): ``readers.file``, ``decoders.image_random_crop`` (the crop's
window decoded), ``resize`` to 224, ``flip`` by a coin, ``auto_aug.rand_augment(n=2, m=9)``
(uint8, conditionals: each op runs only on the samples that chose it; fill 0 as torchvision),
MixUp by ``batch_permutation`` + ``permute_batch`` and a Beta(0.2, 0.2) blend of images and
one-hot labels, ``crop_mirror_normalize``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.tools import Epoch
from bench.tools.daliaug_tools import _config, _gpu_check
from bench.tools.tfdata import _decoded_files, _finish
from bench.workloads import Data, Workload

NUM_OPS, MAGNITUDE, BINS, ALPHA = 2, 9, 31, 0.2


def keras_layers(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    import keras
    import tensorflow as tf

    eq = workload.equivalent
    calls = threads or tf.data.AUTOTUNE
    classes = len(data.files()[2])
    zoom = (eq.zoom[0] - 1.0, 0.0)
    shift = (1.0 - eq.zoom[0]) / 2
    layers = keras.layers
    per_batch = keras.Sequential(
        [
            layers.RandomZoom(zoom, zoom, fill_mode="nearest"),
            layers.RandomTranslation(shift, shift, fill_mode="nearest"),
            layers.RandomFlip("horizontal"),
            layers.RandAugment(
                value_range=(0, 255), num_ops=NUM_OPS, factor=MAGNITUDE / (BINS - 1)
            ),
        ]
    )
    mixup = layers.MixUp(alpha=ALPHA)
    normalize = layers.Normalization(mean=list(eq.mean), variance=[s * s for s in eq.std])

    def augment(x: Any, y: Any) -> tuple[Any, Any]:
        x = per_batch(x, training=True)
        mixed = mixup({"images": x, "labels": tf.one_hot(y, classes)}, training=True)
        return normalize(mixed["images"]), mixed["labels"]

    ds = _decoded_files(data, eq.size, calls).batch(eq.batch_size)
    return _finish(ds.map(augment, num_parallel_calls=calls), threads)


def dali_pipeline(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    _gpu_check(device)
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import rand_augment

    config = _config(workload, data, threads)
    eq = workload.equivalent
    paths, labels, names = data.files()
    batch = config.batch_size
    gpu = device == "gpu"

    @pipeline_def(
        batch_size=batch,
        num_threads=config.dali_threads,
        device_id=0 if gpu else None,
        prefetch_queue_depth=config.prefetch,
        seed=0,
        enable_conditionals=True,
    )
    def graph() -> Any:
        encoded, label = fn.readers.file(
            files=paths, labels=[int(v) for v in labels], random_shuffle=True, name="files"
        )
        images = fn.decoders.image_random_crop(
            encoded,
            device="mixed" if gpu else "cpu",
            output_type=types.RGB,
            random_area=list(eq.crop_scale),
            random_aspect_ratio=list(eq.crop_ratio),
        )
        images = fn.resize(images, size=list(eq.size))
        images = fn.flip(images, horizontal=fn.random.coin_flip())
        images = rand_augment.rand_augment(
            images, n=NUM_OPS, m=MAGNITUDE, num_magnitude_bins=BINS, fill_value=0
        )
        lam = fn.random.beta(alpha=ALPHA, beta=ALPHA)
        order = fn.batch_permutation()
        hot = fn.one_hot(label, num_classes=len(names))
        if gpu:
            hot = hot.gpu()
        images = fn.cast(images, dtype=types.FLOAT)
        images = images * lam + fn.permute_batch(images, indices=order) * (1.0 - lam)
        hot = hot * lam + fn.permute_batch(hot, indices=order) * (1.0 - lam)
        images = fn.crop_mirror_normalize(
            images, mean=list(eq.mean), std=list(eq.std), dtype=types.FLOAT, output_layout="HWC"
        )
        return images, hot

    pipe = graph()
    pipe.build()
    steps = len(paths) // batch

    def epoch() -> Iterator[int]:
        for _ in range(steps):
            images, _ = pipe.run()
            yield len(images)

    return epoch
