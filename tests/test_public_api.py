"""What users call beyond make_dataset's defaults: build_pipeline (DALI driven directly, no
TensorFlow), class weights computed in the pipeline, the batch count of a dataset."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import daliaug
from daliaug.errors import BackendError, ConfigError
from daliaug.outputs.dali_loader import DaliLoader
from tests.helpers import config_for


def numbered(numbered_list: Path, **fields):
    source = {"type": "file_list", "path": str(numbered_list)}
    return config_for(numbered_list.parent, source=source, batch_size=5, **fields)


def test_build_pipeline_runs_make_datasets_epochs(numbered_list: Path) -> None:
    config = numbered(numbered_list, shuffle=True, transforms=[{"type": "rotation", "angle": 20}])
    pipe = daliaug.build_pipeline(config, "cpu")
    pipe.build()
    epochs = []
    for _ in range(2):
        labels = []
        while True:
            try:
                _, batch_labels = pipe.run()
            except StopIteration:
                pipe.reset()
                break
            labels += np.asarray(batch_labels.as_array()).tolist()
        epochs.append(labels)
    assert sorted(epochs[0]) == list(range(23)) and epochs[0] != epochs[1]
    loader = DaliLoader(config)
    assert [np.concatenate([b[1] for b in loader]).tolist() for _ in range(2)] == epochs


def test_build_pipeline_needs_no_tensorflow_and_defines_gpu_graphs_without_a_gpu(
    numbered_list: Path,
) -> None:
    code = (
        "import sys; sys.modules['tensorflow'] = None; import daliaug;"
        "from daliaug.engines.dali.check import graph_problems;"
        f"config = {{'source': {{'type': 'file_list', 'path': {str(numbered_list)!r}}},"
        " 'image_size': 32, 'transforms': [{'type': 'flip'}]};"
        "print(graph_problems(lambda: daliaug.build_pipeline(config, 'gpu')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr


def test_build_pipeline_for_a_gpu_without_one_is_a_backend_error(numbered_list: Path) -> None:
    """Defined without a GPU (see above), but building or running it says so in daliaug's
    terms: a BackendError (exit code 4), not DALI's RuntimeError from CUDA."""
    from daliaug.engines.select import dali_gpu_count

    if dali_gpu_count() > 0:
        pytest.skip("this machine has a GPU")
    pipe = daliaug.build_pipeline(numbered(numbered_list), "gpu")
    for step in (pipe.build, pipe.run):
        with pytest.raises(daliaug.BackendError, match="DALI sees 0 CUDA GPU") as caught:
            step()
        assert caught.value.exit_code == 4


@pytest.mark.parametrize(
    ("backend", "engine", "text"),
    [("cpu", ("dali", "cpu"), "DALI on the CPU"), ("tf", ("tf", "cpu"), "TensorFlow ops")],
)
def test_describe_names_the_engine_and_device(
    numbered_list: Path, backend: str, engine: tuple[str, str], text: str
) -> None:
    ds = daliaug.make_dataset(numbered(numbered_list, backend=backend))
    described = daliaug.describe(ds)
    assert (described.name, described.device, described.replicas) == (*engine, 1)
    assert str(described) == text
    with pytest.raises(ValueError, match="make_dataset"):
        daliaug.describe(ds.map(lambda *batch: batch))


@pytest.mark.parametrize("framework", ["numpy", "jax", "torch"])
def test_describe_takes_every_frameworks_output(numbered_list: Path, framework: str) -> None:
    pytest.importorskip(framework)
    config = numbered(numbered_list, backend="cpu")
    described = daliaug.describe(daliaug.make_dataset(config, framework=framework))
    assert (described.name, described.device, described.replicas) == ("dali", "cpu", 1)
    assert str(described) == "DALI on the CPU"


def test_describe_takes_a_dali_loader_and_names_anything_else(numbered_list: Path) -> None:
    loader = DaliLoader(daliaug.load_config(numbered(numbered_list, backend="cpu")))
    assert str(daliaug.describe(loader)) == "DALI on the CPU"
    with pytest.raises(ConfigError, match=r"or a DaliLoader, got a builtins\.list$"):
        daliaug.describe([1, 2])
    with pytest.raises(ConfigError, match=r"got a builtins\.tuple; for subset: both"):
        daliaug.describe((loader, loader))


def test_describe_says_what_auto_picked(numbered_list: Path) -> None:
    from daliaug.engines.select import resolve_backend

    config = numbered(numbered_list, backend="auto")
    described = daliaug.describe(daliaug.make_dataset(config))
    picked = resolve_backend(config)  # a file list without a GPU: the TensorFlow backend
    assert (described.name, described.device) == (
        ("tf", "cpu") if picked == "tf" else ("dali", picked)
    )


def test_class_weights_come_out_of_the_pipeline(backend: str, numbered_list: Path) -> None:
    config = numbered(numbered_list, backend=backend, shuffle=True)
    ds = daliaug.make_dataset(config, class_weight={3: 2.5, 7: 0.0})
    assert len(ds.element_spec) == 3 and ds.batches_per_epoch == len(ds) == 5
    for _, labels, weights in ds:
        expected = np.where(labels == 3, 2.5, np.where(labels == 7, 0.0, 1.0))
        assert np.array_equal(weights.numpy(), expected)


@pytest.mark.slow
def test_class_weights_on_tfrecords(backend: str, demo_dir: Path, tmp_path: Path) -> None:
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    write_tfrecords(DirectorySource(path=demo_dir).samples(), tmp_path / "rec", shards=2)
    source = {"type": "tfrecord", "path": str(tmp_path / "rec"), "index_dir": str(tmp_path)}
    config = config_for(demo_dir, source=source, backend=backend, batch_size=10)
    if backend == "opencv":  # OpenCV has no TFRecord reader: refused by name
        with pytest.raises(BackendError, match="TFRecords need TensorFlow's or DALI's reader"):
            daliaug.make_dataset(config, class_weight={1: 3.0})
        return
    batches = list(daliaug.make_dataset(config, class_weight={1: 3.0}))
    labels = np.concatenate([b[1].numpy() for b in batches])
    weights = np.concatenate([b[2].numpy() for b in batches])
    assert len(labels) == 48 and np.array_equal(weights, np.where(labels == 1, 3.0, 1.0))


@pytest.mark.parametrize(
    ("class_weight", "message"),
    [({9: 1.0}, "class_weight: key 9 is not a class index"), ({0: -1.0}, "is not >= 0")],
)
def test_bad_class_weights_name_the_key(demo_dir: Path, class_weight: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        daliaug.make_dataset(config_for(demo_dir), class_weight=class_weight)


def test_class_weights_refuse_segmentation(tmp_path: Path) -> None:
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=4, size=(32, 40))
    source = {
        "type": "segmentation",
        "images": str(root / "images"),
        "masks": str(root / "masks"),
        "num_classes": 5,
    }
    with pytest.raises(ConfigError, match="segmentation masks have a class per pixel"):
        daliaug.make_dataset(config_for(root, source=source), class_weight={1: 2.0})
