"""Test helpers: synthetic images with real structure, and small datasets on disk."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
from PIL import Image

from daliaug.config import Config, load_config
from daliaug.engine_names import Choice, Device
from daliaug.engine_spec import EngineSpec
from daliaug.engines import NAMES
from daliaug.engines.select import Placement, choose, placed
from daliaug.epoch import resolve_seed
from daliaug.parity.run import outputs
from daliaug.prepare import prepare, prepare_samples
from daliaug.run import Run
from daliaug.sources.sample_set import SampleSet


def structured_image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    """An RGB uint8 image with gradients, sharp edges, a checkerboard and fine texture."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * x / max(1, w - 1)
    g = 255 * y / max(1, h - 1)
    b = 127.5 + 100 * np.sin(x / 3.0) * np.cos(y / 5.0)
    img = np.stack([r, g, b], axis=-1)
    img[(x // 8 + y // 8) % 2 == 0] *= 0.6  # checkerboard edges
    img[h // 4 : h // 4 + 3, :] = (255, 255, 0)  # a bright horizontal bar
    img += rng.normal(0, 6, img.shape)  # fine texture
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def sample_photos() -> tuple[np.ndarray, np.ndarray]:
    """Two 427x640 RGB uint8 photos made from matplotlib's sample photo (``grace_hopper.jpg``,
    shipped with matplotlib, which daliaug needs): the photo resized, and its lower part
    turned a quarter. Real photographic texture without scikit-learn, whose import Keras
    makes at every start when it is installed (2 s a process here)."""
    from matplotlib import cbook

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        photo = Image.open(f).convert("RGB")
    turned = photo.crop((0, 200, 512, 600)).transpose(Image.Transpose.ROTATE_90)
    size = (640, 427)
    return tuple(np.asarray(p.resize(size, Image.Resampling.BILINEAR)) for p in (photo, turned))


def rendered_digits(count: int, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` greyscale ``size`` x ``size`` uint8 images of the digits 0-9 drawn in
    Pillow's default font at random sizes, places and strokes, with noise, and their labels:
    a small learnable ten-class set (the shape of scikit-learn's digits, upscaled)."""
    from PIL import ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count)
    images = np.empty((count, size, size), np.uint8)
    for i, label in enumerate(labels):
        canvas = Image.new("L", (size, size))
        font = ImageFont.load_default(float(rng.uniform(0.55, 0.8) * size))
        x, y = rng.uniform(0.05, 0.35, 2) * size
        stroke = int(rng.integers(0, 2))
        ImageDraw.Draw(canvas).text((x, y - size * 0.1), str(label), 255, font, stroke_width=stroke)
        noisy = np.asarray(canvas, np.float32) + rng.normal(0, 20, (size, size))
        images[i] = np.clip(noisy, 0, 255).astype(np.uint8)
    return images, labels.astype(np.int32)


def write_image_dir(root: Path, images: dict[str, list[np.ndarray]], fmt: str = "png") -> Path:
    """``root/<class>/<i>.<fmt>`` for each class's list of images."""
    for name, arrays in images.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i, array in enumerate(arrays):
            Image.fromarray(array).save(root / name / f"{i:04d}.{fmt}", quality=95)
    return root


def config_for(root: Path, **fields: Any) -> Config:
    """A config over the class folders at ``root`` with ``fields`` set (default: DALI on the
    CPU)."""
    base: dict[str, Any] = {
        "source": {"type": "directory", "path": str(root)},
        "image_size": 64,
        "batch_size": 4,
        "shuffle": False,
        "seed": 7,
        "backend": "cpu",
        "num_threads": 1,
    }
    return load_config({**base, **fields})


ENGINE_BACKENDS = {
    placed(placement).engine: placement
    for placement in get_args(Placement)
    if placed(placement).device == "cpu"
}
"""The config's ``backend`` that runs each engine on the CPU (``cpu``: DALI's CPU pipeline)."""

ENGINES = tuple(name for name in NAMES if name in ENGINE_BACKENDS)
"""The engines the tests run, on the CPU: every one of :data:`daliaug.engines.NAMES`."""
BACKENDS = tuple(ENGINE_BACKENDS[name] for name in ENGINES)
"""Each engine's ``backend`` on the CPU, in the engines' order: ``cpu`` (DALI), ``tf``,
``opencv``."""


def run_of(
    config: Config, samples: SampleSet | None = None, device: Device = "cpu", engine: str = "dali"
) -> Run:
    """The run of ``config`` over ``samples`` (default: its source's, checked against it) on
    ``engine`` and ``device``, as ``prepare`` makes it but without the decode check."""
    listed = prepare_samples(config) if samples is None else samples
    return Run.of(config, listed, Choice(engine, device))  # type: ignore[arg-type]


def spec_of(config: Config, device: Device = "cpu") -> EngineSpec:
    """The engine spec of ``config`` run on ``device`` as it stands (its seed, else a fresh
    one; its GPU; its batch)."""
    return EngineSpec.of(
        config, device, config.device_id, resolve_seed(config.seed), config.batch_size
    )


def prepared(config: Config) -> Run:
    """``prepare`` of ``config`` on the engine and device it chooses for ``tf.data``."""
    return prepare(config, choose(config))


def run_backend(config: Config, rows: np.ndarray | None = None) -> np.ndarray:
    """All output images of the config's samples in order, from the engine its backend places
    on the CPU (:data:`ENGINE_BACKENDS`), with explicit parameters ``rows`` if given."""
    return outputs(placed(config.backend).engine, config, config.source.samples(), rows)[0]


def augment(
    backend: str,
    root: Path,
    transforms: list[dict],
    size: int = 64,
    params: dict | None = None,
    **fields: Any,
) -> np.ndarray:
    """The first output image (float, 0..255 scale unless normalized) on ``backend``, with
    explicit ``params`` if given."""
    config = config_for(root, image_size=size, transforms=transforms, backend=backend, **fields)
    plan = config.plan
    rows = None
    if params is not None:
        rows = np.array([[params[k] for k in plan.param_keys]], dtype=np.float32)
    return run_backend(config, rows)[0].astype(np.float64)


def run_together(module: str, specs: list[dict], env: dict[str, str], timeout: float) -> list[dict]:
    """``python -m module SPEC`` for every spec at once (processes that talk to each other, as
    distributed jobs do), each writing JSON to its spec's ``out``: their results, in order. A
    process that fails, or that is still running ``timeout`` seconds after they all started,
    fails the test with its output; a hung one first prints every thread's Python stack
    (``faulthandler`` on ``SIGABRT``), so that a hang says where it was."""
    root = Path(__file__).parents[1]
    jobs = [
        subprocess.Popen(
            [sys.executable, "-m", module, json.dumps(spec)],
            cwd=root,
            env={**env, "PYTHONFAULTHANDLER": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for spec in specs
    ]
    deadline = time.monotonic() + timeout
    logs = []
    try:
        for job in jobs:
            logs.append(job.communicate(timeout=max(0.0, deadline - time.monotonic()))[0])
    except subprocess.TimeoutExpired:
        for job in jobs[len(logs) :]:
            job.send_signal(signal.SIGABRT)
        logs += [job.communicate()[0] for job in jobs[len(logs) :]]
        report = "\n".join(
            f"--- exit {job.returncode}: {job.args[-1]}\n{log[-6000:]}"
            for job, log in zip(jobs, logs, strict=True)
        )
        pytest.fail(f"{module} ran past {timeout} s:\n{report}")
    for job, log in zip(jobs, logs, strict=True):
        assert job.returncode == 0, log[-4000:]
    return [json.loads(Path(spec["out"]).read_text()) for spec in specs]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing holds, below the kernel's ephemeral range, so that no
    connection made meanwhile (the ranks' own, or any other process's) is handed it as its
    local port before the rendezvous binds it."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 10000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 below {low}")


def run_keras_job(
    module: str, backend: str, spec: dict, timeout: float, env: dict[str, str] | None = None
) -> tuple[dict, dict[str, np.ndarray]]:
    """``python -m module SPEC`` on Keras' ``backend`` in a process of its own (with ``env``
    added to this one's): the report it writes next to ``spec["out"]`` (``.json``) and the
    arrays in ``spec["out"]`` (``.npz``)."""
    env = {**os.environ, **(env or {}), "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.run(
        [sys.executable, "-m", module, json.dumps(spec)],
        cwd=Path(__file__).parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-4000:]
    out = Path(spec["out"])
    with np.load(out) as arrays:
        return json.loads(out.with_suffix(".json").read_text()), dict(arrays)


def shards_config(kind: str, path: str | Path, tmp_path: Path, **fields: Any) -> Config:
    """A small config over the shards at ``path`` (a ``kind`` source, its indexes kept in
    ``tmp_path / "idx"``): a random crop and brightness to 32x32 in batches of 4, seed 3, one
    thread; ``source`` goes into the source, the other ``fields`` into the config."""
    source = {"type": kind, "path": str(path), "index_dir": str(tmp_path / "idx")}
    source |= fields.pop("source", {})
    base = {
        "source": source,
        "image_size": 32,
        "batch_size": 4,
        "seed": 3,
        "num_threads": 1,
        "transforms": [{"type": "random_resized_crop"}, {"type": "brightness", "factor": 0.2}],
    }
    return load_config({**base, **fields})


def joined_epoch(dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    """One epoch's images and labels, joined."""
    batches = [(np.asarray(x), np.asarray(y)) for x, y in dataset]
    return np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])


RUNS = """
import json, sys
from daliaug.cli import main
for args in json.loads(sys.argv[1]):
    print("=== daliaug", *args, file=sys.stderr, flush=True)
    code = main(args)
    print(f"=== exit {code}", file=sys.stderr, flush=True)
"""


def daliaug_runs(*runs: list, env: dict) -> list[tuple[int, str]]:
    """Each of ``runs`` (a command line's arguments) in turn in one process, as the ``daliaug``
    script runs one (``daliaug.cli.main``): one start of Python, DALI and TensorFlow for all.
    Returns each run's exit code and what it printed on stderr."""
    result = subprocess.run(
        [sys.executable, "-c", RUNS, json.dumps([list(map(str, args)) for args in runs])],
        capture_output=True,
        text=True,
        timeout=600 * len(runs),  # as much as each run had in a process of its own
        cwd=Path(__file__).parents[1],
        env={**os.environ, **env},
    )
    parts = re.findall(r"^=== daliaug .*?\n(.*?)^=== exit (\d+)$", result.stderr, re.M | re.S)
    assert result.returncode == 0 and len(parts) == len(runs), result.stderr[-3000:]
    return [(int(code), text) for text, code in parts]


def gpu_dry_run(
    script: str, tmp_path: Path, *args: str, timeout: float = 900, **env: str
) -> tuple[subprocess.CompletedProcess, Path]:
    """``bash bench/<script> --dry-run *args`` (DALI's CPU operators standing in for the GPU),
    its results and daliaug's cache under ``tmp_path``, this interpreter as its Python; the
    finished process and the folder of its results (``$OUT``)."""
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", f"bench/{script}", "--dry-run", *args],
        cwd=Path(__file__).parents[1],
        env={
            **os.environ,
            "OUT": str(out),
            "PYTHON": sys.executable,
            "DALIAUG_CACHE": str(tmp_path / "cache"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, out
