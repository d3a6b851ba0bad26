"""The TensorFlow graph of a run's spec, the DALI graph's twin: from the feed protocol's batches
(:mod:`daliaug.outputs.tfdata.streams`) to finished ``(images, targets)`` batches, as
``tf.data`` maps with no Python in them.

Per-sample stages (read, decode, resample: each file has its own size) run in parallel maps;
what follows the resampling (recolour, clip, normalize, dtype, layout) runs once per batch as
one XLA-compiled function, which fuses it into one pass over the pixels (none where nothing
follows). In-memory arrays share one size, so their whole batch, resampling included, is one
XLA function.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import tensorflow as tf

from daliaug.batch_layout import BatchLayout
from daliaug.config import target_column
from daliaug.engine_spec import EngineSpec
from daliaug.engines.feed import WarpLayout
from daliaug.engines.tf.held import held_constant
from daliaug.engines.tf.image import (
    decode,
    finish,
    finishes_nothing,
    mask_target,
    resample,
    sample,
    stage_column,
)
from daliaug.engines.tf.math import TF_ARRAYS
from daliaug.engines.tf.pixels import KERNELS
from daliaug.engines.tf.traced import plain
from daliaug.kernels.targets import label_target
from daliaug.sources.base import Samples, fs_names
from daliaug.transforms.base import fill_value

RESIZES = False
"""TensorFlow takes warp matrices even for axis-aligned plans: :func:`resample` finds its
resize fast path from the matrix itself."""

Finisher = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


def finisher(spec: EngineSpec, layout: WarpLayout) -> Finisher:
    """``finish`` of a batch of resampled images and their ``warp`` vectors, XLA-compiled
    where it computes something (compiling nothing would cost a start 20-30 ms)."""

    def run(images: tf.Tensor, flat: tf.Tensor) -> tf.Tensor:
        return finish(images, layout.unpack(flat, tf.reshape, batched=True), spec)

    if finishes_nothing(spec, layout.names):
        return run
    return tf.function(run, jit_compile=True, reduce_retracing=True, autograph=False)


def _named(
    batch_layout: BatchLayout,
    spec: EngineSpec,
    num_classes: int,
    layout: WarpLayout,
    images: tf.Tensor,
    flat: tf.Tensor,
    target: tf.Tensor | None,
    rest: tuple[tf.Tensor, ...],
) -> tuple[tf.Tensor, ...]:
    """The flat batch of finished ``images`` as ``batch_layout`` says: ``target`` (the
    samples' labels or masks) made the targets, or the moved detection inputs that ``rest``
    starts with; then ``rest``'s weight."""
    named = {"images": images}
    kind = batch_layout.target
    if kind == "boxes":  # moved on the host (daliaug.detection): passed through
        count = len(batch_layout.boxes)
        named |= dict(zip(batch_layout.boxes, rest[:count], strict=True))
        rest = rest[count:]
    elif kind == "masks":
        named["targets"] = cut_masks(target, flat, spec, layout)
    elif kind == "images":
        named["targets"] = images
    elif kind == "labels":
        labels = label_target(target, spec.label_mode, num_classes, TF_ARRAYS)
        named["targets"] = soft_labels(labels, flat, spec, layout)
    if batch_layout.weights:
        (named["weights"],) = rest
    return batch_layout.flat(named)


def soft_labels(
    labels: tf.Tensor, flat: tf.Tensor, spec: EngineSpec, layout: WarpLayout
) -> tf.Tensor:
    """A batch of labels through the plan's batch stages (the images went through them in
    :func:`finish`); the config allows batch stages with labels only."""
    if not spec.plan.batch_stages:
        return labels
    column = stage_column(layout.unpack(flat, tf.reshape, batched=True))
    return spec.plan.batch_targets(labels, column, KERNELS, masks=False)


def cut_masks(masks: tf.Tensor, flat: tf.Tensor, spec: EngineSpec, layout: WarpLayout) -> tf.Tensor:
    """A batch of masks (indices ``(N, H, W)`` or one-hot in the output layout) through the
    plan's batch stages, cuts only (the config refuses blends with masks)."""
    if not spec.plan.batch_stages:
        return masks
    column = stage_column(layout.unpack(flat, tf.reshape, batched=True))
    channels_first = masks.shape.rank == 4 and spec.output.layout == "NCHW"
    if channels_first:
        masks = tf.transpose(masks, [0, 2, 3, 1])
    masks = spec.plan.batch_targets(masks, column, KERNELS, masks=True)
    return tf.transpose(masks, [0, 3, 1, 2]) if channels_first else masks


def _per_sample(
    spec: EngineSpec,
    layout: WarpLayout,
    batch_layout: BatchLayout,
    per_sample: tf.data.Dataset,
    num_classes: int,
) -> tf.data.Dataset:
    """Batches of ``(image, warp, target, *rest)`` samples finished: the images by
    :func:`finisher`, the rest by :func:`_named`."""
    finished = finisher(spec, layout)
    named = partial(_named, batch_layout, spec, num_classes, layout)

    def batch(images: tf.Tensor, flat: tf.Tensor, target: tf.Tensor, *rest: tf.Tensor) -> tuple:
        return named(finished(images, flat), flat, target, rest)

    batches = per_sample.batch(spec.batch_size, drop_remainder=spec.drop_remainder)
    return batches.map(plain(batch), num_parallel_calls=tf.data.AUTOTUNE)


def file_batches(
    spec: EngineSpec,
    samples: Samples,
    layout: WarpLayout,
    batch_layout: BatchLayout,
    stream: tf.data.Dataset,
) -> tf.data.Dataset:
    """Finished batches for file sources from a ``stream`` of ``(index, warp, *rest)``
    samples (``rest``: the ``encoded`` image (and ``mask_encoded`` mask) of a WebDataset
    shard's sample, read by the feed, then the moved boxes and the weight, passed through):
    each file is read, decoded and resampled on its own (its size is its own), in parallel."""
    paths = {
        name: held_constant(samples, f"files:{name}", lambda p=p: fs_names(p))
        for name, p in samples.files.items()
    }
    targets = _targets(spec, samples)

    def one(index: tf.Tensor, flat: tf.Tensor, *rest: tf.Tensor) -> tuple:
        inputs = layout.unpack(flat, tf.reshape)
        if "encoded" in samples.columns:
            encoded, *rest = rest
            encoded = as_bytes(encoded)
        else:
            encoded = tf.io.read_file(tf.gather(paths["path"], index))
        image = _resampled(encoded, inputs, spec)
        mask = None
        if "mask_encoded" in samples.columns:
            encoded_mask, *rest = rest
            mask = as_bytes(encoded_mask)
        elif "mask_path" in paths:
            mask = tf.io.read_file(tf.gather(paths["mask_path"], index))
        if mask is not None:
            target = mask_target(mask, inputs["mask_matrix"], spec, inputs.get("stages"))
        else:
            target = tf.zeros([], tf.int32) if targets is None else tf.gather(targets, index)
        return image, flat, target, *rest

    per_sample = stream.map(plain(one), num_parallel_calls=tf.data.AUTOTUNE)
    return _per_sample(spec, layout, batch_layout, per_sample, samples.num_classes)


def _targets(spec: EngineSpec, samples: Samples) -> tf.Tensor | None:
    """The samples' label column the spec's ``label_mode`` reads, if they have it."""
    column = target_column(spec.label_mode)
    if column not in samples.columns:
        return None
    return held_constant(samples, column, lambda: samples.columns[column])


def as_bytes(row: tf.Tensor) -> tf.Tensor:
    """A ``uint8`` vector as one string of its bytes (``serialize_tensor`` ends with them)."""
    return tf.strings.substr(tf.io.serialize_tensor(row), -tf.size(row), tf.size(row))


def _resampled(encoded: tf.Tensor, inputs: dict[str, tf.Tensor], spec: EngineSpec) -> tf.Tensor:
    """One encoded image decoded and resampled (float32)."""
    return resample(decode(encoded, inputs, spec.channels), inputs["matrix"], spec)


def array_batches(
    spec: EngineSpec,
    samples: Samples,
    layout: WarpLayout,
    batch_layout: BatchLayout,
    stream: tf.data.Dataset,
) -> tf.data.Dataset:
    """Finished batches for in-memory arrays from ``(index, warp, *rest)`` batches: a whole
    batch is gathered, then resampled (not where no transform moves pixels and the arrays have
    the output's size) and finished by one XLA function (the arrays share one size)."""
    images = held_constant(samples, "image", lambda: samples.columns["image"])
    targets = _targets(spec, samples)
    nearest = spec.interpolation == "nearest"
    fill, cut = fill_value(spec.fill), spec.fill_edge == "cut"
    unmoved = not spec.plan.warps and images.shape[1:3] == tuple(spec.image_size)
    named = partial(_named, batch_layout, spec, samples.num_classes, layout)

    def resampled_and_finished(pixels: tf.Tensor, flat: tf.Tensor) -> tf.Tensor:
        inputs = layout.unpack(flat, tf.reshape, batched=True)
        if unmoved:  # the identity warp: its samples are the pixels themselves
            warped = tf.cast(pixels, tf.float32)
        else:
            warped = sample(pixels, inputs["matrix"], spec.image_size, fill, nearest, cut)
        return finish(warped, inputs, spec)

    compiled = tf.function(
        resampled_and_finished, jit_compile=True, reduce_retracing=True, autograph=False
    )

    def batch(index: tf.Tensor, flat: tf.Tensor, *rest: tf.Tensor) -> tuple:
        label = None if targets is None else tf.gather(targets, index)
        return named(compiled(tf.gather(images, index), flat), flat, label, rest)

    return stream.map(plain(batch), num_parallel_calls=tf.data.AUTOTUNE)


def record_batches(
    spec: EngineSpec,
    num_classes: int,
    layout: WarpLayout,
    batch_layout: BatchLayout,
    stream: tf.data.Dataset,
) -> tf.data.Dataset:
    """Finished batches for TFRecords from ``(encoded, labels, weights, warp)`` batches,
    decoded one by one like files; the weights kept if ``batch_layout`` has them."""

    def one(encoded: tf.Tensor, label: tf.Tensor, weight: tf.Tensor, flat: tf.Tensor) -> tuple:
        image = _resampled(encoded, layout.unpack(flat, tf.reshape), spec)
        return image, flat, label, *((weight,) if batch_layout.weights else ())

    per_sample = stream.unbatch().map(plain(one), num_parallel_calls=tf.data.AUTOTUNE)
    return _per_sample(spec, layout, batch_layout, per_sample, num_classes)
