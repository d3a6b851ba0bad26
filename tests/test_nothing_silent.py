"""Nothing silent, round three (issue 43): skipped files said once, files that change between
``make_dataset`` and the batches named, epochs that would be empty refused, installs with a
part missing named, the TF engine on 1x1 images. Cases with files or installs changing run in a
process of their own, as a user meets them."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import daliaug
from daliaug.errors import BackendWarning, ConfigError, DataError
from tests.test_named_faults import folders, run, run_in

FRAMEWORKS = ["numpy", "jax", "torch", "tensorflow"]

ONCE = """
import sys, warnings
from pathlib import Path
import daliaug
from tests.helpers import config_for

data = Path(sys.argv[1])
source = {"type": "directory", "path": str(data), "on_error": "skip"}
for framework in ("numpy", "jax", "torch", "tensorflow"):
    for batch_size in (1, 3, 16):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = config_for(data, source=source, batch_size=batch_size, image_size=16)
            ds = daliaug.make_dataset(config, framework=framework)
            for _ in range(2):
                seen = sum(int(b[0].shape[0]) for b in ds)
        said = [w for w in caught if w.category is daliaug.DataWarning]
        print(framework, batch_size, seen, len(said), "left out 1 unusable" in str(said[0].message))
"""


@pytest.mark.slow
def test_skipped_files_are_said_once_on_every_framework(tmp_path: Path) -> None:
    data = folders(tmp_path / "data")
    (data / "a" / "0002.jpg").write_bytes(b"not an image")
    code, out = run_in(tmp_path / "cache", None, ["-c", ONCE, str(data)])
    assert code == 0, out
    lines = [
        line.split() for line in out.splitlines() if line.split()[:1] in ([f] for f in FRAMEWORKS)
    ]
    assert len(lines) == 12, out
    assert all(line[2:] == ["7", "1", "True"] for line in lines), out


GONE = """
import sys
from pathlib import Path
import daliaug
from tests.helpers import config_for

data, framework, on_error = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
source = {"type": "directory", "path": str(data), "on_error": on_error}
ds = daliaug.make_dataset(config_for(data, source=source, image_size=16), framework=framework)
(data / "b" / "0003.jpg").unlink()
try:
    for _ in ds:
        pass
except daliaug.DataError as e:
    print("DataError:", e)
"""


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "jax", "torch"])
def test_a_file_deleted_before_the_first_batch_is_named(framework: str, tmp_path: Path) -> None:
    """After ``make_dataset``, before the first batch: the file named (``on_error: skip`` works
    at the check before training; what goes later stops the epoch, named, either way)."""
    data = folders(tmp_path / "data")
    for on_error in ("raise", "skip"):
        code, out = run_in(tmp_path / "cache", None, ["-c", GONE, str(data), framework, on_error])
        assert code == 0, out
        assert f"DataError: image file {data / 'b' / '0003.jpg'} is gone since it was" in out, out
        assert "Traceback" not in out
        folders(tmp_path / "data")  # back for the next policy


SWAP = """
import os, sys
from pathlib import Path
import daliaug
from tests.helpers import config_for

data, framework, other = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
ds = daliaug.make_dataset(config_for(data, image_size=16), framework=framework)
victim = data / "b" / "0003.jpg"
stat = victim.stat()
os.replace(other, victim)  # another valid image, as many bytes, the same modification time
os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
assert victim.stat().st_size == stat.st_size
try:
    for _ in ds:
        pass
    print("trained the new image")
except daliaug.DataError as e:
    print("DataError:", e)
"""


def same_size_jpeg(size: int) -> bytes:
    """Another valid JPEG of exactly ``size`` bytes (a flat one, padded after its end)."""
    out = io.BytesIO()
    Image.new("RGB", (48, 40), (200, 30, 30)).save(out, "JPEG", quality=50)
    data = out.getvalue()
    assert len(data) < size
    return data + b"\0" * (size - len(data))


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "tensorflow"])
def test_a_valid_replacement_of_the_same_size_and_time_is_named(
    framework: str, tmp_path: Path
) -> None:
    data = folders(tmp_path / "data")
    other = tmp_path / "other.jpg"
    other.write_bytes(same_size_jpeg((data / "b" / "0003.jpg").stat().st_size))
    code, out = run_in(tmp_path / "cache", None, ["-c", SWAP, str(data), framework, str(other)])
    assert code == 0, out
    assert f"DataError: image file {data / 'b' / '0003.jpg'} changed after daliaug" in out, out


@pytest.mark.parametrize(
    "framework", ["numpy", "torch", "tensorflow", pytest.param("jax", marks=pytest.mark.slow)]
)
def test_drop_remainder_with_a_batch_larger_than_the_data_is_refused(framework: str) -> None:
    x, y = np.zeros((3, 8, 8, 3), np.uint8), np.zeros(3, int)
    config = {"source": {"type": "arrays"}, "image_size": 8, "batch_size": 4, "backend": "cpu"}
    with pytest.raises(ConfigError, match="batch_size: 4 is more than the 3 samples, and drop"):
        daliaug.make_dataset({**config, "drop_remainder": True}, x=x, y=y, framework=framework)
    ds = daliaug.make_dataset(config, x=x, y=y, framework=framework)  # without: one short batch
    assert [int(b[0].shape[0]) for b in ds] == [3]


INSTALL = """
import sys
import numpy as np

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name in ("nvidia.dali", "cv2") or name.startswith("nvidia.dali."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

if sys.argv[2] == "without-dali":
    sys.meta_path.insert(0, Missing())
import daliaug
try:
    daliaug.make_dataset({"source": {"type": "arrays"}, "image_size": 8},
                         x=np.zeros((2, 8, 8, 3), np.uint8), y=np.zeros(2, int),
                         framework=sys.argv[1])
except daliaug.DaliaugError as e:
    print(type(e).__name__, e)
"""


def test_installs_with_a_part_missing_are_named(tmp_path: Path) -> None:
    """TensorFlow installed but broken (a shared library missing); DALI (and OpenCV, which
    ``auto`` would run instead) missing for NumPy."""
    broken = tmp_path / "site" / "tensorflow"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(
        'raise ImportError("libtensorflow_framework.so.2: cannot open shared object file")\n'
    )
    env = {"PYTHONPATH": f"{broken.parent}:."}
    code, out = run(["-c", INSTALL, "tensorflow", "broken-tensorflow"], env=env)
    assert code == 0, out
    said = "needs TensorFlow, which is installed but cannot be imported: libtensorflow_framework"
    assert f"BackendError framework: 'tensorflow' (a tf.data.Dataset) {said}" in out, out
    code, out = run(["-c", INSTALL, "numpy", "without-dali"])
    assert code == 0, out
    assert "BackendError framework='numpy' needs NVIDIA DALI, which is not installed" in out, out


@pytest.mark.parametrize(
    "kind",
    [
        "sharpness",
        pytest.param("keras_rand_augment", marks=pytest.mark.slow),
        pytest.param("aug_mix", marks=pytest.mark.slow),
        pytest.param("keras_aug_mix", marks=pytest.mark.slow),
    ],
)
def test_the_tf_engine_runs_on_images_of_one_pixel(kind: str) -> None:
    """Sharpness (alone and inside AugMix and RandAugment) on a side of one pixel: the border
    alone, so the image as it is, as DALI computes it."""
    x = np.random.default_rng(0).integers(0, 256, (2, 1, 1, 3), dtype=np.uint8)
    config = {
        "source": {"type": "arrays"},
        "image_size": 1,
        "batch_size": 2,
        "shuffle": False,  # the images in their order, to compare
        "backend": "tf",
        "transforms": [{"type": kind}],
        "label_mode": "categorical" if "mix" in kind else "int",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        images = np.asarray(next(iter(daliaug.make_dataset(config, x=x, y=np.arange(2))))[0])
    assert images.shape == (2, 1, 1, 3) and np.isfinite(images).all()
    if kind == "sharpness":
        np.testing.assert_array_equal(images, x)


BETWEEN = """
import os, sys
from pathlib import Path
import daliaug
from daliaug.sources import checks
from tests.helpers import config_for

data, framework, other = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
victim = str(data / "b" / "0003.jpg")
read = checks.read_unchanged

def swap_then_read(path, checked):
    if path == victim and other.exists():
        os.replace(other, victim)  # another valid image, after the check, as it is read
    return read(path, checked)

checks.read_unchanged = swap_then_read
try:
    config = config_for(data, image_size=16, backend="cpu")
    for _ in daliaug.make_dataset(config, framework=framework):
        pass
    print("trained the new image")
except daliaug.DataError as e:
    print("DataError:", e)
except Exception as e:  # tf.data carries daliaug's error in its own
    print("DataError:", daliaug.errors.carried_error(e))
"""


@pytest.mark.parametrize(
    "framework", ["numpy", "tensorflow", pytest.param("torch", marks=pytest.mark.slow)]
)
def test_a_file_replaced_between_its_check_and_its_read_is_named(
    framework: str, tmp_path: Path
) -> None:
    """DALI's graphs take the files' bytes from the host, which checks each file as it reads
    it: a file replaced by another valid image of the same size after the full check, up to
    the moment it is read, is named, on every output (the tf.data look-ahead included)."""
    data = folders(tmp_path / "data")
    other = tmp_path / "other.jpg"
    other.write_bytes(same_size_jpeg(10**5))
    code, out = run_in(tmp_path / "cache", None, ["-c", BETWEEN, str(data), framework, str(other)])
    assert code == 0, out
    assert f"DataError: image file {data / 'b' / '0003.jpg'} changed after daliaug" in out, out


def test_a_source_with_every_file_bad_says_which_and_why(tmp_path: Path) -> None:
    """Not "shard 0 of 1 is empty": what happened, each file named."""
    for name in ("a", "b"):
        (tmp_path / "data" / name).mkdir(parents=True)
        (tmp_path / "data" / name / "0.jpg").write_bytes(b"not an image")
    source = {"type": "directory", "path": str(tmp_path / "data"), "on_error": "skip"}
    config = {"source": source, "image_size": 8, "backend": "cpu"}
    with pytest.raises(DataError, match="source: no sample is left; 2 of 2 files cannot be used"):
        daliaug.make_dataset(config, framework="numpy")
