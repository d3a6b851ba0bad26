"""A grid of augmented samples, to see what a config does before training on it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from daliaug.config import Config, Output


def augmented_samples(config: Config, count: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``count`` augmented images (uint8, NHWC, before normalization), labels and class names."""
    from daliaug.dali_loader import DaliLoader

    shown = config.model_copy(
        update={"output": Output(dtype="uint8"), "batch_size": count, "label_mode": "int"}
    )
    loader = DaliLoader(shown)
    images, labels = next(iter(loader))[:2]
    return images, labels, loader.samples.class_names


def save_grid(images: np.ndarray, titles: list[str], path: Path) -> Path:
    """Write the images as a captioned grid PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2 * cols, 2.2 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, image, title in zip(axes.flat, images, titles, strict=False):
        ax.imshow(image.squeeze(), cmap="gray" if image.shape[-1] == 1 else None, vmin=0, vmax=255)
        ax.set_title(title, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
