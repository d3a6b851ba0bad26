"""The gallery: every transform on the same photo at a few magnitudes, masks overlaid and
boxes and keypoints drawn where it moves them, rendered on the CPU engines (the OpenCV engine,
else DALI on the CPU, else TensorFlow ops) with ``daliaug preview``'s machinery. The site's
build renders it (``docs/hooks.py``); ``python -m docs.gallery OUT`` writes it to a folder."""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docs import photos

MAGNITUDES = (1 / 3, 2 / 3, 1.0)
"""The shares of a parity example's strength a transform is shown at."""
STRENGTH = (
    "magnitude",
    "severity",
    "angle",
    "degrees",
    "factor",
    "x_factor",
    "height_factor",
    "rotation_range",
    "x",
    "intensity",
    "distortion_scale",
    "alpha",
    "sigma",
    "threshold",
    "bits",
    "scale",
)
"""The fields that set a transform's strength, the first one an example has taken."""
BACKENDS = ("opencv", "cpu", "tf")
"""The CPU engines, tried in turn for each transform: the first that runs it shows it."""
IMAGE_SIZE = 128
ENGINES = {"opencv": "the OpenCV engine", "cpu": "DALI on the CPU", "tf": "TensorFlow ops"}


@dataclass(frozen=True)
class Entry:
    """One transform's picture: its ``type``, what it does, where the picture lies in the site
    (``image``) and here (``path``), the settings its columns show and the engine that ran it."""

    name: str
    summary: str
    image: str
    path: Path
    settings: list[str]
    engine: str


def examples() -> dict[str, dict[str, Any]]:
    """Each transform's first parity example (every transform but ``normalize``, an output)."""
    from daliaug.parity.examples import TRANSFORM_EXAMPLES

    first: dict[str, dict[str, Any]] = {}
    for example in TRANSFORM_EXAMPLES:
        first.setdefault(example["type"], example)
    return first


def _scaled(value: Any, share: float) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return max(1, round(value * share))
    if isinstance(value, float):
        return round(value * share, 3)
    if isinstance(value, list):
        return [_scaled(v, share) for v in value]
    return value


def settings(example: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The transform at each of :data:`MAGNITUDES` of its strength field (or as the example
    has it, where it has none), each with its caption; a ``probability`` set to 1, so that
    every picture shows the transform."""
    from daliaug.transforms import TRANSFORMS

    base = dict(example)
    if "probability" in TRANSFORMS[example["type"]].model_fields:
        base["probability"] = 1.0
    field = next((f for f in STRENGTH if f in example), None)
    if field is None:
        return [("as configured", base)]
    shown = []
    for share in MAGNITUDES:
        value = _scaled(example[field], share)
        caption = f"{field}: {value}"
        if all(caption != c for c, _ in shown):
            shown.append((caption, {**base, field: value}))
    return shown


def _sources(root: Path) -> dict[str, tuple[dict[str, Any], Any, Any]]:
    """The photo and its mirror image as each kind of sample: with masks (a folder), with
    boxes and keypoints (in memory), and with a class (in memory): each a source's fields and
    the ``x`` and ``y`` it takes."""
    image = photos.photo()
    mirror = image[:, ::-1]
    folder = photos.segmentation_folder(root)
    from PIL import Image

    Image.fromarray(mirror).save(Path(folder["images"]) / "mirror.jpg", quality=92)
    Image.fromarray(photos.mask()[:, ::-1]).save(Path(folder["masks"]) / "mirror.png")
    y = photos.detection_sample()[1]
    width = image.shape[1]
    boxes = y["boxes"][0].copy()
    boxes[:, [0, 2]] = width - boxes[:, [2, 0]]
    points = y["keypoints"][0].copy()
    points[..., 0] = np.where(points[..., 2] > 0, width - points[..., 0], 0)
    boxed = {
        "boxes": np.stack([y["boxes"][0], boxes]),
        "labels": np.concatenate([y["labels"], y["labels"]]),
        "keypoints": np.stack([y["keypoints"][0], points]),
    }
    pair = np.stack([image, mirror])
    classes = {"type": "arrays", "class_names": ["photo", "mirror image"]}
    return {
        "masks": (folder, None, None),
        "boxes": (photos.detection_source(), pair, boxed),
        "class": (classes, pair, np.array([0, 1])),
    }


def _config(source: dict[str, Any], transform: dict[str, Any], backend: str) -> Any:
    from daliaug.config import load_config

    return load_config(
        {
            "source": source,
            "image_size": IMAGE_SIZE,
            "seed": 0,
            "label_mode": "categorical",
            "backend": backend,
            "transforms": [transform],
        }
    )


def _row(kind: str, shown: list[tuple[str, dict[str, Any]]], sources: dict, backend: str) -> Any:
    """The photo and the transform at each setting, as one kind of sample on ``backend``."""
    from daliaug.tools.preview import augmented_versions, overlay, tiles

    source, x, y = sources[kind]
    tiles_row, titles, marks = [], [], []
    original = None
    for caption, transform in shown:
        config = _config(source, transform, backend)
        versions = augmented_versions(config, 2, 1, x, y)  # two samples: batch stages mix them
        tile, _, mark = tiles(config, versions.augmented, versions.targets, versions.class_names)
        if original is None:
            names = len(photos.MASK_NAMES)
            first = versions.originals[0]
            original = (overlay(first, photos.mask(), names) if kind == "masks" else first,)
            original += (versions.marks[0] if kind == "boxes" else None,)
        tiles_row.append(tile[0])
        titles.append(caption)
        marks.append(mark[0] if mark else None)
    image, mark = original
    return [image, *tiles_row], [f"photo ({kind})", *titles], [mark, *marks]


def render_one(name: str, example: dict[str, Any], sources: dict, out: Path) -> Entry:
    """One transform's picture: a row per kind of target it moves (masks, boxes), or the
    photo with a class where it takes neither, on the first CPU engine that runs it."""
    from daliaug.errors import DaliaugError
    from daliaug.tools.preview import save_grid
    from daliaug.transforms import TRANSFORMS

    shown = settings(example)
    problems = []
    for backend in BACKENDS:
        kinds = []
        for kind in ("masks", "boxes"):
            try:
                _config(sources[kind][0], shown[0][1], backend)
                kinds.append(kind)
            except DaliaugError:
                continue
        try:
            rows = [_row(k, shown, sources, backend) for k in kinds or ["class"]]
        except DaliaugError as e:
            problems.append(f"{backend}: {e}")
            continue
        images = [i for row in rows for i in row[0]]
        titles = [t for row in rows for t in row[1]]
        marks = [m for row in rows for m in row[2]]
        path = save_grid(
            images, titles, out / f"{name}.jpg", 1 + len(shown), marks, photos.BOX_NAMES
        )
        doc = TRANSFORMS[name].__doc__ or ""
        summary = " ".join(doc.strip().split("\n\n")[0].split())
        return Entry(name, summary, f"gallery/{name}.jpg", path, [c for c, _ in shown], backend)
    raise RuntimeError(f"gallery: no CPU engine ran {name}: {problems}")


def render(out: Path) -> list[Entry]:
    """Every transform's picture written into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sources = _sources(Path(tmp))
        return [render_one(n, e, sources, out) for n, e in sorted(examples().items())]


def markdown(entries: list[Entry]) -> str:
    """The gallery page's sections: each transform's name, what it does and its picture."""
    from docs.reference import markdown_text

    parts = []
    for entry in entries:
        parts.append(
            f"## `{entry.name}`\n\n{markdown_text(entry.summary)}\n\n"
            f"![{entry.name} at {', '.join(entry.settings)}]({entry.image})\n\n"
            f"*Rendered by {ENGINES[entry.engine]} (`backend: {entry.engine}`).*\n"
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.gallery", description=__doc__)
    parser.add_argument("out", type=Path, help="folder to write the pictures into")
    args = parser.parse_args(argv)
    for entry in render(args.out):
        print(entry.path, entry.engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
