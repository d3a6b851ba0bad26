"""One of several JAX processes training under ``keras.distribution.DataParallel``, run by
tests/outputs/test_jax_distribution.py (JAX's devices and processes are fixed when it starts).

``python -m tests.outputs.jax_distribution_job SPEC_JSON``: SPEC has ``process``, ``processes``,
``port`` (the coordinator on 127.0.0.1), ``devices`` (CPU devices per process), ``numbered``
(a file list of images labelled by their index), ``framework`` (``jax``, or ``grain``: the
Grain output, ``fit`` on it repeated with ``steps_per_epoch``, and its state saved and restored
by Grain's checkpoint handler in ``checkpoint``, one file per process) and ``out`` (the JSON
written at the end): the labels and weights of this process's batches in two epochs, its step
counts in ``fit``, the losses, and with Grain the labels after the saved state and after the
restored one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def main(spec: dict) -> None:
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # the JAX path needs none
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={spec['devices']}"
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras
    import numpy as np

    keras.distribution.initialize(f"127.0.0.1:{spec['port']}", spec["processes"], spec["process"])
    grain = spec["framework"] == "grain"  # Keras takes it as sharded with auto_shard off
    distribution = keras.distribution.DataParallel(auto_shard_dataset=not grain)
    keras.distribution.set_distribution(distribution)
    import daliaug

    config = daliaug.load_config(
        {
            "source": {"type": "file_list", "path": spec["numbered"]},
            "image_size": 16,
            "batch_size": 8,
            "seed": 3,
            "backend": "cpu",
            "num_threads": 1,
            "transforms": [{"type": "rotation", "angle": 20}],
        }
    )
    dataset = daliaug.make_dataset(config, framework=spec["framework"])
    epochs = [
        [
            (np.asarray(labels).tolist(), np.asarray(weights).tolist())
            for _, labels, weights in dataset
        ]
        for _ in range(2)
    ]

    class Steps(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.steps.append(0)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.steps[-1] += 1

    steps = Steps()
    steps.steps = []
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(23),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    if grain:
        x, per_epoch = dataset.repeat(), len(dataset)
    else:
        x, per_epoch = dataset, None
    history = model.fit(x, epochs=2, steps_per_epoch=per_epoch, verbose=0, callbacks=[steps])
    report = {
        "epochs": epochs,
        "length": len(dataset),
        "steps": steps.steps,
        "loss": [float(v) for v in history.history["loss"]],
        "local_devices": jax.local_device_count(),
        "devices": jax.device_count(),
    }
    if grain:
        report["resumed"] = resumed(config, spec["checkpoint"])
    with open(spec["out"], "w") as f:
        json.dump(report, f)


def resumed(config: Any, checkpoint: str) -> list[list[list[int]]]:
    """Labels of the 3 batches after a state saved at batch 4 (epoch 1's second) by Grain's
    checkpoint handler, from the saving iterator and from one restored in a new dataset."""
    import grain
    import numpy as np
    from etils import epath

    import daliaug

    handler = grain.checkpoint.CheckpointHandler()
    runs = []
    for restore in (False, True):
        iterator = iter(daliaug.make_dataset(config, framework="grain").repeat())
        if restore:
            handler.restore(epath.Path(checkpoint), item=iterator)
        else:
            for _ in range(4):
                next(iterator)
            handler.save(epath.Path(checkpoint), item=iterator)
        runs.append([np.asarray(next(iterator)[1]).tolist() for _ in range(3)])
    return runs


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
