"""A grid of augmented samples, to see what a config does before training on it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from daliaug.config import Config, Output

_PALETTE = np.array(
    [
        (230, 25, 75),
        (60, 180, 75),
        (255, 225, 25),
        (0, 130, 200),
        (245, 130, 48),
        (145, 30, 180),
        (70, 240, 240),
        (240, 50, 230),
        (210, 245, 60),
        (250, 190, 212),
    ],
    dtype=np.float64,
)


def augmented_samples(config: Config, count: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``count`` augmented images (uint8, NHWC, before normalization) with their labels or
    masks (class indices), and the class names; labels stay soft (weights) where a batch stage
    mixes them."""
    from daliaug.outputs.numpy import DaliLoader

    update = {
        "output": Output(dtype="uint8"),
        "batch_size": count,
        "drop_remainder": False,
    }
    if not config.plan.batch_stages:  # a batch stage mixes labels: keep them soft
        update["label_mode"] = "int"
    if config.source.segmentation:
        update["source"] = config.source.model_copy(update={"mask_output": "index"})
    loader = DaliLoader(config.model_copy(update=update))
    images, targets = next(iter(loader))[:2]
    return images, targets, loader.samples.class_names


def overlay(image: np.ndarray, mask: np.ndarray, num_classes: int) -> np.ndarray:
    """The image with each class tinted in its own colour; ignored pixels hatched grey."""
    tint = _PALETTE[np.minimum(mask, num_classes - 1) % len(_PALETTE)]
    out = (
        image.astype(np.float64) if image.shape[-1] == 3 else np.repeat(image, 3, -1).astype(float)
    )
    ignored = mask >= num_classes
    out = np.where(((mask > 0) & ~ignored)[..., None], 0.45 * out + 0.55 * tint, out)
    hatch = (np.add.outer(np.arange(mask.shape[0]), np.arange(mask.shape[1])) // 3) % 2 == 0
    out[ignored & hatch] = 128
    return out.astype(np.uint8)


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


def preview(config: Config, count: int, path: Path) -> Path:
    """Write a grid of ``count`` augmented samples: captioned by class, or with masks overlaid."""
    images, targets, names = augmented_samples(config, count)
    if config.source.segmentation:
        shown = np.stack([overlay(i, m, len(names)) for i, m in zip(images, targets, strict=True)])
        titles = [
            ", ".join(names[c] for c in np.unique(m) if 0 < c < len(names)) or "-" for m in targets
        ]
        return save_grid(shown, titles, path)
    return save_grid(images, [caption(t, names) for t in targets], path)


def caption(target: np.ndarray, names: list[str]) -> str:
    """A class name, or for a soft label (MixUp, CutMix) each class with its weight."""
    target = np.asarray(target)
    if target.ndim == 0 and target.dtype.kind in "iu":
        return names[int(target)]
    weights = target.reshape(-1).astype(np.float64)
    if weights.size == 1:  # binary: the weight of the second class
        weights = np.array([1.0 - weights[0], weights[0]])
    order = [k for k in np.argsort(-weights, kind="stable") if weights[k] >= 0.005]
    return " / ".join(f"{names[k]} {weights[k]:.2f}" for k in order)
