"""The GPU path (nvJPEG ``mixed`` decoder, GPU warp/colour/normalize) against the CPU path.

Runs only where DALI sees a GPU; needs no TensorFlow, so it runs on a GPU host that has DALI
alone (see bench/gpu_suite.sh).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.backends.dali.loader import DaliLoader
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
