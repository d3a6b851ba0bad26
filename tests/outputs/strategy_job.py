"""One training process under a ``tf.distribute`` strategy, run by
tests/outputs/test_replicas.py in a subprocess (logical CPU devices must be set before
TensorFlow starts; workers of a ``MultiWorkerMirroredStrategy`` are processes of their own).

``python -m tests.outputs.strategy_job SPEC_JSON``: SPEC has ``strategy`` (``mirrored`` or
``multiworker``; the cluster comes from ``TF_CONFIG``), ``cpus`` (logical CPU devices),
``backend``, ``root`` (a folder with ``numbered.csv``: 23 images labelled by their index, and
``same.csv``: 12 copies of one image) and ``out`` (the JSON written at the end): the sample
ids and weights each local replica got in one epoch of each dataset, their batch counts, the
first images each replica got of the identical images, and the losses of a short ``fit``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

LOOP_EPOCHS = 3
"""The custom loop's epochs: the first's summed loss already lies well above the third's."""
FIT_EPOCHS = 2
"""``model.fit``'s epochs: the second iterates the dataset again."""


def custom_loop(
    strategy: object, model: object, dataset: object, epochs: int = LOOP_EPOCHS
) -> list[float]:
    """Training steps through ``strategy.run`` (what ``model.fit`` does, without Keras' first-
    batch build, which fails under ``MultiWorkerMirroredStrategy`` in Keras 3): mean loss per
    epoch, padding weighed 0."""
    import keras
    import tensorflow as tf

    loss_fn = keras.losses.CategoricalCrossentropy(reduction="sum")

    @tf.function
    def step(images: tf.Tensor, labels: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True), sample_weight=weights) / 6.0
        gradients = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    losses = []
    for _ in range(epochs):
        total = 0.0
        for batch in dataset:
            per_replica = strategy.run(step, args=batch)
            total += float(strategy.reduce("SUM", per_replica, axis=None))
        losses.append(total)
    return losses


def main(spec: dict) -> None:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(spec["cpus"])]
    )
    if spec["strategy"] == "mirrored":
        devices = [f"/cpu:{i}" for i in range(spec["cpus"])]
        strategy = tf.distribute.MirroredStrategy(devices)
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()

    import daliaug

    root = Path(spec["root"])

    def config(listing: str, **fields: object) -> daliaug.Config:
        return daliaug.load_config(
            {
                "source": {"type": "file_list", "path": str(root / listing)},
                "image_size": 24,
                "batch_size": 6,
                "seed": 5,
                "backend": spec["backend"],
                "num_threads": 1,
                "transforms": [
                    {"type": "rotation", "angle": 40},
                    {"type": "brightness", "factor": 0.5},
                ],
                **fields,
            }
        )

    def epoch(dataset: object) -> tuple[list[list[list]], list[np.ndarray]]:
        """Per local replica: its batches (``[ids, weights]`` each) and its first images."""
        local = len(strategy.extended.worker_devices)
        batches: list[list[list]] = [[] for _ in range(local)]
        first: list[np.ndarray] = []
        for element in dataset:
            parts = [strategy.experimental_local_results(t) for t in element]
            for r, (images, labels, *weights) in enumerate(zip(*parts, strict=True)):
                w = weights[0].numpy().tolist() if weights else [1.0] * len(labels)
                batches[r].append([labels.numpy().tolist(), w])
                if len(first) <= r:
                    first.append(images.numpy())
        return batches, first

    numbered, _ = epoch(daliaug.make_dataset(config("numbered.csv"), strategy=strategy))
    dropped, _ = epoch(
        daliaug.make_dataset(config("numbered.csv", drop_remainder=True), strategy=strategy)
    )
    _, same = epoch(daliaug.make_dataset(config("same.csv"), strategy=strategy))
    fit_config = config("numbered.csv", label_mode="categorical", transforms=[])
    with strategy.scope():
        import keras

        model = keras.Sequential(
            [
                keras.Input((24, 24, 3)),
                keras.layers.Rescaling(1 / 255),
                keras.layers.Flatten(),
                keras.layers.Dense(23, activation="softmax"),
            ]
        )
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="categorical_crossentropy")
        model.optimizer.build(model.trainable_variables)
    loop_losses = custom_loop(strategy, model, daliaug.make_dataset(fit_config, strategy=strategy))
    fit_losses, fit_error = [], ""
    try:
        history = model.fit(
            daliaug.make_dataset(fit_config, strategy=strategy),
            epochs=FIT_EPOCHS,
            verbose=0,
            shuffle=False,
        )
        fit_losses = history.history["loss"]
    except ValueError as e:  # Keras 3 under MultiWorkerMirroredStrategy (keras#20585)
        fit_error = str(e).splitlines()[0]
    out = {
        "replicas": strategy.num_replicas_in_sync,
        "numbered": numbered,
        "dropped": dropped,
        "same_first": [image.tolist() for image in same],
        "loop_losses": loop_losses,
        "fit_losses": fit_losses,
        "fit_error": fit_error,
    }
    Path(spec["out"]).write_text(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
