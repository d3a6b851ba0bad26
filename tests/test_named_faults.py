"""Faults that used to escape as another library's error or a wrong one: each named with its
cause (the file, the variable, the size and the limit), each run in a process of its own with a
time limit, as a user meets it."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from daliaug.config import load_config
from daliaug.errors import ConfigError
from tests.helpers import BACKENDS, structured_image, write_image_dir

ROOT = Path(__file__).parents[1]
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3", "COLUMNS": "250"}


def run(args: list[str], env: dict[str, str] | None = None, timeout: int = 300) -> tuple[int, str]:
    """``python args`` in the repository root: the exit code and stderr (with stdout)."""
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **QUIET, **(env or {})},
    )
    return result.returncode, result.stdout + result.stderr


def cli(*args: object, env: dict[str, str] | None = None) -> tuple[int, str]:
    return run(["-m", "daliaug.cli", *map(str, args)], env)


def folders(root: Path, count: int = 8) -> Path:
    images = [structured_image(40, 48, seed=i) for i in range(count)]
    return write_image_dir(root, {"a": images[::2], "b": images[1::2]}, fmt="jpg")


@pytest.mark.slow
def test_a_garbage_keras_file_is_called_what_it_is(tmp_path: Path) -> None:
    model = tmp_path / "model.keras"
    model.write_bytes(b"GARBAGE!" * 100)
    data, config = folders(tmp_path / "data"), tmp_path / "config.yaml"
    code, out = cli("convert", "--from-keras", model, data, "-o", config)
    assert code == 2, out
    assert f"{model} is not a saved Keras model" in out and "zip archive" in out
    assert "File not found" not in out and "Traceback" not in out


@pytest.mark.slow
def test_a_jpeg_declaring_a_huge_size_is_told_the_size_and_the_limit(tmp_path: Path) -> None:
    data = folders(tmp_path / "data")
    bomb = data / "a" / "0000.jpg"
    raw = bytearray(bomb.read_bytes())
    sof = raw.find(b"\xff\xc0")
    raw[sof + 5 : sof + 9] = (20000).to_bytes(2, "big") * 2
    bomb.write_bytes(bytes(raw))
    code, out = cli("check", data, env={"DALIAUG_CACHE": str(tmp_path / "cache")})
    assert code == 3, out
    assert f"{bomb} declares 20000x20000 pixels (400,000,000)" in out
    assert "268,435,456 pixels at most" in out and "broken JPEG header" not in out


def unwritable_cache(kind: str, tmp_path: Path) -> tuple[Path, Callable[[], None] | None]:
    """A ``DALIAUG_CACHE`` that cannot take files, and what the process must run first. The
    tests run as root, which ignores file modes: a regular file where the folder's parent
    should be, a folder under ``/sys`` (read-only even for root), or a file size limit that
    makes every write fail as on a full disk."""
    if kind == "file":
        (tmp_path / "file").write_text("not a folder")
        return tmp_path / "file" / "cache", None
    if kind == "read-only":
        return Path("/sys/daliaug-cache"), None
    return tmp_path / "cache", full_disk


def full_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes then fail with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, 1))


def run_in(cache: Path, before: Callable[[], None] | None, args: list[str]) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        preexec_fn=before,
        env={**os.environ, **QUIET, "DALIAUG_CACHE": str(cache)},
    )
    return result.returncode, result.stdout + result.stderr


MAKE = """
import sys, warnings
import daliaug
source = {"type": sys.argv[2], "path": sys.argv[1]}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = daliaug.make_dataset({"source": source, "image_size": 32, "batch_size": 2,
                               "backend": "cpu"})
    print("samples", sum(int(b[0].shape[0]) for b in ds))
cache = [str(w.message) for w in caught if w.category is daliaug.CacheWarning]
print("cache warnings", len(cache), *cache)
"""


def fix_named(out: str, cache: Path) -> bool:
    return f"DALIAUG_CACHE={cache}" in out and "set DALIAUG_CACHE to a folder you can write" in out


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "read-only", "full"])
def test_make_dataset_goes_on_without_a_cache_it_cannot_write(kind: str, tmp_path: Path) -> None:
    data = folders(tmp_path / "data")
    cache, before = unwritable_cache(kind, tmp_path)
    code, out = run_in(cache, before, ["-c", MAKE, str(data), "directory"])
    assert code == 0, out
    assert "samples 8" in out and "cache warnings 1 " in out and fix_named(out, cache), out


@pytest.mark.slow
def test_tfrecord_indexes_go_elsewhere_or_name_index_dir(tmp_path: Path) -> None:
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    records = tmp_path / "records"
    write_tfrecords(DirectorySource(path=folders(tmp_path / "data")).samples(), records, 2)
    cache, before = unwritable_cache("file", tmp_path)
    code, out = run_in(cache, before, ["-c", MAKE, str(records), "tfrecord"])
    assert code == 0 and "samples 8" in out and "cache warnings 1 " in out, out
    config = {"type": "tfrecord", "path": str(records), "index_dir": str(cache)}
    with pytest.raises(ConfigError, match=f"source.index_dir: cannot write .*{cache}"):
        load_config({"source": config, "image_size": 32}).source.samples()


@pytest.mark.slow
def test_check_lists_bad_files_without_a_cache(tmp_path: Path) -> None:
    data = folders(tmp_path / "data")
    (data / "b" / "0001.jpg").write_bytes(b"\xff\xd8\xff broken")
    cache, before = unwritable_cache("read-only", tmp_path)
    code, out = run_in(cache, before, ["-m", "daliaug.cli", "check", str(data)])
    assert code == 3 and "0001.jpg" in out and "CacheWarning" in out and fix_named(out, cache)
    assert "Traceback" not in out


@pytest.mark.parametrize("kind", ["file", "full"])
def test_the_demo_names_a_cache_it_cannot_write(kind: str, tmp_path: Path) -> None:
    cache, before = unwritable_cache(kind, tmp_path)
    code, out = run_in(cache, before, ["-m", "daliaug.cli", "demo", "--epochs", "1"])
    assert code == 2, out
    assert f"cannot write the demo data to {cache}" in out and fix_named(out, cache), out
    assert "Traceback" not in out


FIT = """
import os, shutil, sys
from pathlib import Path
import keras
import daliaug
from tests.helpers import config_for

data, backend, fault = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
victim = data / "b" / "0003.jpg"

def inject():
    stat = victim.stat()
    if fault == "garbage":  # same size and modification time: only decoding can tell
        victim.write_bytes(os.urandom(stat.st_size))
        os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif fault == "truncated":
        victim.write_bytes(victim.read_bytes()[:200])
    elif fault == "deleted":
        victim.unlink()
    else:
        shutil.rmtree(victim.parent)

class Fault(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        inject()

ds = daliaug.make_dataset(config_for(data, backend=backend, image_size=32, label_mode="int"))
model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(2)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
try:
    model.fit(ds, epochs=3, verbose=0, callbacks=[Fault()])
except daliaug.DataError as e:
    print("DataError:", e)
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fault", ["garbage", "truncated", "deleted", "folder"])
def test_a_file_broken_mid_training_leaves_fit_as_a_data_error_naming_it(
    fault: str, backend: str, tmp_path: Path
) -> None:
    """The file broken after the first epoch (after the check): ``fit`` on the ``tf.data``
    output raises daliaug's DataError naming it, on both engines, not TensorFlow's error."""
    data = folders(tmp_path / "data")
    cache = tmp_path / "cache"
    code, out = run_in(cache, None, ["-c", FIT, str(data), backend, fault])
    assert code == 0, out
    victim = data / "b" / ("0001.jpg" if fault == "folder" else "0003.jpg")
    said = next(line for line in out.splitlines() if line.startswith("DataError: "))
    assert str(victim.parent if fault == "folder" else victim) in said, said
    assert "Traceback" not in out  # (DALI's plugin prints its own error on stderr)


ITERATE = """
import os, sys
from pathlib import Path
import daliaug
from tests.helpers import config_for

data, framework = Path(sys.argv[1]), sys.argv[2]
batches = daliaug.make_dataset(config_for(data, image_size=32), framework=framework)
victim = data / "b" / "0003.jpg"
stat = victim.stat()
victim.write_bytes(os.urandom(stat.st_size))  # the same size and modification time
os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
try:
    for _ in batches:
        pass
except daliaug.DataError as e:
    print("DataError:", e)
"""


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_a_file_replaced_unseen_is_named_on_jax_and_pytorch(framework: str, tmp_path: Path) -> None:
    """The JAX and PyTorch outputs name the file before its batch, as the ``tf.data`` output
    does: its inode's status-change time moved, though its size and modification time held."""
    data = folders(tmp_path / "data")
    code, out = run_in(tmp_path / "cache", None, ["-c", ITERATE, str(data), framework])
    assert code == 0, out
    assert f"DataError: image file {data / 'b' / '0003.jpg'} changed after daliaug" in out, out
