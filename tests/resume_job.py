"""One process on one Keras backend, run by tests/test_resume.py in a subprocess (Keras picks
its backend when it is first imported): ``model.fit`` with daliaug's ``BackupAndRestore``,
interrupted in its third epoch and restored, beside an uninterrupted run.

``python -m tests.resume_job SPEC_JSON``: SPEC has ``numbered`` (a file list of images
labelled by their index; or ``records``, the same as TFRecords, read by DALI's own reader, with
``index_dir``), ``backup`` (a folder for the backups) and ``out`` (``.npz``; the labels each
run trained on go to the ``.json`` beside it). With ``runs`` (JAX only), the runs after the
uninterrupted one instead: each ``[world, crash]``, on ``world`` host devices
(``keras.distribution.DataParallel``; 1: no distribution), interrupted after ``crash``
batches (``null``: run to the end), each restoring its predecessor's backup; ``batch_size``
replaces 5. Their labels go to the report's ``runs``.
"""

from __future__ import annotations

import contextlib
import json
import os
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
    if "runs" in spec:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
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
            "batch_size": spec.get("batch_size", 5),
            "seed": 7,
            "shuffle": True,
            "backend": "cpu",
            "num_threads": 1,
        }
    )

    def fit(recorder: Recorder, crash: int | None = None) -> None:
        ds = daliaug.make_dataset(config)
        recorder.watch(ds)
        backup = BackupAndRestore(ds, spec["backup"], save_freq=2)
        # Keras takes a batch to build the model before training: not one it trains on
        forget = keras.callbacks.LambdaCallback(on_train_begin=lambda _: recorder.seen.clear())
        callbacks = [backup, forget, *([crash_at(recorder, crash)] if crash else [])]
        recorder.model.fit(ds, epochs=4, verbose=0, shuffle=False, callbacks=callbacks)

    def on(world: int) -> Recorder:
        """A recorder whose model is made on ``world`` devices (the distribution set first)."""
        if "runs" in spec:
            import jax

            devices = jax.devices()[:world]
            parallel = keras.distribution.DataParallel(devices=devices) if world > 1 else None
            keras.distribution.set_distribution(parallel)
        return Recorder()

    runs = spec.get("runs", [[1, CRASH_AT], [1, None]])
    whole = on(runs[0][0])
    fit(whole)
    seen = []
    for world, crash in runs:
        recorder = on(world)
        with contextlib.suppress(KeyboardInterrupt):
            fit(recorder, crash)
        seen.append(recorder.seen)
    out = Path(spec["out"])
    np.savez(out, whole=np.concatenate(whole.seen))
    report = {"whole": whole.seen, "runs": seen}
    if "runs" not in spec:
        report |= {"first": seen[0], "resumed": seen[1]}
    out.with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
