"""daliaug's ImageDataGenerator and ``from_keras`` on one Keras backend, run by
tests/keras/test_backends.py in a fresh process (Keras picks its backend when first imported).

``python -m tests.keras.backends_job SPEC_JSON``: SPEC has ``block_tf`` (make TensorFlow
unimportable first), ``fit`` (train a small CNN on each flow), ``root`` (class folders) and
``out`` (an ``.npz`` of every batch of two
epochs of each flow, and a ``.json`` of what the process saw). The backend is
``KERAS_BACKEND``'s.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def host(value: Any) -> np.ndarray:
    """A batch element as NumPy, from whatever array type the backend yields."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    return np.asarray(value)


def small_cnn(classes: int) -> Any:
    """A small seeded CNN for 24x24 RGB images."""
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((24, 24, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(classes),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def keras_io_model(backbone: Any) -> Any:
    """keras.io's functional pattern: ``inputs -> data_augmentation (a Sequential) -> the
    backbone's layers``."""
    import keras

    data_augmentation = keras.Sequential(
        [keras.layers.RandomFlip("horizontal"), keras.layers.RandomZoom(0.1, fill_mode="nearest")],
        name="data_augmentation",
    )
    inputs = keras.Input((24, 24, 3))
    x = data_augmentation(inputs)
    for layer in backbone.layers:
        x = layer(x)
    return keras.Model(inputs, x)


def refused(make: Any) -> str:
    """The message of the error ``make()`` raises (empty when it raises none)."""
    try:
        make()
    except ValueError as error:
        return f"{type(error).__module__}.{type(error).__name__}: {error}"
    return ""


def main(spec: dict) -> None:
    if spec["block_tf"]:
        sys.modules["tensorflow"] = None  # type: ignore[assignment]  # import fails
    import keras

    import daliaug
    from daliaug.keras import ImageDataGenerator

    warnings.simplefilter("ignore")
    gen = ImageDataGenerator(
        rotation_range=20,
        horizontal_flip=True,
        rescale=1 / 255,
        fill_mode="constant",
        backend="cpu",
    )
    x = np.stack([np.full((24, 24, 3), 9 * i, np.uint8) for i in range(13)])
    y = np.arange(13)
    augmented = keras_io_model(small_cnn(13))
    fields, trimmed = daliaug.split_model(augmented)
    trimmed.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    directory = {"type": "directory", "path": spec["root"]}
    flows = {
        "directory": gen.flow_from_directory(
            spec["root"], target_size=(24, 24), batch_size=4, class_mode="sparse", seed=5
        ),
        "arrays": gen.flow(x, y, batch_size=4, seed=5),
        "from_keras": daliaug.make_dataset(
            daliaug.from_keras(
                [
                    keras.layers.RandomFlip("horizontal"),
                    keras.layers.RandomRotation(0.1, fill_mode="constant"),
                ],
                source=directory,
                image_size=24,
                batch_size=4,
                seed=5,
                backend="cpu",
            )
        ),
        "split_model": daliaug.make_dataset(
            {**fields, "source": directory, "batch_size": 4, "seed": 5, "backend": "cpu"}
        ),
    }
    report: dict[str, Any] = {
        "backend": keras.backend.backend(),
        "lengths": {k: len(f) for k, f in flows.items()},
        "fit": {},
    }
    arrays = {}
    for name, flow in flows.items():
        for e in range(2):
            for b, batch in enumerate(flow):
                for i, value in enumerate(batch):
                    arrays[f"{name}/{e}/{b}/{i}"] = host(value)
        if name in (
            "directory",
            "arrays",
        ):  # Keras' iterator protocol: batch 0 of epoch 0 by number
            for i, value in enumerate(flow[0]):
                arrays[f"{name}/item/{i}"] = host(value)
    for name, flow in flows.items() if spec["fit"] else ():
        model = trimmed if name == "split_model" else small_cnn(13)
        history = model.fit(flow, epochs=2, verbose=0)
        report["fit"][name] = [float(v) for v in history.history["loss"]]
    if spec["fit"]:
        # the trained, trimmed model shares the model's layers, so the model predicts as it at
        # inference, where its augmentation passes images through (not called here: Keras'
        # augmentation layers need TensorFlow even then, on these backends)
        images = theirs = x.astype(np.float32)
        for layer in augmented.layers[2:]:  # after the Input and the data_augmentation
            theirs = layer(theirs)
        ours = host(trimmed(images))
        report["split_predicts_as_trained"] = bool(np.allclose(host(theirs), ours, atol=1e-5))
    report["empty"] = [list(a.shape) for a in next(gen.flow(x[:0], y[:0], batch_size=4))]
    report["refused"] = {
        "save_to_dir": refused(lambda: gen.flow(x, y, save_to_dir=spec["out"] + ".d")),
        "samplewise_center": refused(lambda: ImageDataGenerator(samplewise_center=True).flow(x, y)),
        "reflect": refused(
            lambda: daliaug.from_keras(
                [keras.layers.RandomRotation(0.1)],
                source=directory,
                image_size=24,
            )
        ),
    }
    report["tensorflow_loaded"] = any(
        m == "tensorflow" or m.startswith("tensorflow.")
        for m, module in sys.modules.items()
        if module is not None
    )
    np.savez(spec["out"], **arrays)
    Path(spec["out"]).with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
