"""A training loop's data side, run by tests/test_resume.py to be killed: NumPy batches of 22
arrays labelled by their index (or of ``records``, TFRecords of images labelled by their
index, read by DALI's own reader on the CPU), two epochs; after each batch its digest and
labels are appended to ``out`` and the stream's state written to ``state`` (each on disk before
the next step), then the job says ``batch N`` and, unless ``free``, waits for a line on stdin
before the next.

``python -m tests.kill_job SPEC_JSON``: SPEC has ``backend`` (``opencv`` or ``cpu``), ``out``,
``state``, ``resume`` (start from the state file), ``free`` and optionally ``records`` and
``index_dir``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np


def main(spec: dict) -> None:
    import daliaug

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
    dataset = daliaug.make_dataset(config, x=x, y=y, framework="numpy", state=state)
    count = 0
    with out.open("a", encoding="utf-8") as records:
        while dataset.epoch < 2:
            for batch in dataset:
                digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in batch))
                record = {"digest": digest.hexdigest(), "labels": np.asarray(batch[1]).tolist()}
                records.write(json.dumps(record) + "\n")
                records.flush()
                os.fsync(records.fileno())
                temporary = state_file.with_suffix(".tmp")
                temporary.write_text(dataset.get_state().to_json())
                os.replace(temporary, state_file)
                count += 1
                print(f"batch {count}", flush=True)
                if not spec["free"]:
                    sys.stdin.readline()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
