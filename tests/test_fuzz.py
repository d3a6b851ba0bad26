"""Fuzzing: a few hundred mutated JPEGs and PNGs through the check and through make_dataset on
both backends (in processes of their own, so that a signal death or a hang would show): every
file is either decoded or named with its reason; and random configs: the valid ones build and
run, the invalid ones fail with errors naming the field."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from pydantic import BaseModel

from daliaug.engines.select import dali_lacks
from daliaug.parity.examples import TRANSFORM_EXAMPLES
from tests.helpers import spec_of, structured_image
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
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


# ---------------------------------------------------------------- every numeric config field

SOURCES = {
    "arrays": {"type": "arrays"},
    "directory": {"type": "directory", "path": "data"},
    "tfrecord": {"type": "tfrecord", "path": "records"},
    "webdataset": {"type": "webdataset", "path": "shards"},
    "segmentation": {"type": "segmentation", "images": "i", "masks": "m", "num_classes": 3},
}


def numeric_fields() -> list[str]:
    """Every config field whose type holds a number (or numbers), as ``section[.kind].name``
    (``shard_id`` and ``num_shards``, shared by every source, on the arrays source)."""
    from daliaug.config import Config, Output
    from daliaug.sources.base import SourceConfig
    from daliaug.transforms import TRANSFORMS

    def numeric(model: type) -> set[str]:
        def holds_numbers(kind: object) -> bool:
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                return bool(numeric(kind))
            pattern = r"(?<![\w'])(int|float)(?![\w'])|Literal\[\d"  # not Literal['int']
            return kind in (int, float) or bool(re.search(pattern, repr(kind)))

        return {n for n, f in model.model_fields.items() if holds_numbers(f.annotation)}

    found = {n for n in numeric(Config) if n not in ("source", "transforms", "output")}
    found |= {f"output.{n}" for n in numeric(Output)}
    found |= {f"source.{k}.{n}" for k, m in SourceConfig.registry.items() for n in numeric(m)}
    found |= {f"transforms.{k}.{n}" for k, m in TRANSFORMS.items() for n in numeric(m)}
    shared = {"shard_id", "num_shards"}
    return sorted(f for f in found if f.rsplit(".", 1)[-1] not in shared or ".arrays." in f)


ENTRIES = {example["type"]: example for example in reversed(TRANSFORM_EXAMPLES)}
"""A valid entry of each transform (the first of its parity examples), to which the field under
test is added."""
NUMERIC = numeric_fields()
"""Every config field that takes a number (or numbers), as ``section[.kind].name``."""

NAN, INF = float("nan"), float("inf")
ADVERSARIAL = [
    NAN, INF, -INF, -1, 0, 1, 0.5, 1e-320, 1e30, -1e30, 10**30, -(10**30), 2**63, "7", True,
    None, [], [0.1, 0.2], [2, 1], [NAN, 1.0], [1.0, INF], [[1]], {"a": 1},
]  # fmt: skip
"""NaN, infinities, negative, zero, tiny, huge and wrong-typed values, and a few fine ones."""

_adversarial = st.sampled_from(ADVERSARIAL)
_values = _adversarial | st.one_of(
    st.floats(),
    st.integers(-(2**70), 2**70),
    st.lists(st.floats(), max_size=3),
    st.text(max_size=3),
)


def config_with(path: str, value: object) -> dict:
    """A config over tiny in-memory arrays (or the field's own source) with ``path`` set."""
    config = {"source": dict(SOURCES["arrays"]), "image_size": 8, "batch_size": 2}
    config |= {"label_mode": "categorical"}  # soft labels, which batch stages need
    config |= {"num_threads": 1, "seed": 1, "shuffle": False}
    section, *rest = path.split(".")
    if section == "transforms":
        kind, name = rest
        config["transforms"] = [{**ENTRIES.get(kind, {"type": kind}), name: value}]
    elif section == "source":
        kind, name = rest
        config["source"] = {**SOURCES[kind], name: value}
    elif section == "output":
        config["output"] = {rest[0]: value}
    else:
        config[section] = value
    return config


def named(path: str, message: str) -> bool:
    """Whether a ConfigError's message names the field at ``path``."""
    section, name = path.split(".")[0], path.rsplit(".", 1)[-1]
    if path.startswith("transforms.normalize.") and "output" in message and name in message:
        return True  # a normalize transform becomes the output's normalization
    where = {"transforms": "transforms.0", "source": "source."}.get(section, section)
    return where in message and name in message


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(st.sampled_from(NUMERIC), _values)
def test_numeric_fields_are_valid_or_named(path: str, value: object) -> None:
    """Any value in any numeric field: a ConfigError naming the field (and no other exception),
    or a config whose first batch's warp the host computes without a NaN or an infinity."""
    from daliaug.config import load_config
    from daliaug.engines.feed import EpochFeed
    from daliaug.errors import ConfigError, DataError
    from daliaug.prepare import prepare_samples

    try:
        config = load_config(config_with(path, value))
    except ConfigError as e:
        assert named(path, str(e)), str(e)
        return
    if config.source.type != "arrays":
        return
    try:
        samples = prepare_samples(config, x=TINY[..., : config.channels], y=np.zeros(4, int))
    except DataError as e:  # more shards than samples
        assert "is empty" in str(e), str(e)
        return
    except ConfigError as e:  # a field the samples cannot take (flip_indices without keypoints)
        assert named(path, str(e)), str(e)
        return
    batch = next(EpochFeed(spec_of(config), samples, resizes=False).batches(0, ("warp",)))
    assert np.all(np.isfinite(batch["warp"]))


TINY = np.stack([structured_image(8, 8, seed=i) for i in range(4)])


@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(st.sampled_from([p for p in NUMERIC if ".arrays." in p or "source." not in p]), _adversarial)
def trains_or_is_refused(path: str, value: object) -> None:
    """Run by :func:`test_numeric_fields_train_one_batch_or_are_refused` in a process of its
    own: a ConfigError naming the field, or one batch on both engines, finite."""
    import daliaug

    try:
        daliaug.load_config(config_with(path, value))
    except daliaug.ConfigError as e:
        assert named(path, str(e)), str(e)
        return
    lacking = dali_lacks(daliaug.load_config(config_with(path, value)), "cpu")
    for backend in ("tf",) if lacking else ("cpu", "tf"):
        config = daliaug.load_config({**config_with(path, value), "backend": backend})
        x = TINY[..., : config.channels]
        try:
            images, _ = next(iter(daliaug.make_dataset(config, x=x, y=np.zeros(4, int))))
        except daliaug.DataError as e:  # more shards than samples
            assert "is empty" in str(e), str(e)
            return
        assert np.all(np.isfinite(np.asarray(images, np.float32))), (path, value, backend)
    print(f"trained: {path} = {value!r}", flush=True)


@pytest.mark.slow
def test_numeric_fields_train_one_batch_or_are_refused(tmp_path: Path) -> None:
    """Adversarial values in every numeric field, through both engines in a process of its own
    (a signal death or a hang fails the test instead of ending the run)."""
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    code = "from tests.test_fuzz import trains_or_is_refused; trains_or_is_refused()"
    command = [sys.executable, "-c", code]
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=BOUND
    )
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-3000:]}"
    assert "trained:" in result.stdout  # some values were fine, and trained
