"""Detection at 640x640: daliaug's default path against ``tf.data`` with Keras 3's layers
moving the same boxes, in one interleaved run.

    python -m bench.detection [--repeats 3] [--seconds 20] [--out bench/results]

The data (made once, cached under daliaug's cache; scikit-learn installed for it alone): 400
JPEGs cut from scikit-learn's two sample photos at random sizes around 640x480, each with
boxes drawn as COCO's train2017 spreads them (about 7 per image, a geometric count capped at
50; 41 % small, 34 % medium, 25 % large by area), 80 classes, one COCO JSON. Both sides get
boxes in ``xyxy``, at most 100 per image, padded with -1, batch 32.

* ``keras``: ``tf.data`` reads and decodes each file, resizes it to 640x640 (as
  ``image_dataset_from_directory`` does), pads its boxes, batches, and maps Keras 3's layers
  over ``{"images", "bounding_boxes"}``: ``RandomZoom`` and ``RandomTranslation`` (the random
  crop's stand-in), ``RandomFlip``, ``RandomBrightness``, ``RandomContrast``,
  ``RandomSaturation``, each with ``bounding_box_format="xyxy"``.
* ``daliaug``: the ``coco`` source, ``random_resized_crop`` to 640, ``flip``, the same colour
  jitter, ``mosaic`` where daliaug has it, ``rescale`` 1/255: ``make_dataset`` with
  ``backend: auto`` (on a host without a GPU, whatever ``auto`` picks there).

Each measurement is a process of its own (warm-up batches, then ``--seconds`` of batches); the
tools alternate repeat by repeat, and the medians are reported (``detection-*.md``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from bench import machine
from bench.workloads import Data, Workload

SIDE, BATCH, MAX_BOXES, IMAGES, CLASSES = 640, 32, 100, 400, 80
TOOLS = ("keras", "daliaug")
LABELS = {
    "keras": "tf.data + Keras 3 layers (bounding_box_format)",
    "daliaug": "daliaug default (make_dataset, backend: auto)",
}
JITTER = 0.4
GPU_IMAGES = 128
"""The GPU suite's detection set: small enough to be carried to the GPU host with (b)'s
JPEGs (64 MiB in all)."""


def dataset_root() -> Path:
    """The cached detection set (written on first use): ``images/`` and ``annotations.json``."""
    from daliaug.cache import default_cache_dir

    root = default_cache_dir() / "bench-detection"
    if not (root / "annotations.json").exists():
        from sklearn.datasets import load_sample_images

        write_dataset(root, load_sample_images().images, IMAGES)
    return root


def write_dataset(root: Path, photos: Sequence[np.ndarray], count: int) -> None:
    """``count`` JPEGs cut from ``photos`` (RGB uint8, each at least 427x640) at random sizes
    around 640x480, scaled by 4/3, with COCO-like boxes (:func:`_boxes`): ``root/images`` and
    ``root/annotations.json``."""
    from PIL import Image

    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for i in range(count):
        photo = photos[i % len(photos)]
        h = int(rng.integers(360, 427))
        w = int(rng.integers(480, 640))
        y0 = int(rng.integers(0, photo.shape[0] - h + 1))
        x0 = int(rng.integers(0, photo.shape[1] - w + 1))
        crop = Image.fromarray(photo[y0 : y0 + h, x0 : x0 + w]).resize((w * 4 // 3, h * 4 // 3))
        name = f"{i:05d}.jpg"
        crop.save(root / "images" / name, quality=90)
        height, width = crop.height, crop.width
        images.append({"id": i, "file_name": name, "height": height, "width": width})
        for box in _boxes(rng, height, width):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i,
                    "category_id": int(rng.integers(1, CLASSES + 1)),
                    "bbox": box,
                    "area": box[2] * box[3],
                    "iscrowd": 0,
                }
            )
    categories = [{"id": k, "name": f"class{k}"} for k in range(1, CLASSES + 1)]
    text = json.dumps({"images": images, "annotations": annotations, "categories": categories})
    (root / "annotations.json").write_text(text)


def sample_photos() -> list[np.ndarray]:
    """matplotlib's sample photo (``grace_hopper.jpg``, no scikit-learn needed) scaled to
    683x800, and its mirror image."""
    from matplotlib import cbook
    from PIL import Image, ImageOps

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        photo = Image.open(f).convert("RGB").resize((800, 683), Image.Resampling.BICUBIC)
    return [np.asarray(photo), np.asarray(ImageOps.mirror(photo))]


def gpu_workload() -> Workload:
    """The daliaug side as the GPU suite's workload (d): its source's files come from
    :func:`prepare`'s data."""
    title = f"(d) COCO JPEGs with boxes: bench.detection's daliaug config at {SIDE}, batch {BATCH}"
    return Workload("d", title, daliaug_config({"type": "coco"}))


def prepare(quick: bool, cache: Path | None = None, scale: int = 1) -> Data:
    """The GPU suite's detection set (written once, cached under ``cache``, else daliaug's
    cache): :data:`GPU_IMAGES` JPEGs from :func:`sample_photos` with COCO-like boxes, each
    epoch 16 passes over them (16 images x 8 in quick mode), ``scale`` times longer."""
    from daliaug.cache import default_cache_dir

    count, repeat = (16, 8) if quick else (GPU_IMAGES, 16)
    root = (cache or default_cache_dir()) / "bench" / f"detection-{count}"
    if not (root / "annotations.json").exists():
        write_dataset(root, sample_photos(), count)
    return Data(None, root / "images", repeat * scale, root / "annotations.json")


def _boxes(rng: np.random.Generator, height: int, width: int) -> list[list[float]]:
    """COCO-like boxes ``[x, y, w, h]``: a geometric count (mean about 7), areas small (below
    32²), medium (to 96²) or large in COCO's shares, aspect ratios from 1/3 to 3."""
    count = min(int(rng.geometric(1 / 7.3)), 50)
    out = []
    for _ in range(count):
        kind = rng.choice(3, p=[0.41, 0.34, 0.25])
        low, high = [(8, 32), (32, 96), (96, min(height, width))][kind]
        side = float(rng.uniform(low, high))
        ratio = float(np.exp(rng.uniform(np.log(1 / 3), np.log(3))))
        w = min(side * np.sqrt(ratio), width - 1.0)
        h = min(side / np.sqrt(ratio), height - 1.0)
        x, y = float(rng.uniform(0, width - w)), float(rng.uniform(0, height - h))
        out.append([round(x, 2), round(y, 2), round(w, 2), round(h, 2)])
    return out


def keras_way(root: Path) -> Any:
    """Keras 3's layers moving the boxes over decoded, resized, padded, batched files."""
    import keras
    import tensorflow as tf

    coco = json.loads((root / "annotations.json").read_text())
    per_image: dict[int, list] = {im["id"]: [] for im in coco["images"]}
    for a in coco["annotations"]:
        per_image[a["image_id"]].append(a)
    paths, boxes, labels = [], [], []
    for im in coco["images"]:
        sx, sy = SIDE / im["width"], SIDE / im["height"]
        b = np.full((MAX_BOXES, 4), -1.0, np.float32)
        c = np.full((MAX_BOXES,), -1, np.int32)
        for k, a in enumerate(per_image[im["id"]][:MAX_BOXES]):
            x, y, w, h = a["bbox"]
            b[k] = [x * sx, y * sy, (x + w) * sx, (y + h) * sy]
            c[k] = a["category_id"] - 1
        paths.append(str(root / "images" / im["file_name"]))
        boxes.append(b)
        labels.append(c)
    fmt = {"bounding_box_format": "xyxy"}
    augment = keras.Sequential(
        [
            keras.layers.RandomZoom((-0.3, 0.0), fill_mode="constant", **fmt),
            keras.layers.RandomTranslation(0.15, 0.15, fill_mode="constant", **fmt),
            keras.layers.RandomFlip("horizontal", **fmt),
            keras.layers.RandomBrightness(JITTER, value_range=(0, 255), **fmt),
            keras.layers.RandomContrast(JITTER, value_range=(0, 255), **fmt),
            keras.layers.RandomSaturation((0.3, 0.7), value_range=(0, 255), **fmt),
        ]
    )

    def load(path: Any, b: Any, c: Any) -> Any:
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        image = tf.image.resize(image, (SIDE, SIDE))
        return {"images": image, "bounding_boxes": {"boxes": b, "labels": c}}

    def augmented(batch: Any) -> Any:
        out = augment(batch, training=True)
        return out["images"] / 255.0, out["bounding_boxes"]

    auto = tf.data.AUTOTUNE
    files = tf.data.Dataset.from_tensor_slices((paths, np.stack(boxes), np.stack(labels)))
    ds = files.shuffle(len(paths)).map(load, num_parallel_calls=auto).batch(BATCH)
    return ds.map(augmented, num_parallel_calls=auto).prefetch(auto)


def daliaug_way(root: Path) -> Any:
    """daliaug's default path over the same files and boxes."""
    import daliaug

    source = {
        "type": "coco",
        "annotations": str(root / "annotations.json"),
        "images": str(root / "images"),
    }
    return daliaug.make_dataset(daliaug_config(source))


def daliaug_config(source: dict[str, Any]) -> dict[str, Any]:
    """daliaug's side as a config over ``source``: random resized crop, flip, colour jitter,
    ``mosaic`` where daliaug has it, rescale (the GPU suite's detection row runs it too)."""
    jitter = [1 - JITTER, 1 + JITTER]
    transforms = [
        {"type": "random_resized_crop", "scale": [0.3, 1.0]},
        {"type": "flip"},
        {"type": "brightness", "factor": jitter},
        {"type": "contrast", "factor": jitter},
        {"type": "saturation", "factor": jitter},
    ]
    if has_mosaic():
        transforms.append({"type": "mosaic"})
    return {
        "source": source,
        "image_size": SIDE,
        "batch_size": BATCH,
        "max_boxes": MAX_BOXES,
        "transforms": transforms,
        "output": {"rescale": 1 / 255},
        "seed": 0,
    }


def has_mosaic() -> bool:
    """Whether this daliaug has the ``mosaic`` transform."""
    from daliaug.transforms import Transform

    return "mosaic" in Transform.registry


def measure(tool: str, seconds: float, warmup: int = 3) -> dict[str, Any]:
    """One repeat of ``tool``: ``warmup`` batches untimed, then ``seconds`` of batches (each
    batch's boxes read on the host, as a training step would take them)."""
    root = dataset_root()
    dataset = (keras_way if tool == "keras" else daliaug_way)(root)

    def stream() -> Any:
        while True:
            for images, targets in dataset:
                np.asarray(targets["boxes"])
                yield int(images.shape[0])

    return machine.timed(tool, stream(), seconds, warmup)


def report(samples: list[dict[str, Any]], described: dict[str, Any], mosaic: bool) -> str:
    """The medians as a Markdown table, each repeat's rate, and the ratio to Keras'."""
    rates = {t: [s["images_per_s"] for s in samples if s["tool"] == t] for t in TOOLS}
    ratio = median(rates["daliaug"]) / median(rates["keras"])
    lines = [
        f"# Detection at {SIDE}x{SIDE}: daliaug vs tf.data + Keras 3 layers ({described['date']})",
        "",
        f"{described['cpu']}, {described['cores_usable']} cores usable, GPU: "
        f"{described['gpu'] or 'none'}, commit {described['commit']}; {IMAGES} JPEGs with "
        f"COCO-like boxes, batch {BATCH}, max_boxes {MAX_BOXES}; repeats interleaved, each in a "
        "process of its own (`python -m bench.detection`). daliaug "
        + ("includes" if mosaic else "runs without")
        + " mosaic (Keras 3 has none).",
        "",
        "| tool | images/s (median) | each repeat |",
        "| --- | ---: | --- |",
        *(
            f"| {LABELS[t]} | {median(rates[t]):,.1f} | "
            + ", ".join(f"{r:,.1f}" for r in rates[t])
            + " |"
            for t in TOOLS
        ),
        "",
        f"daliaug / Keras: **{ratio:.2f}x** (target: at least 3x).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    dataset_root()
    machine.interleaved_main(
        "bench.detection",
        __doc__,
        TOOLS,
        measure,
        lambda samples, described: report(samples, described, has_mosaic()),
        (3, 20.0),
    )


if __name__ == "__main__":
    main()
