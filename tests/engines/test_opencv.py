"""The OpenCV engine (``backend: opencv``) through its outputs: NumPy batches without
TensorFlow or DALI, the same batches through ``tf.data``, and what it refuses. Its pixels are
held to the TF engine's by tests/test_reference.py and tests/test_parity.py, its targets to the
pixels by tests/test_pixel_truth.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import daliaug
from tests.helpers import spec_of, structured_image, write_image_dir

RUN_WITHOUT_FRAMEWORKS = """
import sys
import numpy as np
import pytest
import daliaug
config = {
    "source": {"type": "arrays"}, "image_size": 32, "batch_size": 4, "backend": "opencv",
    "transforms": [{"type": "rotation", "angle": 30}, {"type": "equalize", "probability": 0.5}],
}
x = np.random.default_rng(0).integers(0, 256, (6, 40, 48, 3), dtype=np.uint8)
batches = daliaug.make_dataset(config, x=x, y=np.arange(6) % 2, framework="numpy")
shapes = [tuple(b[0].shape) for b in batches]
print(shapes, str(daliaug.describe(batches)), "tensorflow" in sys.modules,
      "nvidia.dali" in sys.modules)
"""


def test_numpy_batches_need_neither_tensorflow_nor_dali() -> None:
    out = subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT_FRAMEWORKS],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert out.stdout.strip() == (
        "[(4, 32, 32, 3), (2, 32, 32, 3)] OpenCV on the CPU False False"
    ), out.stderr


@pytest.mark.slow
def test_tf_data_gives_the_numpy_batches(tmp_path: Path) -> None:
    images = [structured_image(40 + 8 * i, 56, seed=i) for i in range(5)]
    root = write_image_dir(tmp_path, {"a": images[:3], "b": images[3:]})
    config = {
        "source": {"type": "directory", "path": str(root)},
        "image_size": [32, 40],
        "batch_size": 2,
        "seed": 3,
        "backend": "opencv",
        "label_mode": "categorical",
        "output": {"mean": 127, "std": 50, "layout": "NCHW"},
        "transforms": [
            {"type": "random_resized_crop", "scale": [0.3, 1.0]},
            {"type": "brightness", "factor": 0.3},
            {"type": "mixup", "alpha": 0.4},
        ],
    }
    numpy = list(daliaug.make_dataset(config, framework="numpy"))
    dataset = daliaug.make_dataset(config, framework="tensorflow")
    assert str(daliaug.describe(dataset)) == "OpenCV on the CPU"
    for epoch in range(2):
        batches = [tuple(t.numpy() for t in batch) for batch in dataset]
        assert len(batches) == len(numpy) == 3
        if epoch == 0:
            for (a, la), (b, lb) in zip(numpy, batches, strict=True):
                assert a.shape == (len(a), 3, 32, 40) and a.dtype == np.float32
                np.testing.assert_array_equal(a, b)
                np.testing.assert_array_equal(la, lb)


@pytest.mark.parametrize("fill", [0.0, 90.0, "nearest"])
@pytest.mark.parametrize(
    ("source", "flip"), [((30, 40), (1, 1)), ((30, 40), (-1, 1)), ((50, 20), (1, -1))]
)
def test_a_whole_window_resize_is_the_warp_to_its_edges(source, flip, fill) -> None:
    """The resize path (an axis-aligned map of the whole source, up or down, flipped or not)
    gives the TF engine's warp on every pixel, the outermost ones blended with a constant
    fill included."""
    from daliaug.engines.opencv.image import warp
    from daliaug.engines.tf.image import transform

    image = structured_image(*source, seed=2).astype(np.float32)
    for size in ((45, 52), (24, 16), (30, 40)):
        sx, sy = flip[0] * source[1] / size[1], flip[1] * source[0] / size[0]
        matrix = np.array(
            [[sx, 0, source[1] if sx < 0 else 0], [0, sy, source[0] if sy < 0 else 0]],
            np.float32,
        )
        ours = warp(image, matrix, size, fill, False)
        theirs = transform(image[None], matrix[None], size, fill, False)[0].numpy()
        np.testing.assert_allclose(ours, theirs, atol=2e-3)


@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_jax_and_torch_take_the_numpy_batches(tmp_path: Path, framework: str) -> None:
    pytest.importorskip(framework)
    root = write_image_dir(tmp_path, {"a": [structured_image(40, 48, seed=i) for i in range(3)]})
    config = {
        "source": {"type": "directory", "path": str(root)},
        "image_size": 24,
        "batch_size": 2,
        "seed": 1,
        "backend": "opencv",
        "transforms": [{"type": "rotation", "angle": 20}, {"type": "posterize", "bits": 4}],
    }
    numpy = list(daliaug.make_dataset(config, framework="numpy"))
    batches = daliaug.make_dataset(config, framework=framework)
    assert str(daliaug.describe(batches)) == "OpenCV on the CPU"
    for (a, la), (b, lb) in zip(numpy, batches, strict=True):
        np.testing.assert_array_equal(a, np.asarray(b))
        np.testing.assert_array_equal(la, np.asarray(lb))


@pytest.mark.parametrize(("dtype", "layout"), [("float32", "NHWC"), ("uint8", "NCHW")])
def test_output_batches_are_aligned_for_a_handover_without_copies(dtype, layout) -> None:
    from daliaug.config import load_config
    from daliaug.engines.opencv.image import ALIGN, output_array

    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [7, 9],
            "batch_size": 3,
            "output": {"dtype": dtype, "layout": layout},
        }
    )
    for count in (1, 3):
        batch = output_array(spec_of(config), count)
        shape = (count, 7, 9, 3) if layout == "NHWC" else (count, 3, 7, 9)
        assert batch.shape == shape and batch.dtype == np.dtype(dtype)
        assert batch.ctypes.data % ALIGN == 0 and batch.flags.c_contiguous and batch.flags.writeable


@pytest.mark.slow
def test_tf_data_turns_autotuning_off(tmp_path: Path) -> None:
    """Nothing in the OpenCV engine's ``tf.data`` dataset is tuned, and autotuning's model
    thread held each finished iterator for seconds when it was deleted."""
    root = write_image_dir(tmp_path, {"a": [structured_image(20, 24, seed=i) for i in range(2)]})
    config = {
        "source": {"type": "directory", "path": str(root)},
        "image_size": 16,
        "batch_size": 2,
        "backend": "opencv",
    }
    dataset = daliaug.make_dataset(config, framework="tensorflow")
    assert dataset.options().autotune.enabled is False
    assert [tuple(images.shape) for images, _ in dataset] == [(2, 16, 16, 3)]


@pytest.mark.parametrize("classes", ["index", "colour"])
def test_masks_from_shards_are_the_masks_of_their_files(tmp_path: Path, classes: str) -> None:
    """Segmentation written as WebDataset shards (``mask.png`` members) gives, on the OpenCV
    engine, the batches of the segmentation files it came from, masks and all, through NumPy
    and through ``tf.data`` (issue 54: the masks were dropped, or ``tf.data`` failed)."""
    from daliaug.config import load_config
    from daliaug.prepare import prepare_samples
    from daliaug.tools.convert import write_webdataset
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=5, size=(40, 48))
    masks, fields = (
        ("masks", {"num_classes": 5})
        if classes == "index"
        else ("masks_rgb", {"classes": str(root / "classes.csv")})
    )
    base = {
        "image_size": 32,
        "batch_size": 2,
        "seed": 3,
        "num_threads": 1,
        "backend": "opencv",
        "transforms": [{"type": "rotation", "angle": 10}, {"type": "flip"}],
    }
    paired = {"type": "segmentation", "images": str(root / "images"), "masks": str(root / masks)}
    files = load_config({**base, "source": {**paired, **fields}})
    write_webdataset(prepare_samples(files), tmp_path / "shards", 2)
    shard_source = {"type": "webdataset", "path": str(tmp_path / "shards"), "targets": "masks"}
    shards = {**base, "source": {**shard_source, "index_dir": str(tmp_path / "idx"), **fields}}
    want = list(daliaug.make_dataset(files, framework="numpy"))
    got = list(daliaug.make_dataset(shards, framework="numpy"))
    through_tf = [tuple(t.numpy() for t in b) for b in daliaug.make_dataset(shards)]
    assert len(want) == len(got) == len(through_tf) == 3
    for a, b, c in zip(want, got, through_tf, strict=True):
        assert b[1] is not None and b[1].shape == (len(b[0]), 32, 32)
        for x, y, z in zip(a, b, c, strict=True):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)
