"""make_dataset on each backend: element spec from the config, epochs of exactly N samples,
model.fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from daliaug.outputs.dali_loader import DaliLoader
from daliaug.outputs.dataset import make_dataset
from daliaug.sources.arrays import ArraysSource
from tests.helpers import config_for

PIPELINES_DIR = Path(__file__).parents[2] / "pipelines"
PIPELINES = sorted(PIPELINES_DIR.glob("*.yaml"))

SPEC_CASES = [
    ({}, (None, 64, 64, 3), tf.float32, (None,), tf.int32),
    ({"label_mode": "categorical"}, (None, 64, 64, 3), tf.float32, (None, 4), tf.float32),
    (
        {"output": {"layout": "NCHW", "dtype": "float16"}},
        (None, 3, 64, 64),
        tf.float16,
        (None,),
        tf.int32,
    ),
    (
        {"drop_remainder": True, "output": {"dtype": "uint8"}},
        (4, 64, 64, 3),
        tf.uint8,
        (4,),
        tf.int32,
    ),
]


@pytest.mark.parametrize(
    ("fields", "image_shape", "image_dtype", "label_shape", "label_dtype"), SPEC_CASES
)
def test_element_spec_and_batches_match_the_config(
    backend: str, demo_dir: Path, fields, image_shape, image_dtype, label_shape, label_dtype
) -> None:
    ds = make_dataset(
        config_for(
            demo_dir,
            backend=backend,
            transforms=[{"type": "random_resized_crop"}, {"type": "flip"}],
            **fields,
        )
    )
    images, labels = ds.element_spec
    assert tuple(images.shape) == image_shape and images.dtype == image_dtype
    assert tuple(labels.shape) == label_shape and labels.dtype == label_dtype
    batch = next(iter(ds))
    assert batch[0].dtype == image_dtype and batch[1].dtype == label_dtype
    assert tuple(batch[0].shape)[1:] == image_shape[1:] and batch[0].shape[0] == 4


def test_binary_labels(backend: str, demo_dir: Path) -> None:
    config = config_for(
        demo_dir,
        label_mode="binary",
        backend=backend,
        source={"type": "directory", "path": str(demo_dir), "class_names": ["circle", "square"]},
    )
    labels = np.concatenate([b[1].numpy() for b in make_dataset(config)])
    assert labels.shape == (24, 1) and set(labels.ravel()) == {0.0, 1.0}


def numbered_config(numbered_list: Path, **fields):
    """A config over the 23 numbered images, labels 0..22, five to a batch unless told."""
    source = {"type": "file_list", "path": str(numbered_list)}
    return config_for(numbered_list.parent, source=source, **{"batch_size": 5, **fields})


def epoch_labels(ds: tf.data.Dataset) -> list[list[int]]:
    return [b[1].numpy().tolist() for b in ds]


def test_each_sample_exactly_once_per_epoch_and_reshuffled(
    backend: str, numbered_list: Path
) -> None:
    config = numbered_config(
        numbered_list, backend=backend, shuffle=True, transforms=[{"type": "rotation", "angle": 20}]
    )
    ds = make_dataset(config)
    first, second = epoch_labels(ds), epoch_labels(ds)
    for epoch in (first, second):
        assert [len(b) for b in epoch] == [5, 5, 5, 5, 3]  # the last batch is partial
        assert sorted(np.concatenate(epoch).tolist()) == list(range(23))  # each sample once
    assert first != second  # a new order every epoch
    assert epoch_labels(make_dataset(config)) == first  # the same seed reproduces it


def test_drop_remainder_drops_only_the_partial_batch(backend: str, numbered_list: Path) -> None:
    config = numbered_config(numbered_list, backend=backend, shuffle=False, drop_remainder=True)
    assert epoch_labels(make_dataset(config)) == [list(range(i, i + 5)) for i in range(0, 20, 5)]


def test_random_parameters_change_every_epoch(backend: str, square_dir: Path) -> None:
    config = config_for(square_dir, backend=backend, transforms=[{"type": "rotation", "angle": 45}])
    ds = make_dataset(config)
    a, b = (next(iter(ds))[0].numpy() for _ in range(2))
    assert not np.array_equal(a, b)


def test_matches_the_dali_loader_with_the_same_parameters(demo_dir: Path) -> None:
    """The Keras path and the pure-DALI path run one graph: no shuffle, no randomness,
    identical pixels."""
    config = config_for(
        demo_dir,
        transforms=[{"type": "resize", "shorter_side": 70}, {"type": "center_crop", "size": 64}],
    )
    keras_images = np.concatenate([b[0].numpy() for b in make_dataset(config)])
    dali_images = np.concatenate([b[0] for b in DaliLoader(config)])
    assert np.array_equal(keras_images, dali_images)


def test_dali_loader_epochs(numbered_list: Path) -> None:
    config = numbered_config(numbered_list, shuffle=True, batch_size=4)
    loader = DaliLoader(config)
    epochs = [[b[1].tolist() for b in loader] for _ in range(2)]
    assert len(loader) == 6
    for epoch in epochs:
        assert sorted(np.concatenate(epoch).tolist()) == list(range(23)) and len(epoch[-1]) == 3
    assert epochs[0] != epochs[1]


@pytest.mark.slow
def test_model_fit_loss_falls(backend: str, demo_dir: Path) -> None:
    from daliaug.tools.models import small_cnn

    tf.keras.utils.set_random_seed(0)
    config = config_for(
        demo_dir,
        image_size=48,
        batch_size=8,
        shuffle=True,
        backend=backend,
        transforms=[
            {"type": "random_resized_crop", "scale": [0.6, 1]},
            {"type": "flip"},
            {"type": "normalize", "rescale": 1 / 255},
        ],
    )
    train = make_dataset(config)
    model = small_cnn(config, num_classes=4)
    history = model.fit(
        train, epochs=6, validation_data=make_dataset(config.evaluation_twin()), verbose=0
    )
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0]
    assert len(history.history["val_loss"]) == 6


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in PIPELINES))
def test_every_shipped_pipeline_runs(name: str, demo_cache: Path, monkeypatch) -> None:
    """Each config in pipelines/ builds and yields batches of its element spec, on the demo
    data written in the form its source reads."""
    from daliaug.config import load_config
    from daliaug.tools.demo_sources import demo_sources

    monkeypatch.setenv("DALIAUG_CACHE", str(demo_cache))
    config = load_config(PIPELINES_DIR / name, {"batch_size": 8, "backend": "cpu"})
    _, val = demo_sources(config.source)
    config = config.model_copy(update={"source": val})
    ds = make_dataset(config)
    images, targets = next(iter(ds))
    assert ds.element_spec[0].is_compatible_with(images)
    assert ds.element_spec[1].is_compatible_with(targets)
    assert images.shape[0] == 8


SEGMENTATION = {"type": "segmentation", "images": "i", "masks": "m", "num_classes": 3}


def test_auto_without_a_gpu_runs_the_faster_cpu_path(demo_dir: Path) -> None:
    """No GPU: ``auto`` runs the path ``bench.choose`` measured faster for the source kind and
    plan: the TensorFlow backend, but DALI's CPU operators for segmentation and for a policy;
    ``cpu`` still forces DALI, ``tf`` TensorFlow, ``opencv`` the OpenCV engine."""
    from daliaug.engine_names import Choice
    from daliaug.engines.select import choose, cuda_driver, dali_gpu_count, resolve_backend
    from daliaug.outputs.tfdata.dataset import tf_sees_gpu

    assert dali_gpu_count() == 0
    assert not cuda_driver()  # so auto does not import DALI to look for a GPU
    cases = [("auto", {}, "tf"), ("cpu", {}, "cpu"), ("tf", {}, "tf"), ("opencv", {}, "opencv")]
    cases += [(backend, {"source": SEGMENTATION}, backend) for backend in ("cpu", "tf")]
    cases += [("auto", {"source": SEGMENTATION}, "cpu")]
    policy = {"transforms": [{"type": "trivial_augment"}]}
    cases += [("auto", policy, "cpu"), ("tf", policy, "tf")]
    for backend, fields, expected in cases:
        config = config_for(demo_dir, backend=backend, batch_size=8, seed=3, **fields)
        assert resolve_backend(config) == expected, (backend, fields)
        chosen = choose(config, "tensorflow", tf_sees_gpu)
        name = expected if expected in ("tf", "opencv") else "dali"
        assert chosen == Choice(name, "cpu")
    auto = make_dataset(config_for(demo_dir, backend="auto", batch_size=8, seed=3))
    forced = make_dataset(config_for(demo_dir, backend="tf", batch_size=8, seed=3))
    (a, labels_a), (b, labels_b) = next(iter(auto)), next(iter(forced))
    assert np.array_equal(labels_a, labels_b) and np.allclose(a, b, atol=1e-5)


def test_auto_runs_the_cpu_default_where_tensorflow_sees_no_gpu(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DALI sees a GPU, TensorFlow (its CPU-only build) does not: ``auto`` warns, naming the
    fix, and runs the CPU's default (the TensorFlow backend; DALI's CPU operators for
    segmentation); ``gpu`` is an error (exit code 4) naming the fix."""
    import daliaug.engines.select
    from daliaug.engine_names import Choice
    from daliaug.engines.select import choose
    from daliaug.errors import BackendError, BackendWarning
    from daliaug.outputs.tfdata.dataset import tf_sees_gpu

    monkeypatch.setattr(daliaug.engines.select, "cuda_driver", lambda: True)
    monkeypatch.setattr(daliaug.engines.select, "dali_gpu_count", lambda: 1)
    assert not tf.config.list_physical_devices("GPU")
    config = config_for(demo_dir, backend="auto", batch_size=8)
    with pytest.warns(BackendWarning, match=r"tensorflow\[and-cuda\]"):
        assert choose(config, "tensorflow", tf_sees_gpu) == Choice("tf", "cpu")
    segmentation = config_for(demo_dir, backend="auto", source=SEGMENTATION)
    with pytest.warns(BackendWarning, match=r"DALI's CPU operators; .*tensorflow\[and-cuda\]"):
        assert choose(segmentation, "tensorflow", tf_sees_gpu) == Choice("dali", "cpu")
    with pytest.warns(BackendWarning, match=r"tensorflow\[and-cuda\]"):
        ds = make_dataset(config)
    images, _ = next(iter(ds))
    assert images.device.endswith("CPU:0") and images.shape[0] == 8
    with pytest.raises(BackendError, match=r"tensorflow\[and-cuda\]") as error:
        make_dataset(config_for(demo_dir, backend="gpu"))
    assert error.value.exit_code == 4


def test_label_modes_and_sample_weights(backend: str, demo_dir: Path) -> None:
    """``float``: class indices as float32 (batch,); ``input``: the images again; ``none``: the
    images alone; ``raw``: the arrays' own targets; ``sample_weight`` one weight per sample,
    times its class weight."""
    config = config_for(demo_dir, backend=backend, batch_size=48, label_mode="float")
    weights = np.linspace(0.1, 2.0, 48)
    _, labels, w = next(iter(make_dataset(config, sample_weight=weights, class_weight={1: 3.0})))
    assert labels.dtype == tf.float32 and labels.shape == (48,)
    expected = weights * np.where(labels.numpy() == 1, 3.0, 1.0)
    assert np.allclose(w.numpy(), expected)
    for mode, check in (
        ("input", lambda batch: len(batch) == 2 and np.array_equal(batch[0], batch[1])),
        ("none", lambda batch: len(batch) == 1 and batch[0].shape == (48, 64, 64, 3)),
    ):
        batch = next(iter(make_dataset(config.model_copy(update={"label_mode": mode}))))
        assert check(batch), mode
    x, y = np.zeros((6, 8, 8, 3), np.uint8), np.arange(12, dtype=np.float32).reshape(6, 2)
    raw = config_for(demo_dir, backend=backend, image_size=8, label_mode="raw", batch_size=6)
    raw = raw.model_copy(update={"source": ArraysSource()})
    _, targets = next(iter(make_dataset(raw, x=x, y=y)))
    assert targets.dtype == tf.float32 and np.array_equal(targets.numpy(), y)
