"""A training loop's data side, run by tests/test_resume.py to be killed: NumPy batches of 22
arrays labelled by their index (or of ``records``, TFRecords of images labelled by their
index, read by DALI's own reader on the CPU), two epochs; after each batch its digest and
labels are appended to ``out`` and the stream's state written to ``state`` (each on disk before
the next step), then the job says ``batch N`` and, unless ``free``, waits for a line on stdin
before the next.

``python -m tests.kill_job SPEC_JSON``: SPEC has ``backend`` (``opencv`` or ``cpu``), ``out``,
``state``, ``resume`` (start from the state file), ``free`` and optionally ``framework``
(``numpy``, ``jax``, ``torch`` or ``tensorflow``; Keras' backend from ``KERAS_BACKEND``),
``records`` and ``index_dir``, and ``world`` (JAX: the batches split over that many host
devices under ``keras.distribution.DataParallel``). Each record holds the batch's epoch and
its labels but padding's (weight 0).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np


def main(spec: dict) -> None:
    world = spec.get("world")
    if world is not None:
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        import jax
        import keras

        parallel = keras.distribution.DataParallel(devices=jax.devices()[:world])
        keras.distribution.set_distribution(parallel if world > 1 else None)
    import daliaug
    from daliaug.resume import State

    config = {
        "source": {"type": "arrays"},
        "image_size": 16,
        "batch_size": 4,
        "backend": spec["backend"],
        "seed": 9,
        "shuffle": True,
        "num_threads": 1,
        "transforms": [{"type": "rotation", "angle": 30}, {"type": "brightness", "factor": 0.3}],
    }
    x = np.random.default_rng(2).integers(0, 256, (22, 20, 24, 3), dtype=np.uint8)
    y = np.arange(22)
    if "records" in spec:
        source = {"type": "tfrecord", "path": spec["records"], "index_dir": spec["index_dir"]}
        config |= {"source": source, "label_mode": "int"}
        x = y = None
    state_file, out = Path(spec["state"]), Path(spec["out"])
    state = state_file.read_text() if spec["resume"] else None
    framework = spec.get("framework", "numpy")
    dataset = daliaug.make_dataset(config, x=x, y=y, framework=framework, state=state)
    epoch, taken = 0, 0  # where the stream stands (a tf.data dataset's state is asked so)
    if state is not None:
        saved = State.from_json(state)
        epoch, taken = saved.epoch, saved.position // saved.batch_size
    count = 0
    with out.open("a", encoding="utf-8") as records:
        while epoch < 2:
            for batch in dataset:  # each pass the next epoch (or the rest of the state's)
                digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in batch))
                labels = np.asarray(batch[1])
                if len(batch) > 2:  # a world's shards padded to equal batch counts
                    labels = labels[np.asarray(batch[2]) > 0]
                record = {"digest": digest.hexdigest(), "labels": labels.tolist(), "epoch": epoch}
                records.write(json.dumps(record) + "\n")
                records.flush()
                os.fsync(records.fileno())
                taken += 1
                if framework == "tensorflow":
                    now = dataset.state_at(epoch, taken)
                else:
                    now = dataset.get_state()
                temporary = state_file.with_suffix(".tmp")
                temporary.write_text(now.to_json())
                os.replace(temporary, state_file)
                count += 1
                print(f"batch {count}", flush=True)
                if not spec["free"]:
                    sys.stdin.readline()
            epoch, taken = epoch + 1, 0


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
