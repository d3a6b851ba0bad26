"""The property behind every named fault: whatever the config and whatever happens to the files
between building and iterating, an exception that leaves the public API (``load_config``,
``make_dataset`` on the ``tf.data``, JAX and PyTorch outputs, ``build_pipeline``,
``DaliLoader``, the CLI) is a :class:`~daliaug.errors.DaliaugError` (or ``KeyboardInterrupt``),
and an epoch over a file broken or swapped for another (keeping its size and time) never ends
without one.
Hypothesis draws the cases; they run in a process of their own under a time limit, so that a
crash or a hang fails the test instead of ending the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from itertools import count
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from daliaug.parity.examples import TRANSFORM_EXAMPLES
from tests.helpers import structured_image, write_image_dir
from tests.test_config import _transform
from tests.test_fuzz import ADVERSARIAL, NUMERIC

ROOT = Path(__file__).parents[1]
BOUND = 480
"""Seconds the cases may take together before they count as hung."""

ENTRIES = ["load_config", "tf.data/cpu", "tf.data/tf", "jax", "torch", "build_pipeline"]
ENTRIES += ["DaliLoader", "cli validate", "cli check"]
FAULTS = ["none", "garbage", "swapped", "truncated", "emptied", "deleted", "folder"]
"""What happens to one file (or its class folder) between building and iterating."""

_field = st.sampled_from([p for p in NUMERIC if not p.startswith("source.")])
_config = st.fixed_dictionaries(
    {
        "transforms": st.lists(_transform | st.sampled_from(TRANSFORM_EXAMPLES), max_size=3),
        "label_mode": st.sampled_from(["int", "categorical"]),
        "image_size": st.integers(4, 40),
        "batch_size": st.integers(1, 5),
    }
)
_mutation = st.tuples(st.integers(0, 3), _field, st.sampled_from(ADVERSARIAL)).map(
    lambda drawn: drawn[1:] if drawn[0] == 0 else None  # a quarter of the cases
)


def with_field(config: dict, path: str, value: object) -> dict:
    """``config`` with the field at ``path`` (as ``tests.test_fuzz.NUMERIC`` names it) set."""
    section, *rest = path.split(".")
    if section == "transforms":
        return {**config, "transforms": [*config["transforms"], {"type": rest[0], rest[1]: value}]}
    if section == "output":
        return {**config, "output": {rest[0]: value}}
    return {**config, section: value}


def break_file(data: Path, fault: str) -> None:
    victim = data / "b" / "0001.jpg"
    stat = victim.stat()
    if fault in ("garbage", "swapped"):  # the same size and modification time
        other = data / "a" / "0000.jpg" if fault == "swapped" else None  # another valid image
        new = other.read_bytes() if other else os.urandom(stat.st_size)
        victim.write_bytes(new[: stat.st_size] + b"\0" * (stat.st_size - len(new)))
        os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif fault == "truncated":
        victim.write_bytes(victim.read_bytes()[:100])
    elif fault == "emptied":
        victim.write_bytes(b"")
    elif fault == "deleted":
        victim.unlink()
    elif fault == "folder":
        shutil.rmtree(victim.parent)


IMAGES = [structured_image(30 + i, 36, seed=i) for i in range(6)]
CASES = count()


def attempt(entry: str, config: dict, fault: str, root: Path) -> None:
    """One case: build through ``entry``, break a file, iterate one epoch."""
    import daliaug
    from daliaug.cli import main

    classes = {"a": IMAGES[::2], "b": IMAGES[1::2]}
    data = write_image_dir(root / f"case{next(CASES)}", classes, "jpg")
    config = {**config, "source": {"type": "directory", "path": str(data)}, "num_threads": 1}
    if entry == "load_config":
        daliaug.load_config(config)
    elif entry.startswith("cli"):
        file = data.parent / f"{data.name}.json"
        file.write_text(daliaug.load_config(config).model_dump_json())
        break_file(data, fault)
        args = ["validate", str(file)] if entry == "cli validate" else ["check", str(data)]
        assert main(args) in (0, 2, 3)
    elif entry == "build_pipeline":
        daliaug.build_pipeline(config, "cpu").build()
    else:
        if entry == "DaliLoader":
            batches = daliaug.DaliLoader(daliaug.load_config(config))
        elif entry.startswith("tf.data"):
            backend = entry.split("/")[1]
            batches = daliaug.make_dataset({**config, "backend": backend}, framework="tensorflow")
        else:
            batches = daliaug.make_dataset({**config, "backend": "cpu"}, framework=entry)
        break_file(data, fault)
        for batch in batches:
            assert np.all(np.isfinite(np.asarray(batch[0], np.float32)))
        assert fault == "none", f"{entry}: the file {fault} trained without a word"


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.generate],  # no shrinking: the failing case itself is shown, in time
)
@given(st.sampled_from(ENTRIES), _config, _mutation, st.sampled_from(FAULTS))
def only_daliaug_errors(entry: str, config: dict, mutation: tuple | None, fault: str) -> None:
    """Run by :func:`test_every_error_leaving_the_api_is_daliaugs` in a process of its own."""
    from daliaug.errors import DaliaugError

    if mutation is not None:
        config = with_field(config, *mutation)
    try:
        attempt(entry, config, fault, Path(os.environ["CASES_ROOT"]))
    except DaliaugError as e:
        print(f"{entry} {fault}: {type(e).__name__}: {str(e)[:200]!r}", flush=True)
    else:
        print(f"{entry} {fault}: ran", flush=True)


@pytest.mark.slow
def test_every_error_leaving_the_api_is_daliaugs(tmp_path: Path) -> None:
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path / "cache"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["CASES_ROOT"] = str(tmp_path)
    code = "from tests.test_api_errors import only_daliaug_errors; only_daliaug_errors()"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=BOUND,
    )
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-4000:]}"
    outcomes = result.stdout.splitlines()
    assert any(": DataError: " in line for line in outcomes), outcomes  # faults were met
    assert any(line.endswith(": ran") for line in outcomes), outcomes  # and cases ran through
