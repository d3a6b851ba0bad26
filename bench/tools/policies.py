"""Workload (c)'s baselines: the same pipeline in Keras 3 layers inside ``tf.data`` and in a
hand-written DALI pipeline around DALI's own ``auto_aug.rand_augment`` (the anchor for
daliaug's DALI-CPU path).

Keras (:func:`keras_layers`): each file decoded and resized whole to 224 in ``tf.data`` (Keras
has no random resized crop: ``RandomZoom`` and ``RandomTranslation`` stand in, as in
``tfdata-layers``), batched, then ``RandomFlip``, ``RandAugment(num_ops=2, factor=9/30)``
(Keras' factor bounds each op's random range: magnitude 9 of torchvision's 30 bins), ``MixUp``
and ``CutMix(factor=(1, 1))`` (its Beta's parameter drawn from ``U(1, 1)``: Beta(1, 1), as
daliaug's ``cutmix`` with alpha 1) on one-hot labels and ``Normalization`` in one parallel
``map``.

DALI (:func:`dali_pipeline`): ``readers.file``, ``decoders.image_random_crop`` (the crop's
window decoded), ``resize`` to 224, ``flip`` by a coin, ``auto_aug.rand_augment(n=2, m=9)``
(uint8, conditionals: each op runs only on the samples that chose it; fill 0 as torchvision),
MixUp by ``batch_permutation`` + ``permute_batch`` and a Beta(0.2, 0.2) blend of images and
one-hot labels, then CutMix by another permutation: a box of side ``sqrt(1 - lam)`` of the
image's (``lam ~ U(0, 1)``, Beta(1, 1)) around a uniform centre, cut by the border, taken from
the partner through a 0/1 mask, the labels weighed by the box's area; ``crop_mirror_normalize``.
"""

from __future__ import annotations

from typing import Any

from bench.tools import Epoch
from bench.tools.daliaug_tools import _config, _gpu_check
from bench.tools.tfdata import _decoded_files, _finish
from bench.workloads import Data, Workload

NUM_OPS, MAGNITUDE, BINS, ALPHA, CUTMIX_ALPHA = 2, 9, 31, 0.2, 1.0


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
    cutmix = layers.CutMix(factor=(CUTMIX_ALPHA, CUTMIX_ALPHA))
    normalize = layers.Normalization(mean=list(eq.mean), variance=[s * s for s in eq.std])

    def augment(x: Any, y: Any) -> tuple[Any, Any]:
        x = per_batch(x, training=True)
        mixed = mixup({"images": x, "labels": tf.one_hot(y, classes)}, training=True)
        mixed = cutmix(mixed, training=True)
        return normalize(mixed["images"]), mixed["labels"]

    ds = _decoded_files(data, eq.size, calls).batch(eq.batch_size)
    return _finish(ds.map(augment, num_parallel_calls=calls), threads)


def cutmix_box(size: tuple[int, int]) -> tuple[Any, Any]:
    """Per sample, CutMix's box as a ``(H, W, 1)`` 0/1 mask and its share of the image, in
    DALI operators (defined inside a pipeline)."""
    import numpy as np
    from nvidia.dali import fn, types
    from nvidia.dali import math as dmath

    height, width = size
    cut = dmath.sqrt(1.0 - fn.random.uniform(range=[0.0, 1.0]))  # lam ~ Beta(1, 1)
    inside, area = None, 1.0 / (height * width)
    for axis, side in enumerate(size):
        centre = fn.random.uniform(range=[0.0, float(side)])
        low = dmath.clamp(centre - cut * (side / 2), 0.0, float(side))
        high = dmath.clamp(centre + cut * (side / 2), 0.0, float(side))
        centres = np.arange(side, dtype=np.float32) + 0.5  # of the pixels along the axis
        line = centres[:, None, None] if axis == 0 else centres[None, :, None]
        grid = np.ascontiguousarray(np.broadcast_to(line, (height, width, 1)))
        coord = types.Constant(grid, device="cpu")
        here = (coord >= low) & (coord < high)
        inside = here if inside is None else inside & here
        area = area * (dmath.ceil(high - 0.5) - dmath.ceil(low - 0.5))  # centres inside
    return fn.cast(inside, dtype=types.FLOAT), area


def dali_pipeline(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    _gpu_check(device)
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import rand_augment

    from bench.tools.gpu_tools import pipeline_epochs, random_crop_front

    config = _config(workload, data, threads)
    eq = workload.equivalent
    paths, labels, names = data.files()
    batch = config.batch_size
    gpu = device == "gpu"

    @pipeline_def(
        batch_size=batch,
        num_threads=config.dali_threads(device),
        device_id=0 if gpu else None,
        prefetch_queue_depth=config.prefetch_depth(device),
        seed=0,
        enable_conditionals=True,
    )
    def graph() -> Any:
        images, label = random_crop_front(paths, labels, eq, gpu, config.hw_decoder_load)
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
        box, area = cutmix_box(eq.size)
        if gpu:
            box = box.gpu()
        order = fn.batch_permutation()
        images = images * (1.0 - box) + fn.permute_batch(images, indices=order) * box
        hot = hot * (1.0 - area) + fn.permute_batch(hot, indices=order) * area
        images = fn.crop_mirror_normalize(
            images, mean=list(eq.mean), std=list(eq.std), dtype=types.FLOAT, output_layout="HWC"
        )
        return images, hot

    pipe = graph()
    pipe.build()
    return pipeline_epochs(pipe, len(paths) // batch)
