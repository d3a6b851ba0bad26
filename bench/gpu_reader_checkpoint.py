"""Whether DALI's own TFRecord reader resumes exactly from its checkpoints on a GPU (issue 56):
daliaug keeps them on the CPU only (:data:`daliaug.reader_checkpoints.CHECKPOINTED`), since
under ``enable_checkpointing`` every operator of the graph saves its state once per epoch, and
that has never run on a GPU here. This turns it on for the GPU, runs three epochs of a
``DaliLoader`` over TFRecords on the GPU (random-resized crop decoded as a window, flip, colour
jitter, rotation: the parameters drawn in DALI's graph), takes its state after every batch,
restores each of a few in a new loader and compares the rest byte for byte. Then, in the same
process, DALI's own JAX iterator on the GPU (what ``make_dataset(framework="jax")`` hands over
there, fed from the host: in-memory arrays, nothing to carry) resumed mid-epoch from a state,
its next batches against the uninterrupted run's (the dry run: DALI's JAX iterator over CPU
pipelines).

    python -m bench.gpu_reader_checkpoint --prepare .gpu-data/records   # here (TensorFlow)
    python -m bench.gpu_reader_checkpoint --data .gpu-data/records --out $OUT   # the GPU host
    python -m bench.gpu_reader_checkpoint --dry-run --data DIR --out DIR   # DALI on the CPU

Writes ``gpu-reader-checkpoint-<date>.json`` and ``.md``; exits 0 where every restore gave the
same batches (both parts), 1 where one did not, 2 where DALI failed (its error in the record).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine

IMAGES = 48
"""Images per class (two classes): six batches of 16 per epoch."""
CHAIN = [
    {"type": "random_resized_crop"},
    {"type": "flip"},
    {"type": "color_jitter", "brightness": 0.3, "contrast": 0.3, "saturation": 0.3, "hue": 0.05},
    {"type": "rotation", "angle": 20},
]


def prepare(folder: Path) -> None:
    """Two class folders of JPEGs as two TFRecord files in ``folder`` (needs TensorFlow)."""
    from PIL import Image

    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("a", "b"):
            (Path(tmp) / name).mkdir()
            for i in range(IMAGES):
                pixels = rng.integers(0, 256, (60 + i % 7, 80, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(Path(tmp) / name / f"{i:03d}.jpg", quality=90)
        write_tfrecords(DirectorySource(path=Path(tmp)).samples(), folder, shards=2)


def config(folder: Path, device: str, index_dir: str) -> dict[str, Any]:
    source = {"type": "tfrecord", "path": str(folder), "index_dir": index_dir}
    return {
        "source": source,
        "image_size": 64,
        "batch_size": 16,
        "backend": device,
        "seed": 1,
        "shuffle": True,
        "label_mode": "int",
        "transforms": CHAIN,
    }


def trial(folder: Path, device: str) -> dict[str, Any]:
    """Three epochs, a state after every batch, and each of a few restored in a new loader."""
    from daliaug import reader_checkpoints

    reader_checkpoints.CHECKPOINTED = ("cpu", "gpu")  # what this trial asks
    from daliaug.outputs.dali_loader import DaliLoader

    with tempfile.TemporaryDirectory() as index_dir:
        made = config(folder, device, index_dir)
        loader = DaliLoader(made)
        per_epoch = len(loader)
        whole, states = [], []
        for _ in range(3):
            for batch in loader:
                whole.append(batch)
                states.append(loader.get_state())
        cases = []
        for k in (1, per_epoch // 2, per_epoch, per_epoch + 2, 2 * per_epoch - 1):
            began = time.perf_counter()
            resumed = DaliLoader(made)
            resumed.set_state(states[k - 1])
            rest = [b for _ in range(3) for b in resumed][: len(whole) - k]
            same = len(rest) == len(whole) - k and all(
                all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
                for a, b in zip(rest, whole[k:], strict=True)
            )
            cases.append({"k": k, "same": same, "seconds": time.perf_counter() - began})
    return {
        "batches_per_epoch": per_epoch,
        "state_bytes": len(states[-1].to_json()),
        "cases": cases,
        "passed": all(c["same"] for c in cases),
    }


def iterator_trial(device: str) -> dict[str, Any]:
    """DALI's JAX iterator on ``device``'s pipelines (``make_dataset``'s JAX output) restored
    after batches 1 and 3 of an epoch of 5: its next batches (the rest of that epoch and the
    next whole) against the uninterrupted run's, labels exactly, pixels within 1."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import daliaug
    from daliaug.outputs import jax as jax_output

    if device == "cpu":  # the dry run: DALI's iterator over CPU pipelines, as on the GPU
        jax_output.iterates = lambda run: True
    rng = np.random.default_rng(2)
    arrays = {"x": rng.integers(0, 256, (40, 48, 56, 3), dtype=np.uint8), "y": np.arange(40)}
    made = {
        "source": {"type": "arrays"},
        "image_size": 32,
        "batch_size": 8,
        "backend": device,
        "seed": 2,
        "shuffle": True,
        "label_mode": "int",
        "transforms": [{"type": "rotation", "angle": 20}, {"type": "brightness", "factor": 0.3}],
    }

    def passes(dataset: Any, count: int) -> list[list[np.ndarray]]:
        return [[np.asarray(a) for a in batch] for _ in range(count) for batch in dataset]

    whole = passes(daliaug.make_dataset(made, framework="jax", **arrays), 2)
    cases = []
    for k in (1, 3):
        taken = daliaug.make_dataset(made, framework="jax", **arrays)
        for count, _ in enumerate(taken, 1):
            if count == k:
                break
        resumed = daliaug.make_dataset(made, framework="jax", state=taken.get_state(), **arrays)
        rest = passes(resumed, 2)
        labels = len(rest) == len(whole) - k and all(
            np.array_equal(a[1], b[1]) for a, b in zip(rest, whole[k:], strict=True)
        )
        differ = max(
            float(np.abs(a[0].astype(float) - b[0]).max())
            for a, b in zip(rest, whole[k:], strict=False)
        )
        cases.append({"k": k, "labels": labels, "max_difference": differ})
    return {
        "iterator_cases": cases,
        "iterators_passed": all(c["labels"] and c["max_difference"] <= 1 for c in cases),
    }


def report(record: dict[str, Any]) -> str:
    lines = [
        f"# DALI's TFRecord reader restored from its checkpoints, {record['device']}",
        "",
        f"- {record['machine']['gpu']}; {record['machine']['date']}; DALI {record['dali']}",
    ]
    if "error" in record:
        lines.append(f"- DALI failed: {record['error']}")
        return "\n".join(lines) + "\n"
    lines += [
        f"- {record['batches_per_epoch']} batches per epoch, state {record['state_bytes']} bytes",
        f"- {'every restore gave the same batches' if record['passed'] else 'FAILED'}",
        "",
        "| restored after batch | same rest | s |",
        "| ---: | --- | ---: |",
    ]
    for case in record["cases"]:
        lines.append(f"| {case['k']} | {case['same']} | {case['seconds']:.2f} |")
    if "iterator_cases" in record:
        verdict = "the same batches" if record["iterators_passed"] else "FAILED"
        lines += [
            "",
            f"DALI's JAX iterator resumed mid-epoch (make_dataset's JAX output): {verdict}",
            "",
            "| restored after batch | labels the same | largest pixel difference |",
            "| ---: | --- | ---: |",
        ]
        for case in record["iterator_cases"]:
            lines.append(f"| {case['k']} | {case['labels']} | {case['max_difference']:g} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_reader_checkpoint")
    parser.add_argument("--prepare", type=Path, help="write the TFRecords to this folder")
    parser.add_argument("--data", type=Path, help="the folder --prepare wrote")
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu"))
    parser.add_argument("--dry-run", action="store_true", help="DALI on the CPU")
    args = parser.parse_args(argv)
    if args.prepare:
        prepare(args.prepare)
        return 0
    if args.data is None:
        parser.error("give --data (the folder --prepare wrote) or --prepare")
    import nvidia.dali

    device = "cpu" if args.dry_run else "gpu"
    record: dict[str, Any] = {"device": device, "dali": nvidia.dali.__version__}
    record["machine"] = machine.describe()
    try:
        record.update(trial(args.data, device))
        record.update(iterator_trial(device))
        code = 0 if record["passed"] and record["iterators_passed"] else 1
    except Exception as e:  # DALI's own failure is what this asks about: keep it
        record["error"] = f"{type(e).__name__}: {e}"
        record["traceback"] = traceback.format_exc()
        code = 2
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"gpu-reader-checkpoint-{'dry-' if args.dry_run else ''}{stamp}"
    args.out.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".json").write_text(json.dumps(record, indent=1, default=str))
    text = report(record)
    base.with_suffix(".md").write_text(text)
    print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
