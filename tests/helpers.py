"""Test helpers: synthetic images with real structure, and small datasets on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from daliaug.config import Config, load_config


def structured_image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    """An RGB uint8 image with gradients, sharp edges, a checkerboard and fine texture."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * x / max(1, w - 1)
    g = 255 * y / max(1, h - 1)
    b = 127.5 + 100 * np.sin(x / 3.0) * np.cos(y / 5.0)
    img = np.stack([r, g, b], axis=-1)
    img[(x // 8 + y // 8) % 2 == 0] *= 0.6  # checkerboard edges
    img[h // 4 : h // 4 + 3, :] = (255, 255, 0)  # a bright horizontal bar
    img += rng.normal(0, 6, img.shape)  # fine texture
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def write_image_dir(root: Path, images: dict[str, list[np.ndarray]], fmt: str = "png") -> Path:
    """``root/<class>/<i>.<fmt>`` for each class's list of images."""
    for name, arrays in images.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i, array in enumerate(arrays):
            Image.fromarray(array).save(root / name / f"{i:04d}.{fmt}", quality=95)
    return root


def config_for(root: Path, **fields: Any) -> Config:
    """A config over the class folders at ``root`` with ``fields`` set (CPU backend)."""
    base: dict[str, Any] = {
        "source": {"type": "directory", "path": str(root)},
        "image_size": 64,
        "batch_size": 4,
        "shuffle": False,
        "seed": 7,
        "backend": "cpu",
        "num_threads": 1,
    }
    return load_config({**base, **fields})
