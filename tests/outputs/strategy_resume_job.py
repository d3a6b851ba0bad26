"""One process with four logical CPU devices, run by tests/outputs/test_replicas.py: a
``tf.data`` epoch begun under a ``MirroredStrategy`` of ``worlds[0]`` replicas (no strategy
for 1), its state taken after ``after`` global batches (``ds.state_at``) and restored by a
dataset made under a strategy of ``worlds[1]`` replicas, which runs the rest of that epoch and
then the next one whole.

``python -m tests.outputs.strategy_resume_job SPEC_JSON``: SPEC has ``worlds``, ``after``,
``backend`` and ``out`` (``.npz``: each sample's image as each world made it; ``.json``: the
samples of each pass, weight above 0, and the states), and ``listing`` where the samples are
that file list's, checked beside training (:func:`tests.elastic_job.config_of`), or
``records`` (and ``index_dir``) where they are those TFRecords; with ``one_replica`` a world
of 1 is a strategy of one replica too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.elastic_job import config_of


def main(spec: dict) -> None:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(4)]
    )
    import daliaug

    config, arrays = config_of(spec)  # arrays, or with a listing its files checked beside
    if "records" in spec:  # TFRecords labelled by their number, read by tf.data
        source = {"type": "tfrecord", "path": spec["records"], "index_dir": spec["index_dir"]}
        config, arrays = {**config, "source": source, "label_mode": "int"}, {}

    def strategy_of(world: int) -> Any:
        return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(world)])

    def dataset(world: int, state: Any = None) -> tuple[Any, Any]:
        strategy = strategy_of(world) if world > 1 or spec.get("one_replica") else None
        made = daliaug.make_dataset(config, strategy=strategy, state=state, **arrays)
        return made, strategy

    def local(value: Any, strategy: Any) -> list[np.ndarray]:
        if strategy is None:
            return [np.asarray(value)]
        return [np.asarray(v) for v in strategy.experimental_local_results(value)]

    images: dict[str, np.ndarray] = {}

    def taken(batch: Any, strategy: Any, name: str) -> list[int]:
        """The samples of a global batch, weight above 0, replica by replica."""
        parts = [local(part, strategy) for part in batch]
        labels = []
        for r, (pixels, label) in enumerate(zip(parts[0], parts[1], strict=True)):
            weights = parts[2][r] if len(parts) > 2 else np.ones(len(label))
            for image, sample, weight in zip(pixels, label.tolist(), weights, strict=True):
                if weight > 0:
                    labels.append(sample)
                    images[f"{name}{sample}"] = image
        return labels

    first_world, second_world = spec["worlds"]
    report: dict[str, Any] = {}
    whole, strategy = dataset(first_world)
    report["whole"] = [taken(b, strategy, "whole") for b in whole]
    begun, strategy = dataset(first_world)
    report["before"] = []
    for count, batch in enumerate(begun, 1):
        report["before"].append(taken(batch, strategy, "before"))
        if count == spec["after"]:
            break
    state = begun.state_at(0, spec["after"])
    report["state"] = state.as_dict()
    resumed, strategy = dataset(second_world, state)
    report["rest"] = [taken(b, strategy, "rest") for b in resumed]
    report["next"] = [taken(b, strategy, "next") for b in resumed]
    out = Path(spec["out"])
    np.savez(out, **images)
    out.with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
