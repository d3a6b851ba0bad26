"""Procedural, labelled image datasets for demos, tests and benchmarks (numpy and Pillow only).

Each image shows shapes over a textured background: a colour gradient plus band-limited noise,
warped stripes of random orientation and fine grain. A shape's class sets its outline and its
two-tone fill motif (dots, checks, stripes, grid), with size, position, rotation and colours
random, so the class survives rotation, flips, shifts, zoom and colour jitter. The motif gives a
small CNN a local cue, so that it beats chance within a few epochs.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

#: Shape classes, sorted so that a class's index is its position among the sorted folder names.
CLASS_NAMES: tuple[str, ...] = ("circle", "cross", "square", "triangle")

#: RGB colour of background (first) and of each class in ``masks_rgb``.
_PALETTE = np.array(
    [(0, 0, 0), (230, 25, 75), (255, 225, 25), (60, 180, 75), (0, 130, 200)], dtype=np.uint8
)
_MARKER = ".daliaug-demo.json"
_FORMAT_VERSION = 1  # bump when the generator changes, so that cached datasets are rewritten
_SEGMENTATION_PNG_FRACTION = 0.25

Size = tuple[int, int] | tuple[tuple[int, int], tuple[int, int]]


def _smooth_noise(rng: np.random.Generator, h: int, w: int, cell: float) -> np.ndarray:
    """(H, W, 3) band-limited noise in [-1, 1]: random values ``cell`` pixels apart, bicubic."""
    gh, gw = int(h / cell) + 2, int(w / cell) + 2
    grid = Image.fromarray(rng.integers(0, 256, (gh, gw, 3), dtype=np.uint8))
    return np.asarray(grid.resize((w, h), Image.Resampling.BICUBIC), np.float32) / 127.5 - 1.0


def _pattern(rng: np.random.Generator, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(H, W, 3) zero-mean texture: two octaves of noise, warped stripes and grain."""
    h, w = y.shape[0], x.shape[1]
    side = min(h, w)
    coarse = _smooth_noise(rng, h, w, side * rng.uniform(0.15, 0.35))
    fine = _smooth_noise(rng, h, w, rng.uniform(2.0, 5.0))
    angle = float(rng.uniform(0, np.pi))
    period = side * float(rng.uniform(0.04, 0.12))
    phase = (x * np.cos(angle) + y * np.sin(angle)) * (2 * np.pi / period)
    stripes = np.sin(phase + float(rng.uniform(2, 6)) * coarse[..., 0])[..., None]
    amplitudes = rng.uniform([15, 6, 5, 7], [40, 20, 30, 20]).astype(np.float32)
    return (
        amplitudes[0] * coarse
        + amplitudes[1] * fine
        + amplitudes[2] * stripes * rng.uniform(-1, 1, 3).astype(np.float32)
        + amplitudes[3] * (rng.random((h, w, 3), dtype=np.float32) - 0.5)
    )


def _shape_distance(label: int, u: np.ndarray, v: np.ndarray, radius: float) -> np.ndarray:
    """Approximate signed distance (pixels, < 0 inside) to shape ``label`` of circumradius
    ``radius``, in shape-aligned coordinates ``u``, ``v``."""
    au, av = np.abs(u), np.abs(v)
    name = CLASS_NAMES[label]
    if name == "circle":
        return np.hypot(u, v) - 0.8 * radius
    if name == "square":
        return np.maximum(au, av) - 0.7 * radius
    if name == "cross":
        arm = 0.3 * radius
        return np.minimum(np.maximum(au - radius, av - arm), np.maximum(au - arm, av - radius))
    normals = np.pi / 2 + 2 * np.pi / 3 * np.arange(3)  # triangle
    return np.maximum.reduce([u * np.cos(a) + v * np.sin(a) for a in normals]) - 0.5 * radius


def _motif(label: int, u: np.ndarray, v: np.ndarray, period: float) -> np.ndarray:
    """Class-specific two-tone fill pattern (-1 or 1): dots, checks, stripes or a grid."""
    a, b = np.sin(u * (2 * np.pi / period)), np.sin(v * (2 * np.pi / period))
    name = CLASS_NAMES[label]
    if name == "circle":
        on = a * b > 0.4
    elif name == "cross":
        on = a * b > 0
    elif name == "square":
        on = a > 0
    else:  # triangle
        on = np.minimum(np.abs(a), np.abs(b)) < 0.4
    return np.where(on, np.float32(1), np.float32(-1))[..., None]


def _render(
    rng: np.random.Generator, size: tuple[int, int], labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image, index mask and instance map (0, or ``k + 1`` where shape ``k`` shows) of shapes
    ``labels`` drawn in order (later ones occlude earlier)."""
    if not all(0 <= label < len(CLASS_NAMES) for label in labels):
        raise ValueError(f"class labels must be in [0, {len(CLASS_NAMES)}), got {labels}")
    h, w = size
    y = np.arange(h, dtype=np.float32)[:, None]
    x = np.arange(w, dtype=np.float32)[None, :]
    ends = rng.uniform(30, 225, (2, 3)).astype(np.float32)
    angle = float(rng.uniform(0, 2 * np.pi))
    ramp = x * np.cos(angle) + y * np.sin(angle)
    ramp = (ramp - ramp.min()) / max(float(np.ptp(ramp)), 1.0)
    image = ends[0] + (ends[1] - ends[0]) * ramp[..., None] + _pattern(rng, y, x)
    mask = np.zeros(size, np.uint8)
    owner = np.zeros(size, np.uint8)
    side = min(h, w)
    for k, label in enumerate(labels):
        radius = side * float(rng.uniform(0.18, 0.32)) / len(labels) ** 0.5
        cy, cx = rng.uniform(0.8 * radius, np.array([h, w]) - 0.8 * radius).tolist()
        turn = float(rng.uniform(0, 2 * np.pi))
        u = (x - cx) * np.cos(turn) + (y - cy) * np.sin(turn)
        v = (y - cy) * np.cos(turn) - (x - cx) * np.sin(turn)
        distance = _shape_distance(int(label), u, v, radius)
        inside = distance < 0
        # A fill colour that stands out from the background under the shape.
        candidates = rng.uniform(20, 235, (16, 3)).astype(np.float32)
        under = image[inside] if inside.any() else image.reshape(-1, 3)
        contrast = np.linalg.norm(candidates - under.mean(axis=0), axis=1)
        far = contrast > 90
        colour = candidates[np.argmax(far) if far.any() else np.argmax(contrast)]
        motif = _motif(int(label), u, v, max(4.0, radius * float(rng.uniform(0.3, 0.5))))
        fill = colour + float(rng.uniform(15, 45)) * motif + 0.4 * _pattern(rng, y, x)
        alpha = np.clip(0.5 - distance, 0, 1)[..., None]  # one-pixel anti-aliased edge
        image = image * (1 - alpha) + fill * alpha
        mask[inside] = label + 1
        owner[inside] = k + 1
    return np.clip(image, 0, 255).astype(np.uint8), mask, owner


def render_sample(
    rng: np.random.Generator, size: tuple[int, int], label: int
) -> tuple[np.ndarray, np.ndarray]:
    """One (H, W, 3) uint8 image of class ``label`` and its (H, W) uint8 mask: 0 = background,
    ``label + 1`` = the shape's pixels."""
    image, mask, _ = _render(rng, size, np.array([label]))
    return image, mask


def _draw_size(rng: np.random.Generator, size: Size) -> tuple[int, int]:
    """``size`` if it is (H, W), else an (H, W) drawn from ((min_h, max_h), (min_w, max_w))."""
    bounds = np.asarray(size, dtype=np.int64)
    if bounds.shape == (2,):
        return int(bounds[0]), int(bounds[1])
    if bounds.shape == (2, 2):
        h, w = rng.integers(bounds[:, 0], bounds[:, 1] + 1)
        return int(h), int(w)
    raise ValueError(f"size must be (H, W) or ((min_h, max_h), (min_w, max_w)), got {size!r}")


def _is_png(index: int, fraction: float) -> bool:
    """Whether image ``index`` is a PNG, spreading a ``fraction`` share evenly over the indices."""
    return int((index + 1) * fraction) > int(index * fraction)


def _save(stem: Path, array: np.ndarray, png: bool, quality: int = 90) -> None:
    """Write ``array`` to ``stem``.png or ``stem``.jpg, creating the folder if needed."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    if png:
        Image.fromarray(array).save(stem.with_suffix(".png"))
    else:
        Image.fromarray(array).save(stem.with_suffix(".jpg"), quality=quality)


def _is_complete(root: Path, params: Mapping[str, Any]) -> bool:
    """Whether ``root`` holds a finished dataset written with ``params``."""
    try:
        return json.loads((root / _MARKER).read_text()) == params
    except (OSError, ValueError):
        return False


def _remove_orphans(root: Path) -> None:
    """Remove the temporary folders next to ``root`` whose writing process is gone (killed
    before it could clean up); those of running processes stay."""
    for tmp in root.parent.glob(f".{glob.escape(root.name)}.tmp-*"):
        pid = tmp.name.rsplit("-", 1)[1]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's
        return True
    return True


def _write_dataset(
    root: Path,
    params: dict[str, Any],
    count: int,
    write_one: Callable[[Path, int], None],
    files: Mapping[str, str] | None = None,
    finish: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``count`` samples with ``write_one(folder, index)`` plus text ``files`` into ``root``,
    then ``finish(folder)`` (what sums up every sample).

    Does nothing if ``root`` already holds a dataset written with the same ``params``. Writes into
    a temporary sibling folder that is renamed to ``root`` once complete, replacing an outdated
    dataset (never a folder without the marker file, unless it is empty).
    """
    root = Path(root).expanduser()
    params = json.loads(json.dumps({"format": _FORMAT_VERSION, **params}))
    if _is_complete(root, params):
        return root
    if root.exists() and not (root / _MARKER).is_file() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not a daliaug demo dataset; not overwriting")
    _remove_orphans(root)
    tmp = root.with_name(f".{root.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for name, text in (files or {}).items():
            (tmp / name).write_text(text)
        pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1))
        try:
            list(pool.map(partial(write_one, tmp), range(count)))
        finally:
            pool.shutdown(cancel_futures=True)  # stop at the first failure or interrupt
        if finish is not None:
            finish(tmp)
        (tmp / _MARKER).write_text(json.dumps(params, indent=2))
        if not _is_complete(root, params):  # unless another process finished it meanwhile
            if root.exists():
                shutil.rmtree(root)
            try:
                tmp.rename(root)
            except OSError:
                if not _is_complete(root, params):  # another process's rename came first
                    raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def write_classification_dataset(
    root: Path,
    *,
    per_class: int = 200,
    size: Size = (96, 96),
    seed: int = 0,
    png_fraction: float = 0.25,
    quality: int = 90,
) -> Path:
    """Write ``root/<class_name>/<class>_<i:05d>.jpg|.png`` and return ``root``.

    A ``png_fraction`` share of each class is PNG, the rest JPEG. ``size`` is (H, W), or a
    ((min_h, max_h), (min_w, max_w)) range to draw each image's size from; ((300, 450),
    (400, 600)) averages about 500x375. Returns at once if ``root`` already holds this dataset.
    """

    def write_one(folder: Path, index: int) -> None:
        label, i = divmod(index, per_class)
        rng = np.random.default_rng([seed, index])
        image, _ = render_sample(rng, _draw_size(rng, size), label)
        name = CLASS_NAMES[label]
        _save(folder / name / f"{name}_{i:05d}", image, _is_png(i, png_fraction), quality)

    params = {
        "kind": "classification",
        "per_class": per_class,
        "size": size,
        "seed": seed,
        "png_fraction": png_fraction,
        "quality": quality,
    }
    return _write_dataset(root, params, len(CLASS_NAMES) * per_class, write_one)


def write_segmentation_dataset(
    root: Path,
    *,
    count: int = 300,
    size: tuple[int, int] = (96, 96),
    seed: int = 0,
    quality: int = 90,
) -> Path:
    """Write a segmentation dataset of 1-3 shapes per image and return ``root``.

    ``root/images/<stem>.jpg`` (a quarter ``.png``), ``root/masks/<stem>.png`` (grayscale index
    masks: 0 = background, ``i + 1`` = ``CLASS_NAMES[i]``), ``root/masks_rgb/<stem>.png`` (the
    same, colour-coded) and ``root/classes.csv`` (``name,r,g,b``, background first) giving the
    colours. Returns at once if ``root`` already holds this dataset.
    """

    def write_one(folder: Path, index: int) -> None:
        rng = np.random.default_rng([seed, index])
        labels = rng.integers(0, len(CLASS_NAMES), rng.integers(1, 4))
        image, mask, _ = _render(rng, _draw_size(rng, size), labels)
        stem = f"sample_{index:05d}"
        _save(folder / "images" / stem, image, _is_png(index, _SEGMENTATION_PNG_FRACTION), quality)
        _save(folder / "masks" / stem, mask, png=True)
        _save(folder / "masks_rgb" / stem, _PALETTE[mask], png=True)

    rows = [
        f"{name},{r},{g},{b}"
        for name, (r, g, b) in zip(("background", *CLASS_NAMES), _PALETTE, strict=True)
    ]
    classes_csv = "\n".join(["name,r,g,b", *rows]) + "\n"
    params = {
        "kind": "segmentation",
        "count": count,
        "size": size,
        "seed": seed,
        "quality": quality,
    }
    return _write_dataset(root, params, count, write_one, {"classes.csv": classes_csv})


def visible_boxes(owner: np.ndarray) -> list[tuple[int, tuple[int, int, int, int]]]:
    """Each shape's visible extent in an instance map (see :func:`_render`): ``(k, (x0, y0,
    x1, y1))`` in pixel corners, for the shapes ``k`` that show at all."""
    boxes = []
    for k in range(int(owner.max())):
        ys, xs = np.nonzero(owner == k + 1)
        if len(xs):
            boxes.append((k, (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)))
    return boxes


def _voc_xml(filename: str, height: int, width: int, objects: list[tuple[str, tuple]]) -> str:
    """A Pascal VOC annotation: corners as 1-based inclusive pixel indices."""
    parts = [
        f"<object><name>{name}</name><difficult>0</difficult><bndbox><xmin>{x0 + 1}</xmin>"
        f"<ymin>{y0 + 1}</ymin><xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
        for name, (x0, y0, x1, y1) in objects
    ]
    return (
        f"<annotation><filename>{filename}</filename><size><width>{width}</width>"
        f"<height>{height}</height><depth>3</depth></size>{''.join(parts)}</annotation>\n"
    )


def write_detection_dataset(
    root: Path,
    *,
    count: int = 200,
    size: Size = (128, 160),
    seed: int = 0,
    max_objects: int = 4,
    quality: int = 90,
) -> Path:
    """Write a detection dataset of 1 to ``max_objects`` shapes per image and return ``root``.

    The same boxes in three forms: ``root/annotations.json`` (COCO, ``file_name`` relative to
    ``root/images``, category ids 1 to 4), ``root/labels/<stem>.txt`` with ``root/data.yaml``
    (YOLO, beside ``root/images``) and ``root/Annotations/<stem>.xml`` over
    ``root/JPEGImages`` (Pascal VOC). A box is the extent of its shape's visible pixels (a
    shape hidden by later ones has none); classes are :data:`CLASS_NAMES`. Returns at once if
    ``root`` already holds this dataset.
    """
    records: dict[int, dict[str, Any]] = {}

    def write_one(folder: Path, index: int) -> None:
        rng = np.random.default_rng([seed, index])
        labels = rng.integers(0, len(CLASS_NAMES), rng.integers(1, max_objects + 1))
        image, _, owner = _render(rng, _draw_size(rng, size), labels)
        h, w = owner.shape
        stem = f"sample_{index:05d}"
        _save(folder / "images" / stem, image, png=False, quality=quality)
        (folder / "JPEGImages").mkdir(exist_ok=True)
        shutil.copyfile(folder / "images" / f"{stem}.jpg", folder / "JPEGImages" / f"{stem}.jpg")
        boxes = [(int(labels[k]), box) for k, box in visible_boxes(owner)]
        lines = [
            f"{c} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} {(x1 - x0) / w:.6f} "
            f"{(y1 - y0) / h:.6f}\n"
            for c, (x0, y0, x1, y1) in boxes
        ]
        (folder / "labels").mkdir(exist_ok=True)
        (folder / "labels" / f"{stem}.txt").write_text("".join(lines))
        (folder / "Annotations").mkdir(exist_ok=True)
        objects = [(CLASS_NAMES[c], box) for c, box in boxes]
        (folder / "Annotations" / f"{stem}.xml").write_text(_voc_xml(f"{stem}.jpg", h, w, objects))
        records[index] = {"file_name": f"{stem}.jpg", "height": h, "width": w, "boxes": boxes}

    def finish(folder: Path) -> None:
        images, annotations = [], []
        for index in sorted(records):
            record = records[index]
            images.append(
                {"id": index + 1, **{k: record[k] for k in ("file_name", "height", "width")}}
            )
            for c, (x0, y0, x1, y1) in record["boxes"]:
                annotations.append(
                    {
                        "id": len(annotations) + 1,
                        "image_id": index + 1,
                        "category_id": c + 1,
                        "bbox": [x0, y0, x1 - x0, y1 - y0],
                        "area": (x1 - x0) * (y1 - y0),
                        "iscrowd": 0,
                    }
                )
        categories = [{"id": i + 1, "name": n} for i, n in enumerate(CLASS_NAMES)]
        coco = {"images": images, "annotations": annotations, "categories": categories}
        (folder / "annotations.json").write_text(json.dumps(coco))

    names = "".join(f"  {i}: {name}\n" for i, name in enumerate(CLASS_NAMES))
    params = {
        "kind": "detection",
        "count": count,
        "size": size,
        "seed": seed,
        "max_objects": max_objects,
        "quality": quality,
    }
    files = {"data.yaml": f"path: .\ntrain: images\nval: images\nnames:\n{names}"}
    return _write_dataset(root, params, count, write_one, files, finish)
