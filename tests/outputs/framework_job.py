"""One process on one Keras backend, run by tests/outputs/test_frameworks.py in a subprocess
(Keras picks its backend when it is first imported).

``python -m tests.outputs.framework_job SPEC_JSON``: SPEC has ``framework`` (``tensorflow``,
``jax``, ``torch`` or ``numpy``), ``block_tf`` (make TensorFlow unimportable before anything else),
``root`` (class folders), ``numbered`` (a file list of images labelled by their index), ``fit``
(train a small CNN) and ``out`` (an ``.npz`` of every batch of two epochs of each checked
dataset, and what the process saw).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def config(source: dict, **fields: Any) -> Any:
    import daliaug

    return daliaug.load_config(
        {
            "source": source,
            "image_size": 24,
            "batch_size": 5,
            "seed": 11,
            "backend": "cpu",
            "num_threads": 1,
            "transforms": [
                {"type": "rotation", "angle": 30},
                {"type": "flip", "horizontal": 0.5},
                {"type": "brightness", "factor": 0.3},
            ],
            **fields,
        }
    )


def host(value: Any) -> np.ndarray:
    """A batch element as NumPy, from whatever array type the framework yields."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    return np.asarray(value)


def epochs(dataset: Any, count: int) -> list[list[np.ndarray]]:
    """``count`` passes over ``dataset``, each a list of batches of host arrays."""
    return [[[host(v) for v in batch] for batch in dataset] for _ in range(count)]


def small_cnn(classes: int) -> Any:
    """A small seeded CNN whose loss falls within two epochs on these images."""
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((24, 24, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(classes),
        ]
    )
    model.compile(
        keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def main(spec: dict) -> None:
    if spec["block_tf"]:
        sys.modules["tensorflow"] = None  # type: ignore[assignment]  # import fails
    import daliaug

    framework = spec["framework"]
    make = lambda cfg, **kw: daliaug.make_dataset(cfg, framework=framework, **kw)  # noqa: E731
    numbered = {"type": "file_list", "path": spec["numbered"]}
    folders = {"type": "directory", "path": spec["root"]}
    x = np.stack([np.full((20, 22, 3), 10 * i, np.uint8) for i in range(17)])
    y = np.arange(17) % 3
    arrays = {"type": "arrays"}
    checked = {
        "numbered": make(config(numbered)),
        "shuffled": make(config(folders, label_mode="categorical")),
        "weighted": make(config(folders), class_weight={0: 2.0, 1: 0.5}),
        "arrays": make(config(arrays, shuffle=True), x=x, y=y),
        "resumed": make(config(folders), initial_epoch=1),
        "dropped": make(config(numbered, drop_remainder=True)),
    }
    report: dict[str, Any] = {"lengths": {k: len(d) for k, d in checked.items()}}
    first = next(iter(checked["arrays" if framework == "tensorflow" else "shuffled"]))
    report["types"] = sorted({type(v).__module__.split(".")[0] for v in first})
    if framework == "tensorflow":  # each tf.data iteration is an epoch, even one left unfinished
        checked["arrays"] = make(config(arrays, shuffle=True), x=x, y=y)
    arrays_out = {}
    for name, dataset in checked.items():
        for e, batches in enumerate(epochs(dataset, 2)):
            for b, batch in enumerate(batches):
                for i, value in enumerate(batch):
                    arrays_out[f"{name}/{e}/{b}/{i}"] = value
    if spec["fit"]:
        for name, train, val in (
            ("folders", make(config(folders)), make(config(folders, shuffle=False))),
            ("arrays", make(config(arrays), x=x, y=y), make(config(arrays), x=x[:6], y=y[:6])),
        ):
            history = small_cnn(4).fit(train, epochs=2, validation_data=val, verbose=0)
            report[f"fit_{name}"] = {k: [float(v) for v in vs] for k, vs in history.history.items()}
            report[f"fit_{name}_next_epoch"] = train.epoch
    report["tensorflow_loaded"] = any(
        m == "tensorflow" or m.startswith("tensorflow.")
        for m, module in sys.modules.items()
        if module is not None
    )
    np.savez(spec["out"], **arrays_out)
    Path(spec["out"]).with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
