"""Fuzzing: a few hundred mutated JPEGs and PNGs through the check and through make_dataset on
both backends (in processes of their own, so that a signal death or a hang would show): every
file is either decoded or named with its reason; and random configs: the valid ones build and
run, the invalid ones fail with errors naming the field."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from tests.helpers import structured_image
from tests.test_config import _transform

ROOT = Path(__file__).parents[1]
BOUND = 600
"""Seconds a fuzzing process may take before it counts as hung."""


def encoded(image: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format=fmt, quality=85)
    return out.getvalue()


def mutations(rng: np.random.Generator, data: bytes, fmt: str) -> dict[str, bytes]:
    """One file's mutants, by kind."""
    raw = bytearray(data)
    flipped = bytearray(raw)
    for i in rng.integers(0, len(raw), rng.integers(1, 20)):
        flipped[i] ^= int(rng.integers(1, 256))
    header = bytearray(raw)
    for i in rng.integers(2, min(len(raw), 80), 6):
        header[i] = int(rng.integers(0, 256))
    huge = bytearray(raw)
    if fmt == "JPEG":
        sof = huge.find(b"\xff\xc0")
        huge[sof + 5 : sof + 9] = rng.integers(0x80, 0x100, 4, dtype=np.uint8).tobytes()
    else:
        huge[16:24] = rng.integers(0x40, 0x80, 8, dtype=np.uint8).tobytes()
    cut = int(rng.integers(1, len(raw)))
    return {
        "flipped": bytes(flipped),
        "header": bytes(header),
        "huge": bytes(huge),
        "truncated": bytes(raw[:cut]),
        "junk": bytes(raw) + rng.integers(0, 256, 300, dtype=np.uint8).tobytes(),
        "empty": b"",
        "garbage": rng.integers(0, 256, int(rng.integers(10, 2000)), dtype=np.uint8).tobytes(),
    }


@pytest.fixture(scope="module")
def mutants(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """28 originals (JPEG and PNG) and 7 mutants of each (some under the other format's
    extension): 224 files in two class folders."""
    root = tmp_path_factory.mktemp("fuzz")
    rng = np.random.default_rng(2026)
    for i in range(28):
        fmt = "JPEG" if i % 2 else "PNG"
        data = encoded(structured_image(24 + i % 5, 32, seed=i), fmt)
        folder = root / "ab"[i % 2]
        folder.mkdir(exist_ok=True)
        ext = {"JPEG": ".jpg", "PNG": ".png"}
        (folder / f"{i:03d}-original{ext[fmt]}").write_bytes(data)
        for kind, mutant in mutations(rng, data, fmt).items():
            wrong = rng.random() < 0.2  # the other format's extension
            suffix = ext["PNG" if fmt == "JPEG" else "JPEG"] if wrong else ext[fmt]
            (folder / f"{i:03d}-{kind}{suffix}").write_bytes(mutant)
    return root


def run(code: str, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=BOUND
    )
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr[-3000:]}"
    return result


MAKE_DATASET = """
import sys, warnings, daliaug
config = {{"source": {{"type": "directory", "path": {root!r}, "on_error": "skip"}},
    "image_size": 16, "batch_size": 8, "backend": {backend!r}, "num_threads": 1,
    "transforms": [{{"type": "rotation", "angle": 30}}]}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = daliaug.make_dataset(config)
warning = next(w.message for w in caught if w.category is daliaug.DataWarning)
listed = str(warning).rsplit(" in ", 1)[1]
for epoch in range(2):
    count = sum(int(b[1].shape[0]) for b in ds)
print(count, listed)
"""


@pytest.mark.parametrize("backend", ["cpu", "tf"])
def test_mutated_files_are_decoded_or_named(mutants: Path, tmp_path: Path, backend: str) -> None:
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = run(MAKE_DATASET.format(root=str(mutants), backend=backend), env)
    assert result.returncode == 0, result.stderr[-3000:]
    count, listed = result.stdout.split()
    named = dict(line.split("\t", 1) for line in Path(listed).read_text().splitlines())
    files = {str(p) for p in mutants.rglob("*.*")}
    assert set(named) <= files and all(reason.strip() for reason in named.values())
    assert int(count) == len(files) - len(named)  # the rest trained, epoch after epoch
    originals = {str(p) for p in mutants.rglob("*-original.*")}
    assert not originals & set(named)
    empty = {str(p) for p in mutants.rglob("*-empty.*")}
    assert empty <= set(named) and len(named) >= 100


def test_the_check_command_names_every_bad_mutant(mutants: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    code = "import sys; from daliaug.cli import main; sys.exit(main(['check', sys.argv[1]]))"
    result = subprocess.run(
        [sys.executable, "-c", code, str(mutants)],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "300"},
        timeout=BOUND,
    )
    assert result.returncode == 3, result.stderr[-3000:]
    listed = Path(result.stderr.rsplit("are listed in ", 1)[1].split()[0])
    named = [line.split("\t")[0] for line in listed.read_text().splitlines()]
    assert len(named) == len(set(named)) >= 100


_outputs = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["float32", "float16", "uint8"]),
        "layout": st.sampled_from(["NHWC", "NCHW"]),
    }
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(_transform, max_size=5),
    _outputs,
    st.integers(8, 48),
    st.sampled_from(["cpu", "tf"]),
)
def test_fuzzed_valid_configs_build_and_run(
    square_dir: Path, transforms: list[dict], output: dict, size: int, backend: str
) -> None:
    import daliaug

    config = {
        "source": {"type": "directory", "path": str(square_dir)},
        "image_size": size,
        "batch_size": 2,
        "backend": backend,
        "num_threads": 1,
        "transforms": transforms,
        "output": output,
    }
    images, _ = next(iter(daliaug.make_dataset(config)))
    h, w = (size, size)
    expected = (1, h, w, 3) if output["layout"] == "NHWC" else (1, 3, h, w)
    assert tuple(images.shape) == expected and images.dtype.name == output["dtype"]
