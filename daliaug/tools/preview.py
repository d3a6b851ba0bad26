"""A grid of samples as they are beside their augmented versions, to see what a config does
before training on it."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from daliaug.boxes import to_xyxy
from daliaug.config import Config, Output, load_with_targets
from daliaug.detection import box_names
from daliaug.engines.select import named_choice
from daliaug.prepare import prepare
from daliaug.run import Run
from daliaug.sources.annotations import pixel_targets
from daliaug.sources.base import Samples
from daliaug.sources.sample_set import SampleSet
from daliaug.tools.out_paths import make_parent

FORMATS = ("png", "jpg", "jpeg", "pdf", "svg")
"""The suffixes a preview's grid is written as; any other path is written as a PNG."""

Targets = np.ndarray | dict[str, np.ndarray]
"""A batch's targets: labels or masks, or Keras' ``bounding_boxes`` dict for detection."""

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


def _prepare(config: Config, x: Any = None, y: Any = None) -> Run:
    """The config's samples (or the arrays ``x`` and ``y``: boxes where ``y`` is Keras'
    ``bounding_boxes`` dict), engine and device for a preview: DALI (without TensorFlow) on
    the device ``backend`` names here, or the TensorFlow engine for ``backend: tf`` (the
    configs whose transforms DALI lacks, such as ``fill: reflect``), or the OpenCV engine for
    ``backend: opencv``."""
    config = load_with_targets(config, y)
    return prepare(config, named_choice(config), x=x, y=y)


def augmented_samples(
    config: Config, count: int, x: Any = None, y: Any = None
) -> tuple[np.ndarray, Targets, list[str]]:
    """The first ``count`` augmented images of the first epoch (uint8, NHWC, before
    normalization) with their labels or masks (class indices) or boxes, and the class names;
    labels stay soft (weights) where a batch stage mixes them."""
    run = _prepare(_preview_config(config, count), x, y)
    return (*_first_batch(run, run.samples), run.samples.class_names)


def _first_batch(run: Run, samples: SampleSet) -> tuple[np.ndarray, Targets]:
    from daliaug.outputs.bridges import engine_batches as batches

    batch = next(batches(run.engine, run.config, samples, run.device))
    return batch[0], batch[1]


@dataclass(frozen=True)
class Marks:
    """What to draw on one tile: boxes (absolute ``xyxy``, pixel corners), their class
    indices, and keypoints ``(x, y, visible)`` per box (or ``None``)."""

    boxes: np.ndarray
    labels: np.ndarray
    keypoints: np.ndarray | None = None

    @staticmethod
    def of_batch(targets: Mapping[str, np.ndarray], fmt: str, size: tuple[int, int]) -> list[Marks]:
        """Each image's boxes in a batch's ``targets`` (Keras' dict, in ``fmt`` on images of
        ``size``), without the padding."""
        boxes = to_xyxy(np.asarray(targets["boxes"]), fmt, size)
        points = targets.get("keypoints")
        if points is not None and fmt.startswith("rel_"):
            points = np.asarray(points) * np.array([size[1], size[0], 1.0], np.float32)
        out = []
        for i, labels in enumerate(np.asarray(targets["labels"])):
            real = labels >= 0
            kp = None if points is None else np.asarray(points[i])[real]
            out.append(Marks(boxes[i][real], labels[real], kp))
        return out

    @staticmethod
    def of_samples(samples: Samples) -> list[Marks | None]:
        """Each sample's own boxes, as its source gives them (``None`` without boxes)."""
        if not box_names(samples):
            return [None] * len(samples)
        boxes, labels, points = pixel_targets(samples)
        return [
            Marks(
                np.asarray(b, np.float32).reshape(-1, 4),
                np.asarray(c),
                None if points is None else np.asarray(points[i]),
            )
            for i, (b, c) in enumerate(zip(boxes, labels, strict=True))
        ]


@dataclass(frozen=True)
class Versions:
    """Samples as they are (``originals``, named by ``names``: file names, or array rows,
    with their own boxes in ``marks`` for detection) and ``versions`` augmented versions of
    each (``augmented``: ``count * versions`` images, sample by sample, with their
    ``targets``)."""

    originals: list[np.ndarray]
    names: list[str]
    augmented: np.ndarray
    targets: Targets
    class_names: list[str]
    marks: list[Marks | None] = field(default_factory=list)


def augmented_versions(
    config: Config, count: int, versions: int, x: Any = None, y: Any = None
) -> Versions:
    """``count`` samples spread over the source (evenly through its listing, so that a
    class-folder source shows its classes), each as it is and in ``versions`` augmented
    versions, drawn as the pipeline draws them (``x`` and ``y``: an ``arrays`` source's
    images and targets). A streamed source (TFRecords), whose samples the host does not hold,
    gives the first ``count * versions`` samples augmented, without originals."""
    run = _prepare(_preview_config(config, count * versions, shuffle=False), x, y)
    samples = run.samples
    if not isinstance(samples, Samples):
        return Versions([], [], *_first_batch(run, samples), samples.class_names)
    picks = np.unique(np.linspace(0, len(samples) - 1, min(count, len(samples))).astype(int))
    images, targets = _first_batch(run, samples.subset(np.repeat(picks, versions)))
    chosen = samples.subset(picks)
    if chosen.paths:
        originals = [_decoded(p, config.channels) for p in chosen.paths]
        names = [Path(p).name for p in chosen.paths]
    elif "encoded" in chosen.columns:  # images read from shards (zero-padded rows)
        rows = np.asarray(chosen.columns["encoded"])
        originals = [_decoded(io.BytesIO(row.tobytes()), config.channels) for row in rows]
        names = [f"sample {i}" for i in picks]
    else:
        originals = list(chosen.columns["image"])
        names = [f"x[{i}]" for i in picks]
    marks = Marks.of_samples(chosen)
    return Versions(originals, names, images, targets, samples.class_names, marks)


def _decoded(path: str | BinaryIO, channels: int) -> np.ndarray:
    """The image file (or its bytes) as Pillow decodes it, RGB or grey as ``channels`` says."""
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


def _draw(ax: Any, marks: Marks, names: list[str]) -> None:
    """``marks`` on the image shown in ``ax`` (whose pixel ``i`` spans ``i - 0.5 .. i + 0.5``):
    each box outlined in its class's colour and named, its visible keypoints as dots."""
    from matplotlib.patches import Rectangle

    for k, ((x0, y0, x1, y1), label) in enumerate(zip(marks.boxes, marks.labels, strict=True)):
        colour = _PALETTE[int(label) % len(_PALETTE)] / 255.0
        ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, lw=1, ec=colour))
        name = names[int(label)] if 0 <= label < len(names) else str(int(label))
        ax.text(
            x0 - 0.5,
            y0 - 0.5,
            name,
            fontsize=5,
            color="black",
            va="bottom",
            bbox={"fc": colour, "ec": "none", "pad": 0.5},
        )
        if marks.keypoints is not None:
            points = marks.keypoints[k]
            shown = points[points[:, 2] > 0]
            if len(shown):
                ax.scatter(shown[:, 0] - 0.5, shown[:, 1] - 0.5, s=4, color=colour)


def save_grid(
    images: Sequence[np.ndarray],
    titles: list[str],
    path: Path,
    cols: int | None = None,
    marks: Sequence[Marks | None] = (),
    names: list[str] | None = None,
) -> Path:
    """Write the images as a captioned grid to ``path`` exactly (a PNG, or the image format its
    suffix names), ``cols`` to a row (default: a square), with each image's ``marks`` (boxes
    named by ``names``, keypoints) drawn where given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = cols or math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2 * cols, 2.2 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for i, (ax, image, title) in enumerate(zip(axes.flat, images, titles, strict=False)):
        ax.imshow(image.squeeze(), cmap="gray" if image.shape[-1] == 1 else None, vmin=0, vmax=255)
        ax.set_title(title, fontsize=8)
        if i < len(marks) and marks[i] is not None:
            _draw(ax, marks[i], names or [])
    fig.tight_layout()
    suffix = path.suffix[1:].lower()
    fig.savefig(path, dpi=100, format=suffix if suffix in FORMATS else "png")
    plt.close(fig)
    return path


def grid_path(out: Path) -> Path:
    """Where a preview asked to go to ``out`` is written: ``out``, or ``preview.png`` in it
    where it is a folder."""
    return out / "preview.png" if out.is_dir() else out


def preview(
    config: Config, count: int, path: Path, versions: int = 3, x: Any = None, y: Any = None
) -> Path:
    """Write a grid of ``count`` samples, one per row: the sample as it is (titled with its
    file name) beside ``versions`` augmented versions (captioned by class, with masks
    overlaid, or with boxes drawn and named and keypoints dotted). A streamed source
    (TFRecords) shows ``count * versions`` augmented samples instead. ``x`` and ``y``: an
    ``arrays`` source's images and targets (Keras' ``bounding_boxes`` dict for boxes).
    Returns where the grid went (:func:`grid_path`)."""
    path = grid_path(path)
    make_parent(path, "preview: --out")  # before the work: a file in the way named at once
    shown = augmented_versions(config, count, versions, x, y)
    names = shown.class_names
    drawn_tiles, titles, marks = tiles(config, shown.augmented, shown.targets, names)
    if not shown.originals:
        return save_grid(drawn_tiles, titles, path, marks=marks, names=names)
    grid: list[np.ndarray] = []
    captions: list[str] = []
    drawn: list[Marks | None] = []
    for row, original in enumerate(shown.originals):
        grid.append(original)
        captions.append(_short(shown.names[row]))
        drawn.append(shown.marks[row])
        grid.extend(drawn_tiles[row * versions : (row + 1) * versions])
        captions.extend(titles[row * versions : (row + 1) * versions])
        drawn.extend(marks[row * versions : (row + 1) * versions])
    return save_grid(grid, captions, path, cols=1 + versions, marks=drawn, names=names)


def tiles(
    config: Config, images: np.ndarray, targets: Targets, names: list[str]
) -> tuple[list[np.ndarray], list[str], list[Marks | None]]:
    """Augmented images as tiles with their captions and marks: the class (or mixed weights),
    the mask overlaid and its classes named, or the boxes (their count in the caption)."""
    if isinstance(targets, Mapping):
        size = (images.shape[1], images.shape[2])
        found = Marks.of_batch(targets, config.bounding_box_format, size)
        titles = [f"{len(m.labels)} box{'es' * (len(m.labels) != 1)}" for m in found]
        return list(images), titles, list(found)
    if not config.source.segmentation:
        return list(images), [caption(t, names) for t in targets], []
    shown = [overlay(i, m, len(names)) for i, m in zip(images, targets, strict=True)]
    titles = [
        ", ".join(names[c] for c in np.unique(m) if 0 < c < len(names)) or "-" for m in targets
    ]
    return shown, titles, []


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
