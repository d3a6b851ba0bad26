"""Stored TensorFlow outputs, so that DALI can be checked where TensorFlow is missing (the GPU
host has DALI but no TensorFlow).

:func:`write_reference` (needs TensorFlow) runs the TF backend on the built-in images for every
transform example and every shipped pipeline, with explicit parameters, and for the JPEG
decoder alone; it stores the inputs (PNG and JPEG bytes), the parameters and the outputs in one
compressed ``.npz``. :func:`check_reference` (needs DALI only) runs DALI on the same inputs and
parameters and reports the differences with the harness's tolerances. CI recomputes the TF
outputs (:func:`load_reference` + :func:`daliaug.parity.run.run_tf`) so that the stored ones
cannot go stale.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daliaug.config import Config, load_config
from daliaug.device import Device
from daliaug.parity.examples import pipeline_examples, transform_examples
from daliaug.parity.harness import compare_case, decoder_runs, prepared
from daliaug.parity.inputs import builtin_inputs
from daliaug.parity.measure import Stats
from daliaug.parity.report import Kind, Report, Result
from daliaug.parity.run import run_dali, run_tf
from daliaug.sources import FileSamples

FORMAT = 1
OUTPUT_PIXELS = 3 * 64 * 64
"""Output pixels per case (at least one image): keeps the file small."""


@dataclass(frozen=True)
class ReferenceCase:
    """One stored comparison: a config run on some of the inputs with explicit parameters."""

    name: str
    kind: Kind
    config: Config
    inputs: list[int]
    """Indices into the stored input files."""
    rows: np.ndarray
    outputs: np.ndarray
    """The TensorFlow backend's outputs (uint8, NHWC)."""


def _cases(png: FileSamples, jpeg: FileSamples, seed: int) -> list[ReferenceCase]:
    """The cases to store, with their TF outputs (input indices: PNGs first, then JPEGs)."""
    source = Path(png.paths[0]).parent
    named = [(n, "transform", c) for n, c in transform_examples(source)]
    named += [(n, "pipeline", c) for n, c in pipeline_examples(source)]
    cases = []
    for name, kind, config in named:
        h, w = config.image_size
        inputs = list(range(max(1, min(len(png), OUTPUT_PIXELS // (h * w)))))
        run, rows = prepared(config, len(inputs), seed)
        outputs = run_tf(run, png.subset(inputs), rows)
        cases.append(ReferenceCase(name, kind, run, inputs, rows, outputs))
    for run, indices in decoder_runs(named[0][2], jpeg):
        rows = np.zeros((len(indices), 0), np.float32)
        outputs = run_tf(run, jpeg.subset(indices), rows)
        h, w = run.image_size
        inputs = [len(png) + int(i) for i in indices]
        cases.append(ReferenceCase(f"JPEG decoder {h}x{w}", "decoder", run, inputs, rows, outputs))
    return cases


def write_reference(path: Path, seed: int) -> Path:
    """Compute the TF reference outputs and store them, with inputs and parameters, at ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = builtin_inputs(Path(tmp))
        assert inputs.jpeg is not None
        cases = _cases(inputs.lossless, inputs.jpeg, seed)
        files = [Path(p).read_bytes() for p in inputs.lossless.paths + inputs.jpeg.paths]
        names = [Path(p).name for p in inputs.lossless.paths + inputs.jpeg.paths]
    manifest = {
        "format": FORMAT,
        "seed": seed,
        "files": names,
        "cases": [
            {
                "name": c.name,
                "kind": c.kind,
                "inputs": c.inputs,
                "config": c.config.model_dump(mode="json"),
            }
            for c in cases
        ],
    }
    arrays = {"manifest": np.frombuffer(json.dumps(manifest).encode(), np.uint8)}
    arrays.update({f"file_{i}": np.frombuffer(b, np.uint8) for i, b in enumerate(files)})
    for i, c in enumerate(cases):
        arrays[f"rows_{i}"] = c.rows
        arrays[f"outputs_{i}"] = c.outputs
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_reference(path: Path, workdir: Path) -> tuple[FileSamples, list[ReferenceCase], int]:
    """The stored input files (written into ``workdir``), the cases and the seed they used."""
    with np.load(path) as data:
        manifest = json.loads(data["manifest"].tobytes())
        if manifest["format"] != FORMAT:
            raise ValueError(f"{path}: reference format {manifest['format']}, expected {FORMAT}")
        paths = []
        for i, name in enumerate(manifest["files"]):
            paths.append(workdir / name)
            paths[-1].write_bytes(data[f"file_{i}"].tobytes())
        files = FileSamples([str(p) for p in paths], np.zeros(len(paths), np.int32), ["images"])
        cases = [
            ReferenceCase(
                c["name"],
                c["kind"],
                load_config({**c["config"], "source": {"type": "directory", "path": str(workdir)}}),
                c["inputs"],
                data[f"rows_{i}"],
                data[f"outputs_{i}"],
            )
            for i, c in enumerate(manifest["cases"])
        ]
    return files, cases, int(manifest["seed"])


def check_reference(path: Path, device: Device) -> Report:
    """DALI on ``device`` against the stored TF outputs (no TensorFlow needed).

    The decoder cases are pooled into one row, like the harness's decoder comparison.
    """
    with tempfile.TemporaryDirectory() as tmp:
        files, cases, seed = load_reference(path, Path(tmp))
        results = []
        decoded: list[tuple[np.ndarray, np.ndarray]] = []
        for c in cases:
            samples = files.subset(c.inputs)
            if c.kind == "decoder":
                decoded.append(
                    (run_dali(c.config, samples, c.rows, device).ravel(), c.outputs.ravel())
                )
                continue
            results.append(
                Result(c.name, c.kind, compare_case(c.config, samples, c.rows, c.outputs, device))
            )
    if decoded:
        dali, stored = (np.concatenate(parts) for parts in zip(*decoded, strict=True))
        results.append(Result("JPEG decoders", "decoder", Stats.of(dali, stored)))
    return Report(f"DALI-{device.upper()} vs stored TF reference", seed, results)
