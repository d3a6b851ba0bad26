"""One JAX process with four host devices, run by tests/test_resume.py: an epoch begun by a
world of ``N`` shards (``keras.distribution.DataParallel`` over ``N`` devices; no distribution
for one), its state taken mid-epoch and restored by worlds of other sizes, a second time from
mid-way through the first rest.

``python -m tests.elastic_job SPEC_JSON``: SPEC has ``worlds`` (the worlds in turn: the first
begins the epoch, each next one resumes the state its predecessor took after ``after[i]``
batches; the last runs to the epoch's end) and ``out`` (``.json``: each world's samples, with
weight above 0, per batch; ``.npz``: each sample's image as each world made it); ``backend``
picks the engine (OpenCV by default); with
``listing`` (a file list whose labels are the samples' numbers) the samples are its files,
checked beside training (``source.check: background``) with ``on_error``; with ``records`` (a
folder of TFRecords whose labels are the samples' numbers) the records, listed as columns
(``source.listed``); with ``bad`` the
job spoils, once the whole epoch has run, the first file past the first world's batches
(:func:`spoil`); with ``framework`` ``grain`` each world iterates a Grain dataset's iterator,
restoring the Grain state its predecessor's iterator gave; a refused restore or a bad file
ends the job with the error's message in the report's ``error``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

X = np.random.default_rng(1).integers(0, 256, (23, 20, 24, 3), dtype=np.uint8)
Y = np.arange(23)
"""The arrays (labelled by their index) the job reads without a ``listing``."""


def config_of(spec: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's config for ``spec`` (its ``backend``: OpenCV unless given) and the arrays
    ``make_dataset`` takes with it (none with a ``listing``)."""
    config: dict[str, Any] = {
        "source": {"type": "arrays"},
        "image_size": 16,
        "batch_size": 4,
        "backend": spec.get("backend", "opencv"),
        "seed": 5,
        "shuffle": True,
        "transforms": [{"type": "rotation", "angle": 30}, {"type": "brightness", "factor": 0.3}],
    }
    if "records" in spec:
        source = {"type": "tfrecord", "path": spec["records"], "listed": True}
        return config | {"source": source | {"num_classes": 23}, "label_mode": "int"}, {}
    if "listing" not in spec:
        return config, {"x": X, "y": Y}
    config["source"] = {
        "type": "file_list",
        "path": spec["listing"],
        "check": "background",
        "on_error": spec.get("on_error", "raise"),
    }
    return config | {"label_mode": "int"}, {}


def main(spec: dict) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax
    import keras

    import daliaug

    config, arrays = config_of(spec)

    grain = spec.get("framework") == "grain"

    def dataset(world: int, state: Any = None) -> Any:
        devices = jax.devices()[:world]
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(devices=devices) if world > 1 else None
        )
        if not grain:
            return daliaug.make_dataset(config, framework="jax", state=state, **arrays)
        iterator = iter(daliaug.make_dataset(config, framework="grain", **arrays))
        if state is not None:  # Grain's own state of the iterator, restored as Grain does
            iterator.set_state(state)
        return iterator

    def taken(batch: Any) -> tuple[list[int], list[np.ndarray]]:
        images, labels = np.asarray(batch[0]), np.asarray(batch[1]).tolist()
        weights = np.asarray(batch[2]).tolist() if len(batch) > 2 else [1.0] * len(labels)
        kept = [i for i, w in enumerate(weights) if w > 0]
        return [labels[i] for i in kept], [images[i] for i in kept]

    report: dict[str, Any] = {"runs": [], "whole": []}
    images: dict[str, np.ndarray] = {}
    whole = dataset(spec["worlds"][0])
    for batch in whole:  # the first world's epoch, uninterrupted
        labels, pixels = taken(batch)
        report["whole"].append(labels)
        images.update({f"whole{label}": p for label, p in zip(labels, pixels, strict=True)})
    state = None
    for i, world in enumerate(spec["worlds"]):
        if i == 0 and spec.get("bad"):
            spoil(spec["listing"], report["whole"][spec["after"][0]][0])
        seen: list[list[int]] = []
        report["runs"].append({"world": world, "seen": seen})
        try:
            ds = dataset(world, state)
            after = spec["after"][i] if i < len(spec["after"]) else None
            for count, batch in enumerate(ds, 1):
                labels, pixels = taken(batch)
                seen.append(labels)
                named = {f"run{i}_{label}": p for label, p in zip(labels, pixels, strict=True)}
                images.update(named)
                if count == after:
                    break
        except (daliaug.ConfigError, daliaug.DataError) as e:
            report["error"] = str(e)
            break
        state = ds.get_state()
        report["runs"][-1]["state"] = state if grain else state.as_dict()
    out = Path(spec["out"])
    np.savez(out, **images)
    out.with_suffix(".json").write_text(json.dumps(report))


def spoil(listing: str, sample: int) -> None:
    """Cut short the file of ``sample`` in ``listing`` (its header still reads)."""
    for line in Path(listing).read_text().splitlines()[1:]:
        path, label = line.split(",")
        if int(label) == sample:
            file = Path(listing).parent / path
            data = file.read_bytes()
            file.write_bytes(data[: len(data) // 2])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
