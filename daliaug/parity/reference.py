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
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daliaug.config import Config, load_config
from daliaug.engine_names import Choice
from daliaug.engines import engine as named_engine
from daliaug.engines.select import Device
from daliaug.errors import DaliaugError, first_line
from daliaug.parity.examples import pipeline_examples, transform_examples
from daliaug.parity.harness import decoder_runs, engine_differences, prepared
from daliaug.parity.inputs import builtin_inputs, image_samples
from daliaug.parity.measure import Stats
from daliaug.parity.report import Kind, Report, Result
from daliaug.parity.run import run_tf
from daliaug.sources import Samples

FORMAT = 1
SHIPPED = Path(__file__).with_name("reference.npz")
"""The reference shipped with the package (what ``daliaug selftest`` checks DALI against)."""
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


def _cases(files: Samples, jpegs: list[int], seed: int) -> list[ReferenceCase]:
    """The cases to store, with their TF outputs; ``jpegs`` are the JPEGs among ``files``
    (the rest are PNGs)."""
    pngs = [i for i in range(len(files)) if i not in jpegs]
    source = Path(files.paths[0]).parent
    pipelines = pipeline_examples()
    named = [(n, "transform", c, pngs) for n, c in transform_examples(source)]
    named += [(n, "pipeline", c, pngs) for n, c in pipelines]
    named += [(f"{n} on JPEGs", "decoder", c, jpegs) for n, c in pipelines if _fuses_crop(c)]
    cases = []
    for name, kind, config, indices in named:
        h, w = config.image_size
        inputs = indices[: max(1, OUTPUT_PIXELS // (h * w))]
        run, rows = prepared(config, len(inputs), seed)
        cases.append(_computed(name, kind, run, files, inputs, rows))
    for run, group in decoder_runs(named[0][2], files.subset(jpegs)):
        rows = np.zeros((len(group), 0), np.float32)
        inputs = [jpegs[i] for i in group]
        cases.append(_computed("JPEG decoders", "decoder", run, files, inputs, rows))
    return cases


def _fuses_crop(config: Config) -> bool:
    return config.plan.roi_step is not None


def _computed(
    name: str, kind: Kind, config: Config, files: Samples, inputs: list[int], rows: np.ndarray
) -> ReferenceCase:
    outputs = run_tf(config, files.subset(inputs), rows)
    return ReferenceCase(name, kind, config, inputs, rows, outputs)


def write_reference(path: Path, seed: int) -> Path:
    """Compute the TF reference outputs and store them, with inputs and parameters, at ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = builtin_inputs(Path(tmp))
        assert inputs.jpeg is not None
        files = image_samples(inputs.lossless.paths + inputs.jpeg.paths)
        cases = _cases(files, list(range(len(inputs.lossless), len(files))), seed)
        contents = [Path(p).read_bytes() for p in files.paths]
    names = [Path(p).name for p in files.paths]
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
    arrays.update({f"file_{i}": np.frombuffer(b, np.uint8) for i, b in enumerate(contents)})
    for i, c in enumerate(cases):
        arrays[f"rows_{i}"] = c.rows
        arrays[f"outputs_{i}"] = c.outputs
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_reference(path: Path, workdir: Path) -> tuple[Samples, list[ReferenceCase], int]:
    """The stored input files (written into ``workdir``), the cases and the seed they used."""
    with np.load(path) as data:
        manifest = json.loads(data["manifest"].tobytes())
        if manifest["format"] != FORMAT:
            raise ValueError(f"{path}: reference format {manifest['format']}, expected {FORMAT}")
        paths = []
        for i, name in enumerate(manifest["files"]):
            paths.append(workdir / name)
            paths[-1].write_bytes(data[f"file_{i}"].tobytes())
        files = image_samples([str(p) for p in paths])
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


def check_reference(
    path: Path,
    device: Device,
    decode_window: str | None = None,
    engine: str = "dali",
    first: Collection[str] = (),
    on_case: Callable[[Result | str, str], None] | None = None,
) -> Report:
    """DALI on ``device`` (or the OpenCV engine, ``engine="opencv"``, every case) against the
    stored TF outputs (no TensorFlow needed); cases of the same name (the decoders at each
    image size) are pooled into one row; without the cases DALI cannot run on ``device``; a
    case whose engine raises is a named error of the report, and the others still run.
    ``decode_window``: every case's, where given (``whole`` on a GPU: decoded with fancy
    upsampling, as the reference was). The cases named in ``first`` run before the others;
    ``on_case`` hears each case's row (or error) and name as soon as it ran, so that a check
    stopped midway still tells what it found."""
    checked = named_engine(engine)
    device = checked.device(device)
    pooled: dict[tuple[str, Kind], list[np.ndarray]] = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files, cases, seed = load_reference(path, Path(tmp))
        for c in sorted(cases, key=lambda c: c.name not in first):
            if checked.lacks(c.config, device):
                continue
            config = c.config
            if decode_window is not None:
                config = config.model_copy(update={"decode_window": decode_window})
            try:
                diff = engine_differences(
                    config, files.subset(c.inputs), c.rows, c.outputs, Choice(checked.name, device)
                )
            except (DaliaugError, RuntimeError) as e:  # DALI's own errors are RuntimeErrors
                errors[c.name] = f"{type(e).__name__}: {first_line(e)}"
                if on_case is not None:
                    on_case(errors[c.name], c.name)
                continue
            pooled.setdefault((c.name, c.kind), []).append(diff)
            if on_case is not None:
                on_case(Result(c.name, c.kind, Stats.of_differences(diff)), c.name)
    results = [
        Result(name, kind, Stats.of_differences(np.concatenate(parts)))
        for (name, kind), parts in pooled.items()
        if name not in errors
    ]
    return Report(f"{checked.label(device)} vs stored TF reference", seed, results, errors=errors)
