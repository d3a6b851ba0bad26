"""Small Keras models used by the demo and by ``daliaug doctor`` (imports Keras)."""

from __future__ import annotations

from typing import Any

import keras

from daliaug.config import Config
from daliaug.errors import ConfigError
from daliaug.sources.segmentation import MaskTargets


def _inputs(config: Config) -> tuple[keras.KerasTensor, keras.KerasTensor]:
    """The model's input in the config's layout, and that input channels-last: the models
    compute in NHWC whatever the layout (TensorFlow's CPU kernels cannot train an NCHW
    convolution where oneDNN is off, as on CPUs without AVX-512)."""
    h, w = config.image_size
    c = config.channels
    if config.output.layout == "NHWC":
        inputs = keras.Input((h, w, c), dtype=config.output.dtype)
        return inputs, inputs
    inputs = keras.Input((c, h, w), dtype=config.output.dtype)
    return inputs, keras.layers.Permute((2, 3, 1))(inputs)


def _conv_block(x: keras.KerasTensor, filters: int, strides: int = 1) -> keras.KerasTensor:
    x = keras.layers.Conv2D(filters, 3, strides=strides, padding="same", use_bias=False)(x)
    x = keras.layers.BatchNormalization(momentum=0.9)(x)
    return keras.layers.ReLU()(x)


def small_cnn(
    config: Config, num_classes: int, steps: int | None = None, warmup: int = 0
) -> keras.Model:
    """A compact classifier for quick CPU training, compiled (see :func:`compile_classifier`
    for ``steps`` and ``warmup``).

    Six convolutions with BatchNormalization (32, 32, 64, 64, 128, 128 filters), the first
    strided (a quarter of the work of a full-resolution first block), then global max pooling:
    a class is an object somewhere in the image, so its strongest response counts, not its mean
    over a mostly background image."""
    inputs, x = _inputs(config)
    x = _conv_block(x, 32, strides=2)
    x = _conv_block(x, 32)
    for filters in (64, 128):
        x = keras.layers.MaxPooling2D()(x)
        x = _conv_block(x, filters)
        x = _conv_block(x, filters)
    x = keras.layers.GlobalMaxPooling2D()(x)
    binary = config.label_mode == "binary"
    outputs = keras.layers.Dense(
        1 if binary else num_classes,
        activation="sigmoid" if binary else "softmax",
        dtype="float32",
    )(x)
    return compile_classifier(keras.Model(inputs, outputs), config, steps, warmup)


LEARNING_RATE = 1e-3
"""Adam's (peak) learning rate for the small models. Twice that (daliaug 0.2's demo) stalled
the demo's CNN at chance for up to ten epochs, depending on the seed: with BatchNormalization
a convolution's output ignores the scale of its weights, so Adam's steps, about the same size
whatever the gradient, turn small freshly initialized weights too far each step for features
to form; training takes off once the weights have grown (bench/results/demo-seeds-*.md)."""


def learning_rate(steps: int | None, warmup: int = 0) -> Any:
    """:data:`LEARNING_RATE`; with ``steps`` (the whole run's training steps), reached
    linearly over the first ``warmup`` steps and then decayed to 0 along a cosine."""
    if steps is None:
        return LEARNING_RATE
    return keras.optimizers.schedules.CosineDecay(
        0.0 if warmup else LEARNING_RATE,
        max(1, steps - warmup),
        warmup_target=LEARNING_RATE if warmup else None,
        warmup_steps=warmup,
    )


def compile_classifier(
    model: keras.Model, config: Config, steps: int | None = None, warmup: int = 0
) -> keras.Model:
    """Compile a classifier for the config's label mode: Adam at :func:`learning_rate`
    (``steps`` and ``warmup`` in training steps), cross-entropy, accuracy (a weighted metric,
    so that samples of weight 0, padding under a strategy, count for nothing)."""
    loss = {
        "int": "sparse_categorical_crossentropy",
        "float": "sparse_categorical_crossentropy",
        "categorical": "categorical_crossentropy",
        "binary": "binary_crossentropy",
    }.get(config.label_mode)
    if loss is None:
        raise ConfigError(
            f"label_mode: {config.label_mode!r} has no class labels to train a classifier on; "
            "use int, float, categorical or binary"
        )
    optimizer = keras.optimizers.Adam(learning_rate(steps, warmup))
    model.compile(optimizer=optimizer, loss=loss, weighted_metrics=["accuracy"])
    return model


class _MeanIoU(keras.metrics.MeanIoU):
    """Mean IoU of class scores along ``class_axis`` against index or one-hot masks (all-zero
    one-hot pixels count as ``ignore_class``). Keras' own ``axis`` breaks its ``result()``
    for any axis but the last."""

    def __init__(self, num_classes: int, class_axis: int, ignore_class: int | None) -> None:
        super().__init__(num_classes, name="mean_iou", ignore_class=ignore_class)
        self.class_axis = class_axis

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        ops, axis = keras.ops, self.class_axis
        if len(y_true.shape) == len(y_pred.shape):  # one-hot masks
            labels = ops.argmax(y_true, axis)
            if self.ignore_class is not None:
                labels = ops.where(ops.max(y_true, axis) > 0, labels, self.ignore_class)
            y_true = labels
        if sample_weight is not None:  # one weight per sample: every pixel of it
            shape = ops.shape(y_true)
            sample_weight = ops.broadcast_to(
                ops.reshape(sample_weight, (-1,) + (1,) * (len(shape) - 1)), shape
            )
        return super().update_state(y_true, ops.argmax(y_pred, axis), sample_weight)


def small_segmenter(config: Config, num_classes: int) -> keras.Model:
    """A compact encoder-decoder with a skip connection, compiled with a mean IoU metric that
    skips the source's ``ignore_index`` pixels."""
    source = config.source
    assert isinstance(source, MaskTargets)
    inputs, x = _inputs(config)
    skips = []
    for filters in (24, 48):
        x = _conv_block(x, filters)
        skips.append(x)
        x = keras.layers.MaxPooling2D()(x)
    x = _conv_block(x, 96)
    for filters, skip in zip((48, 24), reversed(skips), strict=True):
        x = keras.layers.UpSampling2D()(x)
        x = keras.layers.Concatenate()([x, skip])
        x = _conv_block(x, filters)
    logits = keras.layers.Conv2D(num_classes, 1, dtype="float32")(x)
    sparse = source.mask_output == "index"
    # Index masks are (batch, H, W) in both layouts, and Keras' sparse crossentropy wants the
    # classes last; one-hot masks keep the config's layout, and so do the predictions.
    class_axis = 1 if config.output.layout == "NCHW" and not sparse else -1
    if class_axis == 1:
        logits = keras.layers.Permute((3, 1, 2))(logits)
    outputs = keras.layers.Softmax(axis=class_axis, dtype="float32")(logits)
    ignore = source.ignore_index if source.ignore_index >= num_classes else None
    loss = (
        keras.losses.SparseCategoricalCrossentropy(ignore_class=ignore)
        if sparse
        else keras.losses.CategoricalCrossentropy(axis=class_axis)
    )
    metric = _MeanIoU(num_classes, class_axis, ignore)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=loss, weighted_metrics=[metric])
    return model


def model_for(
    config: Config, num_classes: int, steps: int | None = None, warmup: int = 0
) -> keras.Model:
    """The demo model that fits the config's task (a classifier's learning rate scheduled over
    ``steps`` training steps with ``warmup``, see :func:`learning_rate`)."""
    if config.source.segmentation:
        return small_segmenter(config, num_classes)
    return small_cnn(config, num_classes, steps, warmup)
