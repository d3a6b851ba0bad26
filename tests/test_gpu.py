"""The GPU path (nvJPEG ``mixed`` decoder, GPU warp/colour/normalize) against the CPU path.

Runs only where DALI sees a GPU; needs no TensorFlow, so it runs on a GPU host that has DALI
alone (see bench/gpu_suite.sh).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.outputs.dali_loader import DaliLoader
from tests.helpers import config_for, structured_image, write_image_dir

pytestmark = pytest.mark.gpu

PIPELINE = [
    {"type": "random_resized_crop", "scale": [0.3, 1.0]},
    {"type": "flip"},
    {"type": "rotation", "angle": 25},
    {"type": "brightness", "factor": 0.3},
    {"type": "contrast", "factor": 0.3},
    {"type": "saturation", "factor": 0.3},
    {"type": "hue", "degrees": 15},
]


def run_both(root: Path, **fields) -> tuple[np.ndarray, np.ndarray]:
    """Images from the CPU and the GPU pipeline with the same explicit parameters."""
    config = config_for(root, **fields)
    n = len(config.source.samples())
    plan = config.plan
    from daliaug.epoch import draw_rows

    params = draw_rows(plan, np.random.default_rng(0), n) if plan.param_keys else None
    cpu, gpu = (
        np.concatenate([b[0] for b in DaliLoader(config, device=d, params=params)])
        for d in ("cpu", "gpu")
    )
    return cpu.astype(np.float64), gpu.astype(np.float64)


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    arrays = [structured_image(96, 128, seed=i) for i in range(6)]
    root = tmp_path_factory.mktemp("gpu")
    write_image_dir(root / "png", {"a": arrays}, fmt="png")
    write_image_dir(root / "jpeg", {"a": arrays}, fmt="jpg")
    return root


def test_gpu_matches_cpu_on_lossless_input(images: Path) -> None:
    cpu, gpu = run_both(images / "png", transforms=PIPELINE, output={"dtype": "uint8"})
    diff = np.abs(cpu - gpu)
    assert diff.mean() <= 0.5 and np.mean(diff <= 2) >= 0.995


def test_nvjpeg_decoding_is_close_to_the_cpu_decoder(images: Path) -> None:
    cpu, gpu = run_both(images / "jpeg", output={"dtype": "uint8"}, image_size=[96, 128])
    assert np.abs(cpu - gpu).mean() <= 1.0


def test_gpu_outputs_stay_on_the_gpu(images: Path) -> None:
    loader = DaliLoader(config_for(images / "jpeg", transforms=PIPELINE), device="gpu")
    batch = next(loader.raw_batches())
    assert all(type(t).__name__ == "TensorListGPU" for t in batch)


def test_gpu_masks_equal_cpu_masks(tmp_path: Path) -> None:
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=8, size=(64, 96))
    source = {
        "type": "segmentation",
        "images": str(root / "images"),
        "masks": str(root / "masks_rgb"),
        "classes": str(root / "classes.csv"),
    }
    config = config_for(root, source=source, transforms=PIPELINE, seed=3)
    cpu, gpu = (
        np.concatenate([b[1] for b in DaliLoader(config, device=d)]) for d in ("cpu", "gpu")
    )
    assert np.mean(cpu != gpu) <= 0.005


def _tf_gpu() -> bool:
    try:
        import tensorflow as tf
    except ImportError:
        return False
    return bool(tf.config.list_physical_devices("GPU"))


needs_tf_gpu = pytest.mark.skipif(not _tf_gpu(), reason="needs TensorFlow's CUDA build")


@needs_tf_gpu
def test_make_dataset_on_the_gpu_fits_and_sees_every_sample_once(tmp_path: Path) -> None:
    """``make_dataset`` on the GPU: a GPU-placed DALIDatasetWithInputs, each sample exactly
    once per epoch, batches on the GPU, close to the CPU path, and one model.fit epoch."""
    from daliaug.outputs.dataset import make_dataset
    from daliaug.tools.models import small_cnn

    root = write_image_dir(
        tmp_path, {"img": [structured_image(64 + i % 3, 80, seed=i) for i in range(23)]}
    )
    listing = tmp_path / "list.csv"
    listing.write_text("".join(f"img/{i:04d}.png,{i}\n" for i in range(23)))
    source = {"type": "file_list", "path": str(listing)}
    config = config_for(root, source=source, backend="gpu", batch_size=5, shuffle=True)
    gpu = make_dataset(config)
    assert gpu.batches_per_epoch == 5
    labels, images = [], []
    for batch_images, batch_labels in gpu:
        assert "GPU" in batch_images.device
        labels += batch_labels.numpy().tolist()
        images.append(batch_images.numpy())
    assert sorted(labels) == list(range(23))
    cpu = make_dataset(config.model_copy(update={"backend": "cpu"}))
    cpu_images = np.concatenate([b[0].numpy() for b in cpu])
    assert np.abs(np.concatenate(images) - cpu_images).mean() <= 0.5

    fit_config = config.model_copy(update={"label_mode": "categorical"})
    model = small_cnn(fit_config, 23)
    history = model.fit(make_dataset(fit_config), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
