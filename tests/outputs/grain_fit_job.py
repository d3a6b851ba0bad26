"""The Grain output in a process of its own on Keras' JAX backend, TensorFlow unimportable, run
by tests/outputs/test_grain_fit.py (Keras picks its backend when it is first imported).

``python -m tests.outputs.grain_fit_job SPEC_JSON``: SPEC has ``numbered`` (a file list of
images labelled by their index), ``checkpoint`` (a folder for Grain's checkpoint handler) and
``out`` (an ``.npz`` of the batches compared, and a ``.json`` report beside it): two epochs of
the JAX output and of the Grain output, the labels ``model.fit`` drew through the Grain dataset
in each of two ways, the warnings it raised, and the batches after a state saved by Grain's
checkpoint handler, from the saving iterator and from one restored in a new dataset; the
same over ``records`` (the images as TFRecords, read by DALI's own reader, with ``index_dir``),
saved mid-epoch and at an epoch's end.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def main(spec: dict) -> None:
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # the JAX path needs none
    import grain
    import keras
    from etils import epath

    import daliaug

    fields = {
        "source": {"type": "file_list", "path": spec["numbered"]},
        "image_size": 16,
        "batch_size": 5,
        "seed": 5,
        "backend": "cpu",
        "num_threads": 1,
        "transforms": [{"type": "rotation", "angle": 20}, {"type": "flip"}],
    }
    config = daliaug.load_config(fields)
    arrays: dict[str, Any] = {}

    def keep(name: str, stream: Any, count: int | None = None) -> None:
        batches = stream if count is None else (next(stream) for _ in range(count))
        for i, batch in enumerate(batches):
            for j, value in enumerate(batch):
                arrays[f"{name}/{i}/{j}"] = np.asarray(value)

    for epoch in range(2):
        keep(f"jax{epoch}", daliaug.make_dataset(config, framework="jax", initial_epoch=epoch))
    ds = daliaug.make_dataset(config, framework="grain")
    report: dict[str, Any] = {"type": type(ds).__mro__[1].__module__, "length": len(ds)}
    for epoch in range(2):
        keep(f"grain{epoch}", ds)

    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(23),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    for way in ("epochs", "repeat"):
        fresh = daliaug.make_dataset(config, framework="grain")
        drawn: list[list[int]] = []

        def drawing(batch: Any, drawn: list[list[int]] = drawn) -> Any:
            drawn.append(np.asarray(batch[1]).tolist())
            return batch

        if way == "epochs":
            x, steps = fresh.map(drawing), None
        else:
            x, steps = fresh.repeat().map(drawing), len(fresh)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            history = model.fit(x, epochs=2, steps_per_epoch=steps, shuffle=False, verbose=0)
        report[way] = {
            "drawn": drawn,
            "loss": history.history["loss"],
            "warnings": [str(w.message) for w in caught],
            "epoch_after": fresh.batches.epoch,
        }

    handler = grain.checkpoint.CheckpointHandler()
    records = {"type": "tfrecord", "path": spec["records"], "index_dir": spec["index_dir"]}
    for name, source, taken in (("", None, 7), ("records7", records, 7), ("records5", records, 5)):
        made = config if source is None else daliaug.load_config({**fields, "source": source})
        saving = iter(daliaug.make_dataset(made, framework="grain").repeat())
        for _ in range(taken):  # into the second epoch, or to the end of the first
            next(saving)
        folder = epath.Path(spec["checkpoint"]) / (name or "files")
        folder.mkdir()
        handler.save(folder, item=saving)
        keep(f"after_save{name}", saving, 4)
        restored = iter(daliaug.make_dataset(made, framework="grain").repeat())
        handler.restore(folder, item=restored)
        report[f"restored_state{name}"] = restored.get_state()
        keep(f"after_restore{name}", restored, 4)

    np.savez(spec["out"], **arrays)
    Path(spec["out"]).with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
