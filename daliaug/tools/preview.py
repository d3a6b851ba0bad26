"""A grid of samples as they are beside their augmented versions, to see what a config does
before training on it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daliaug.config import Config, Output
from daliaug.engines.select import resolve_device
from daliaug.prepare import Prepared, prepare
from daliaug.sources.base import Samples
from daliaug.sources.sample_set import SampleSet

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


def _preview_config(config: Config, batch_size: int, **update: object) -> Config:
    """``config`` giving uint8 images before normalization in batches of ``batch_size``, its
    labels as class indices unless a batch stage mixes them (then soft: weights), masks as
    class indices."""
    fields: dict[str, object] = {
        "output": Output(dtype="uint8"),
        "batch_size": batch_size,
        "drop_remainder": False,
        **update,
    }
    if not config.plan.batch_stages:  # a batch stage mixes labels: keep them soft
        fields["label_mode"] = "int"
    if config.source.segmentation:
        fields["source"] = config.source.model_copy(update={"mask_output": "index"})
    return config.model_copy(update=fields)


def _prepare(config: Config) -> Prepared:
    """The config's samples, engine and device for a preview: DALI (without TensorFlow) on
    the device ``backend`` names here, or the TensorFlow engine for ``backend: tf`` (the
    configs whose transforms DALI lacks, such as ``fill: reflect``)."""
    return prepare(config, device=None if config.backend == "tf" else resolve_device(config))


def augmented_samples(config: Config, count: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The first ``count`` augmented images of the first epoch (uint8, NHWC, before
    normalization) with their labels or masks (class indices), and the class names; labels
    stay soft (weights) where a batch stage mixes them."""
    prepared = _prepare(_preview_config(config, count))
    return (*_first_batch(prepared, prepared.samples), prepared.samples.class_names)


def _first_batch(prepared: Prepared, samples: SampleSet) -> tuple[np.ndarray, np.ndarray]:
    from daliaug.outputs.numpy import batches

    batch = next(batches(prepared.engine.name, prepared.config, samples, prepared.device))
    return batch[0], batch[1]


@dataclass(frozen=True)
class Versions:
    """Samples as they are (``originals``, named by ``names``: file names, or array rows)
    and ``versions`` augmented versions of each (``augmented``: ``count * versions`` images,
    sample by sample, with their ``targets``)."""

    originals: list[np.ndarray]
    names: list[str]
    augmented: np.ndarray
    targets: np.ndarray
    class_names: list[str]


def augmented_versions(config: Config, count: int, versions: int) -> Versions:
    """``count`` samples spread over the source (evenly through its listing, so that a
    class-folder source shows its classes), each as it is and in ``versions`` augmented
    versions, drawn as the pipeline draws them. A streamed source (TFRecords), whose samples
    the host does not hold, gives the first ``count * versions`` samples augmented, without
    originals."""
    prepared = _prepare(_preview_config(config, count * versions, shuffle=False))
    samples = prepared.samples
    if not isinstance(samples, Samples):
        return Versions([], [], *_first_batch(prepared, samples), samples.class_names)
    picks = np.unique(np.linspace(0, len(samples) - 1, min(count, len(samples))).astype(int))
    images, targets = _first_batch(prepared, samples.subset(np.repeat(picks, versions)))
    chosen = samples.subset(picks)
    if chosen.paths:
        originals = [_decoded(p, config.channels) for p in chosen.paths]
        names = [Path(p).name for p in chosen.paths]
    else:
        originals = list(chosen.columns["image"])
        names = [f"x[{i}]" for i in picks]
    return Versions(originals, names, images, targets, samples.class_names)


def _decoded(path: str, channels: int) -> np.ndarray:
    """The image file as Pillow decodes it, RGB or grey as ``channels`` says."""
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB" if channels == 3 else "L"))


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


def save_grid(
    images: Sequence[np.ndarray], titles: list[str], path: Path, cols: int | None = None
) -> Path:
    """Write the images as a captioned grid PNG, ``cols`` to a row (default: a square)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = cols or math.ceil(math.sqrt(len(images)))
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


def preview(config: Config, count: int, path: Path, versions: int = 3) -> Path:
    """Write a grid of ``count`` samples, one per row: the sample as it is (titled with its
    file name) beside ``versions`` augmented versions (captioned by class, or with masks
    overlaid). A streamed source (TFRecords) shows ``count * versions`` augmented samples
    instead."""
    shown = augmented_versions(config, count, versions)
    tiles, titles = _tiles(config, shown.augmented, shown.targets, shown.class_names)
    if not shown.originals:
        return save_grid(tiles, titles, path)
    rows = len(shown.originals)
    grid: list[np.ndarray] = []
    captions: list[str] = []
    for row in range(rows):
        grid.append(shown.originals[row])
        captions.append(_short(shown.names[row]))
        grid.extend(tiles[row * versions : (row + 1) * versions])
        captions.extend(titles[row * versions : (row + 1) * versions])
    return save_grid(grid, captions, path, cols=1 + versions)


def _tiles(
    config: Config, images: np.ndarray, targets: np.ndarray, names: list[str]
) -> tuple[list[np.ndarray], list[str]]:
    """Augmented images as tiles with their captions: the class (or mixed weights), or the
    mask overlaid and its classes named."""
    if not config.source.segmentation:
        return list(images), [caption(t, names) for t in targets]
    shown = [overlay(i, m, len(names)) for i, m in zip(images, targets, strict=True)]
    titles = [
        ", ".join(names[c] for c in np.unique(m) if 0 < c < len(names)) or "-" for m in targets
    ]
    return shown, titles


def _short(name: str, width: int = 24) -> str:
    """``name`` cut in the middle to ``width`` characters."""
    if len(name) <= width:
        return name
    half = (width - 1) // 2
    return f"{name[:half]}~{name[-(width - 1 - half) :]}"


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
