"""One process on one Keras backend, run by tests/test_resume.py in a subprocess (Keras picks
its backend when it is first imported): ``model.fit`` with daliaug's ``BackupAndRestore``,
interrupted in its third epoch and restored, beside an uninterrupted run.

``python -m tests.resume_job SPEC_JSON``: SPEC has ``numbered`` (a file list of images
labelled by their index; or ``records``, the same as TFRecords, read by DALI's own reader, with
``index_dir``), ``backup`` (a folder for the backups) and ``out`` (``.npz``; the labels each
run trained on go to the ``.json`` beside it).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


class Recorder:
    """A tiny model, and the labels of each batch its dataset hands Keras (:meth:`watch`)."""

    def __init__(self) -> None:
        import keras

        self.seen: list[list[int]] = []
        inputs = keras.Input((24, 24, 3))
        x = keras.layers.GlobalAveragePooling2D()(keras.layers.Rescaling(1 / 255)(inputs))
        self.model = keras.Model(inputs, keras.layers.Dense(23, activation="softmax")(x))
        self.model.compile("adam", "sparse_categorical_crossentropy")

    def watch(self, batches: Any) -> None:
        """Record the labels of each batch ``batches`` hand on (on JAX and PyTorch Keras takes
        one at a time, as its training steps ask)."""
        import keras

        opened, seen = batches._open_at, self.seen

        class Recorded:
            def __init__(self, stream: Any) -> None:
                self.stream = stream

            def __iter__(self) -> Any:
                for batch in self.stream:  # each pass: the next epoch
                    seen.append(keras.ops.convert_to_numpy(batch[1]).astype(int).tolist())
                    yield batch

        batches._open_at = lambda epoch, first: Recorded(opened(epoch, first))


CRASH_AT = 13
"""Batches trained before the crash: epoch 2's third, one after a save (``save_freq=2``)."""


def crash_at(recorder: Any, batches: int) -> Any:
    """A Keras callback that interrupts training (``KeyboardInterrupt``) once ``recorder`` has
    seen ``batches`` batches (Keras imported here: the job picks its backend first)."""
    import keras

    class Crash(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if len(recorder.seen) == batches:
                raise KeyboardInterrupt

    return Crash()


def main(spec: dict) -> None:
    import keras

    import daliaug
    from daliaug.keras import BackupAndRestore

    source = {"type": "file_list", "path": spec.get("numbered")}
    if "records" in spec:
        source = {"type": "tfrecord", "path": spec["records"], "index_dir": spec["index_dir"]}
    config = daliaug.load_config(
        {
            "source": source,
            "image_size": 24,
            "batch_size": 5,
            "seed": 7,
            "shuffle": True,
            "backend": "cpu",
            "num_threads": 1,
        }
    )

    def fit(recorder: Recorder, crash: bool = False) -> None:
        ds = daliaug.make_dataset(config)
        recorder.watch(ds)
        backup = BackupAndRestore(ds, spec["backup"], save_freq=2)
        # Keras takes a batch to build the model before training: not one it trains on
        forget = keras.callbacks.LambdaCallback(on_train_begin=lambda _: recorder.seen.clear())
        callbacks = [backup, forget, *([crash_at(recorder, CRASH_AT)] if crash else [])]
        recorder.model.fit(ds, epochs=4, verbose=0, shuffle=False, callbacks=callbacks)

    whole, first, resumed = Recorder(), Recorder(), Recorder()
    fit(whole)
    with contextlib.suppress(KeyboardInterrupt):
        fit(first, crash=True)
    fit(resumed)
    out = Path(spec["out"])
    np.savez(out, whole=np.concatenate(whole.seen))
    report = {"whole": whole.seen, "first": first.seen, "resumed": resumed.seen}
    out.with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
