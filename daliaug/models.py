"""Small Keras models used by the demo and by ``daliaug doctor`` (imports Keras)."""

from __future__ import annotations

import keras

from daliaug.config import Config


def small_cnn(config: Config, num_classes: int) -> keras.Model:
    """A compact CNN (three conv blocks) sized for quick CPU training, compiled for the labels."""
    h, w = config.image_size
    c = config.channels
    data_format = "channels_last" if config.output.layout == "NHWC" else "channels_first"
    shape = (h, w, c) if data_format == "channels_last" else (c, h, w)
    axis = -1 if data_format == "channels_last" else 1
    x = inputs = keras.Input(shape, dtype=config.output.dtype)
    for filters in (32, 64, 128):
        x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False, data_format=data_format)(x)
        x = keras.layers.BatchNormalization(axis=axis)(x)
        x = keras.layers.ReLU()(x)
        x = keras.layers.MaxPooling2D(data_format=data_format)(x)
    x = keras.layers.GlobalAveragePooling2D(data_format=data_format)(x)
    model = keras.Model(inputs, _head(x, config, num_classes))
    return compile_for(model, config)


def _head(x: keras.KerasTensor, config: Config, num_classes: int) -> keras.KerasTensor:
    if config.label_mode == "binary":
        return keras.layers.Dense(1, activation="sigmoid", dtype="float32")(x)
    return keras.layers.Dense(num_classes, activation="softmax", dtype="float32")(x)


def compile_for(model: keras.Model, config: Config) -> keras.Model:
    """Compile with the loss and accuracy metric that match ``label_mode``."""
    loss = {
        "int": "sparse_categorical_crossentropy",
        "categorical": "categorical_crossentropy",
        "binary": "binary_crossentropy",
    }[config.label_mode]
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=loss, metrics=["accuracy"])
    return model
