"""tf.data baselines: Keras 3 preprocessing layers, and a hand-tuned ``tf.image`` pipeline.

Keras layers (a): ``from_tensor_slices((x, y)).shuffle(10_000).batch(128)``, then
``RandomRotation`` (``fill_mode`` from the workload), ``RandomTranslation``,
``RandomFlip("horizontal")`` and ``Rescaling`` in one ``map`` over batches, ``prefetch``.
Keras layers (b): file names shuffled, ``map``: read, ``decode_jpeg``, ``resize`` to 224x224
(bilinear), ``batch``, then ``map`` of ``RandomZoom`` (in by up to ``1 - sqrt(min area)`` per
axis: the random resized crop's stand-in, as for ``ImageDataGenerator``), ``RandomTranslation``,
``RandomFlip``, ``RandomBrightness``, ``RandomContrast``, ``RandomSaturation`` and
``Normalization``; ``prefetch``. The layers' colour factors follow their own conventions
(brightness is additive), with the workload's ranges.
Hand-tuned (b): ``sample_distorted_bounding_box`` (the workload's area and aspect ranges) and
``decode_and_crop_jpeg`` (only the window is decoded), ``resize`` (bilinear),
``random_flip_left_right`` per image; then per batch, vectorized: brightness (multiply),
contrast (about each image's mean), saturation (towards ``rgb_to_grayscale``), clip, normalize.

``threads`` sets ``num_parallel_calls`` and the dataset's private thread pool; ``None`` is
``AUTOTUNE`` with TensorFlow's default pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.tools import Epoch
from bench.workloads import Data, Workload


def _finish(ds: Any, threads: int | None) -> Epoch:
    import tensorflow as tf

    ds = ds.prefetch(tf.data.AUTOTUNE)
    if threads is not None:
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        ds = ds.with_options(options)

    def epoch() -> Iterator[int]:
        for images, _ in ds:
            yield int(images.shape[0])

    return epoch


def _decoded_files(data: Data, size: tuple[int, int], calls: int) -> Any:
    """Shuffled ``(image, label)`` pairs of the data's files, decoded and resized whole."""
    import tensorflow as tf

    paths, labels, _ = data.files()

    def load(path: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        return tf.image.resize(image, size), label

    ds = tf.data.Dataset.from_tensor_slices((paths, labels)).shuffle(len(paths), seed=0)
    return ds.map(load, num_parallel_calls=calls)


def keras_layers(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    import keras
    import tensorflow as tf

    eq = workload.equivalent
    calls = threads or tf.data.AUTOTUNE
    fill = eq.fill
    layers: list[Any] = []
    if eq.zoom[0] < 1:
        zoom = (eq.zoom[0] - 1.0, 0.0)
        layers.append(keras.layers.RandomZoom(zoom, zoom, fill_mode=fill))
    shift = eq.shift if any(eq.shift) else ((1.0 - eq.zoom[0]) / 2,) * 2
    if eq.rotation:
        layers.append(keras.layers.RandomRotation(eq.rotation / 360, fill_mode=fill))
    if any(shift):
        layers.append(keras.layers.RandomTranslation(shift[1], shift[0], fill_mode=fill))
    if eq.flip:
        layers.append(keras.layers.RandomFlip("horizontal"))
    value_range = (0, 255)
    if eq.brightness:
        layers.append(keras.layers.RandomBrightness(eq.brightness, value_range=value_range))
    if eq.contrast:
        layers.append(keras.layers.RandomContrast(eq.contrast, value_range=value_range))
    if eq.saturation:
        low, high = 1 - eq.saturation, 1 + eq.saturation  # multipliers, as factor/(1-factor)
        saturation = (low / (1 + low), high / (1 + high))
        layers.append(keras.layers.RandomSaturation(saturation, value_range=value_range))
    layers.append(keras.layers.Normalization(mean=list(eq.mean), variance=[s * s for s in eq.std]))
    augment = keras.Sequential(layers)

    if data.arrays is not None:
        x, y = data.arrays_xy()
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10_000, seed=0)
    else:
        ds = _decoded_files(data, eq.size, calls)
    ds = ds.batch(eq.batch_size).map(
        lambda images, labels: (augment(images, training=True), labels), num_parallel_calls=calls
    )
    return _finish(ds, threads)


def hand_tuned(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    import tensorflow as tf

    eq = workload.equivalent
    assert eq.crop_scale is not None and eq.crop_ratio is not None
    calls = threads or tf.data.AUTOTUNE
    paths, labels, _ = data.files()
    whole = tf.constant([[[0.0, 0.0, 1.0, 1.0]]])
    mean, std = tf.constant(eq.mean), tf.constant(eq.std)

    def load(path: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        encoded = tf.io.read_file(path)
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            tf.image.extract_jpeg_shape(encoded),
            whole,
            min_object_covered=0.0,
            aspect_ratio_range=eq.crop_ratio,
            area_range=eq.crop_scale,
            max_attempts=10,
            use_image_if_no_bounding_boxes=True,
        )
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.image.decode_and_crop_jpeg(encoded, window, channels=3)
        image = tf.image.resize(image, eq.size)
        return tf.image.random_flip_left_right(image), label

    def colour(images: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        def factor(d: float) -> tf.Tensor:
            return tf.random.uniform([tf.shape(images)[0], 1, 1, 1], 1 - d, 1 + d)

        x = images * factor(eq.brightness)
        centre = tf.reduce_mean(x, axis=[1, 2, 3], keepdims=True)
        x = (x - centre) * factor(eq.contrast) + centre
        grey = tf.image.rgb_to_grayscale(x)
        x = tf.clip_by_value(grey + (x - grey) * factor(eq.saturation), 0.0, 255.0)
        return (x - mean) / std, labels

    ds = tf.data.Dataset.from_tensor_slices((paths, labels)).shuffle(len(paths), seed=0)
    ds = ds.map(load, num_parallel_calls=calls).batch(eq.batch_size)
    return _finish(ds.map(colour, num_parallel_calls=calls), threads)
