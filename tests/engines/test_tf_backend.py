"""The TF backend as a drop-in for the DALI one: chosen by ``backend: tf`` or by ``auto`` without
DALI, the same streams (order, batches, parameters) for one seed, and a pure tf.data graph."""

from __future__ import annotations

import collections
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from daliaug.outputs.dataset import make_dataset
from daliaug.outputs.tfdata.tf_dataset import tf_dataset
from daliaug.parity.measure import inside_source
from tests.helpers import config_for, run_of

JITTER = [
    {"type": "random_resized_crop", "scale": [0.3, 1]},
    {"type": "rotation", "angle": 30},
    {"type": "flip"},
    {"type": "brightness", "factor": 0.3},
]
FLIP = {"type": "flip"}


@pytest.mark.slow
def test_one_seed_gives_both_backends_the_same_epochs(numbered_list: Path) -> None:
    """Same order, batches and random parameters on DALI and TF: the same images, to rounding."""
    fields = {
        "source": {"type": "file_list", "path": str(numbered_list)},
        "shuffle": True,
        "batch_size": 5,
        "seed": 11,
        "transforms": JITTER,
    }
    dali = make_dataset(config_for(numbered_list.parent, backend="cpu", **fields))
    tf_ds = make_dataset(config_for(numbered_list.parent, backend="tf", **fields))
    assert dali.element_spec == tf_ds.element_spec
    for _ in range(2):  # two epochs: a new order and new parameters, still shared
        pairs = list(zip(dali, tf_ds, strict=True))
        for (dali_images, dali_labels), (tf_images, tf_labels) in pairs:
            assert np.array_equal(dali_labels.numpy(), tf_labels.numpy())
            diff = np.abs(dali_images.numpy() - tf_images.numpy())
            assert diff.mean() < 0.05 and np.mean(diff > 2) < 0.005


def test_explicit_parameters_replace_the_draws(square_dir: Path) -> None:
    config = config_for(square_dir, backend="tf", transforms=[{"type": "rotation", "angle": 90}])
    samples = config.source.samples()
    plan = config.plan
    assert plan.param_keys == ["0.angle"]
    run = run_of(config, samples, engine="tf")
    images = [
        next(iter(tf_dataset(run, params=np.array([[a]]))))[0].numpy()[0]
        for a in (90.0, 90.0, -90.0)
    ]
    assert np.array_equal(images[0], images[1]) and not np.array_equal(images[0], images[2])


def test_the_image_work_has_no_python_function(square_dir: Path) -> None:
    """Python runs once per batch, in the epoch feed (sample indices and per-sample numbers);
    the image work (read, decode, warp, colour, normalize) is graph ops in parallel maps."""
    config = config_for(square_dir, backend="tf", transforms=JITTER)
    serialized = make_dataset(config)._as_serialized_graph().numpy()
    graph = tf.compat.v1.GraphDef.FromString(serialized)
    python = {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    with_python = {
        f.signature.name for f in graph.library.function if {n.op for n in f.node_def} & python
    }
    in_streams = ("epoch_begin", "epoch_read")  # daliaug.outputs.tfdata.streams.counted
    assert with_python and all(any(f in n for f in in_streams) for n in with_python), with_python
    ops = {n.op for f in graph.library.function for n in f.node_def}
    assert {"ImageProjectiveTransformV3", "ReadFile", "DecodePng"} <= ops
    assert b"ParallelMapDataset" in serialized


def test_a_decoded_crop_window_equals_the_crop_of_the_whole_image(tmp_path: Path) -> None:
    """Decoding only a window of a JPEG (4:2:0, windows off the 16-pixel grid) gives exactly the
    pixels a full decode has there, as DALI's ROI decoding does."""
    from PIL import Image

    from daliaug.engines.tf.image import decode
    from daliaug.parity.inputs import parity_image

    path = tmp_path / "a.jpg"
    Image.fromarray(parity_image(120, 80, seed=5)).save(path, quality=90)
    encoded = tf.constant(path.read_bytes())
    whole = decode(encoded, {}, 3).numpy()
    for y, x, h, w in [(0, 0, 120, 80), (13, 5, 61, 33), (1, 47, 119, 33), (50, 17, 21, 62)]:
        window = {
            "crop_start": tf.constant([x, y], tf.float32),
            "crop_shape": tf.constant([w, h], tf.float32),
        }
        window = decode(encoded, window, 3).numpy()
        assert np.array_equal(window, whole[y : y + h, x : x + w]), (y, x, h, w)


def test_inside_source_follows_the_inverse_map() -> None:
    """The border helper on a half-pixel shift: the first column's source point is x = 0."""
    from daliaug.algebra import Affine

    shifted = inside_source(Affine.translate(0.5, 0.0), (4, 4), (4, 4), margin=0.25)
    assert not shifted[:, 0].any() and shifted[1:-1, 1:-1].all()


_WITHOUT_DALI = """
import sys
sys.modules["nvidia.dali"] = None  # as on a machine without DALI
import daliaug
from daliaug.errors import BackendError
config = {{"source": {{"type": "directory", "path": {root!r}}}, "image_size": 32,
          "batch_size": 2, "transforms": [{{"type": "rotation", "angle": 10}}]}}
images, labels = next(iter(daliaug.make_dataset(config)))
print(images.shape, images.dtype.name, labels.dtype.name)
try:
    daliaug.make_dataset({{**config, "backend": "cpu"}})
except BackendError as e:
    print("cpu:", e)
"""


@pytest.mark.slow
def test_auto_falls_back_to_tf_without_dali(square_dir: Path) -> None:
    code = textwrap.dedent(_WITHOUT_DALI.format(root=str(square_dir)))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
        timeout=600,
    )
    lines = out.stdout.splitlines()
    assert lines[0] == "(1, 32, 32, 3) float32 int32"
    assert lines[1].startswith("cpu: NVIDIA DALI is not installed")


_WITHOUT_A_DRIVER = """
import sys
import daliaug
config = {{"source": {{"type": "directory", "path": {root!r}}}, "image_size": 32,
          "batch_size": 2}}
images, _ = next(iter(daliaug.make_dataset(config)))
print(images.shape, "nvidia.dali" in sys.modules)
"""


@pytest.mark.slow
def test_auto_without_a_cuda_driver_never_imports_dali(square_dir: Path) -> None:
    """No CUDA driver: ``auto`` runs the TensorFlow backend (the full check included)
    without importing DALI, which would only add its libraries to the process's memory."""
    from daliaug.engines.select import cuda_driver

    assert not cuda_driver()
    code = textwrap.dedent(_WITHOUT_A_DRIVER.format(root=str(square_dir)))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.splitlines()[-1] == "(1, 32, 32, 3) False"


def test_element_spec_is_static_per_sample(square_dir: Path) -> None:
    """Batches carry the static per-sample shape Keras builds models from."""
    config = config_for(
        square_dir,
        backend="tf",
        image_size=[24, 40],
        channels=1,
        output={"layout": "NCHW"},
        transforms=JITTER[:2],
    )
    spec = make_dataset(config).element_spec[0]
    assert spec.shape.as_list() == [None, 1, 24, 40] and spec.dtype == tf.float32


def _both_backends(config: dict, **data: object) -> list[tuple[np.ndarray, ...]]:
    """Two epochs of ``(images, targets)`` from DALI-CPU and from TF, batch by batch."""
    from daliaug.config import load_config

    out = []
    for backend in ("cpu", "tf"):
        ds = make_dataset(load_config({**config, "backend": backend}), **data)
        out.append([(i.numpy(), t.numpy()) for _ in range(2) for i, t in ds])
    return list(zip(*out, strict=True))


def _assert_same(pairs: list, exact_targets: bool = True) -> None:
    for (dali_images, dali_targets), (tf_images, tf_targets) in pairs:
        diff = np.abs(dali_images.astype(float) - tf_images.astype(float))
        assert diff.mean() < 0.05 and np.mean(diff > 2) < 0.005
        if exact_targets:
            assert np.array_equal(dali_targets, tf_targets)
        else:  # nearest-sampled masks: a rare tie may fall on the other side
            assert np.mean(dali_targets != tf_targets) < 0.005


BASE = {"image_size": 40, "batch_size": 4, "shuffle": True, "seed": 5, "num_threads": 1}


@pytest.mark.slow
def test_in_memory_arrays_on_both_backends() -> None:
    from tests.helpers import structured_image

    x = np.stack([structured_image(32, 32, seed=i) for i in range(9)])
    config = {**BASE, "source": {"type": "arrays"}, "transforms": JITTER}
    _assert_same(_both_backends(config, x=x, y=np.arange(9)))


@pytest.mark.slow
def test_tfrecords_on_both_backends(numbered_list: Path, tmp_path: Path) -> None:
    from daliaug.config import load_config
    from daliaug.tools.convert import write_tfrecords

    listing = load_config(
        {"source": {"type": "file_list", "path": str(numbered_list)}, "image_size": 8}
    )
    write_tfrecords(listing.source.samples(), tmp_path / "rec", shards=2)
    source = {"type": "tfrecord", "path": str(tmp_path / "rec"), "index_dir": str(tmp_path)}
    _assert_same(_both_backends({**BASE, "source": source, "transforms": JITTER}))


@pytest.mark.slow
def test_segmentation_masks_on_both_backends(tmp_path: Path) -> None:
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=10, size=(48, 64))
    for masks, classes, output in [
        ("masks", {"num_classes": 5}, "index"),
        ("masks_rgb", {"classes": str(root / "classes.csv")}, "one_hot"),
    ]:
        source = {
            "type": "segmentation",
            "images": str(root / "images"),
            "masks": str(root / masks),
            "mask_output": output,
            **classes,
        }
        _assert_same(
            _both_backends({**BASE, "source": source, "transforms": JITTER}), exact_targets=False
        )


@pytest.mark.parametrize("nearest", [False, True], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("fill", [0.0, 77.0, "nearest", "reflect", "wrap"])
def test_the_fused_warp_of_arrays_matches_the_projective_transform(fill, nearest: bool) -> None:
    """Arrays are resampled by gathers that XLA fuses (``sample``); files by TensorFlow's
    projective transform: the same samples, fills and borders, compiled or not."""
    from daliaug.engines.tf.image import sample, transform

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (4, 20, 30, 3)).astype(np.float32)
    angle = rng.uniform(-1.0, 1.0, 4)
    matrices = np.zeros((4, 2, 3), np.float32)
    matrices[:, 0, :2] = np.stack([1.3 * np.cos(angle), -np.sin(angle)], 1)
    matrices[:, 1, :2] = np.stack([np.sin(angle), 0.8 * np.cos(angle)], 1)
    matrices[:, :, 2] = rng.uniform(-10.0, 30.0, (4, 2))  # reaching well outside the image
    expected = transform(images, matrices, (25, 35), fill, nearest).numpy()
    compiled = tf.function(lambda x, m: sample(x, m, (25, 35), fill, nearest), jit_compile=True)
    for got in (sample(images, matrices, (25, 35), fill, nearest), compiled(images, matrices)):
        assert np.abs(got.numpy() - expected).max() <= 2e-3


def _graph_ops(dataset: tf.data.Dataset) -> collections.Counter:
    """The operations of every function a ``tf.data`` dataset's graph holds, counted."""
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    return collections.Counter(node.op for f in graph.library.function for node in f.node_def)


def test_a_plan_that_only_resizes_traces_no_warp(square_dir: Path) -> None:
    """Files resized and nothing moved: each image is decoded and resized, with no warp and no
    branch between a warp and a resize traced (a third of the graph, and of a start's tracing);
    a flip keeps them."""
    plain = _graph_ops(make_dataset(config_for(square_dir, backend="tf")))
    flipped = _graph_ops(make_dataset(config_for(square_dir, backend="tf", transforms=[FLIP])))
    assert plain["ResizeBilinear"] == flipped["ResizeBilinear"] == 1
    branches = plain["If"] + plain["StatelessIf"]
    assert branches == 1  # the decoder's (JPEG or PNG), no warp's
    assert flipped["If"] + flipped["StatelessIf"] > branches
    assert 2 * sum(plain.values()) < sum(flipped.values())
