"""The demo's procedural data, written in the form each source type reads (cached)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.cache import (
    build_folder_atomically,
    default_cache_dir,
    write_atomically,
    writing_cache,
)
from daliaug.sources import SourceConfig
from daliaug.sources.directory import DirectorySource
from daliaug.tools.demo_data import (
    CLASS_NAMES,
    write_classification_dataset,
    write_detection_dataset,
    write_segmentation_dataset,
)

SPLITS = {"train": (200, 0), "val": (50, 1)}
"""Per split: images per class (and the number of segmentation and of detection samples),
and the seed."""


def _arrays(folder: Path, out: Path) -> Path:
    """The class folders decoded into one ``.npz`` of ``x`` (N, H, W, 3) uint8 and ``y``."""
    from PIL import Image

    if not out.is_file():
        samples = DirectorySource(path=folder).samples()
        x = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in samples.paths])
        arrays = io.BytesIO()
        np.savez(arrays, x=x, y=samples.labels, class_names=np.array(samples.class_names))
        write_atomically(out, arrays.getvalue())
    return out


def _file_list(folder: Path, out: Path) -> Path:
    if not out.is_file():
        samples = DirectorySource(path=folder).samples()
        rows = [
            f"{p},{samples.class_names[label]}\n"
            for p, label in zip(samples.paths, samples.labels, strict=True)
        ]
        write_atomically(out, "path,label\n" + "".join(rows))
    return out


def _tfrecords(folder: Path, out: Path) -> Path:
    from daliaug.tools.convert import write_tfrecords

    def write(tmp: Path) -> None:
        write_tfrecords(DirectorySource(path=folder).samples(), tmp, shards=2)

    return build_folder_atomically(out, write)


def demo_sources(source: SourceConfig) -> tuple[SourceConfig, SourceConfig]:
    """Training and validation sources like ``source``, over the procedural demo data (a
    :class:`~daliaug.errors.CacheError` where the cache cannot take it)."""
    cache = default_cache_dir()
    with writing_cache(cache, "the demo data"):
        updates = _written(source, cache)
    train, val = (source.model_validate({**source.model_dump(), **u}) for u in updates)
    return train, val


def _written(source: SourceConfig, cache: Path) -> list[dict[str, Any]]:
    """The demo data of each split written into ``cache``: the fields of its source."""
    updates: list[dict[str, Any]] = []
    for split, (per_class, seed) in SPLITS.items():
        if source.detection:
            root = write_detection_dataset(
                cache / "demo-detection" / split, count=per_class, seed=seed
            )
            coco = {"annotations": root / "annotations.json", "images": root / "images"}
            updates.append(coco if source.type == "coco" else {"path": root})
            continue
        if source.segmentation:
            root = write_segmentation_dataset(
                cache / "demo-segmentation" / split, count=per_class, seed=seed
            )
            colour = getattr(source, "colour_coded", False)
            updates.append(
                {
                    "images": root / "images",
                    "masks": root / ("masks_rgb" if colour else "masks"),
                    "pairs": None,
                    "classes": root / "classes.csv" if colour else None,
                    "num_classes": None if colour else 5,
                    "class_names": None if colour else ["background", *CLASS_NAMES],
                }
            )
            continue
        folder = write_classification_dataset(
            cache / "demo" / split, per_class=per_class, seed=seed
        )
        writers = {
            "directory": lambda f, s: f,
            "file_list": lambda f, s: _file_list(f, cache / f"demo-{s}.csv"),
            "arrays": lambda f, s: _arrays(f, cache / f"demo-{s}.npz"),
            "tfrecord": lambda f, s: _tfrecords(f, cache / "demo-tfrecord" / s),
        }
        updates.append({"path": writers[source.type](folder, split)})
    return updates
