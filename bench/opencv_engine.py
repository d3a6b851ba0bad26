"""The OpenCV engine (``backend: opencv``, NumPy output) against Albumentations in a PyTorch
``DataLoader`` with 2 worker processes, on classification and detection, in one interleaved
run.

    python -m bench.opencv_engine [--repeats 2] [--seconds 15] [--out bench/results]
        [--tools albumentations-det opencv-det opencv.tensorflow-det ...]

Both rows are also measured through the ``tf.data``, JAX and PyTorch outputs
(``opencv.<framework>-cls``, ``opencv.<framework>-det``), each in a process of its own;
``--tools`` measures some of the tools alone (the report shows the rows they make).

* classification: the JPEGs of workload (b) (about 500x375, :mod:`bench.workloads`), random
  resized crop to 224 (scale 0.08-1), horizontal flip, brightness and contrast 0.4, ImageNet
  mean/std, batch 32, float32 NHWC.
* detection: the COCO-style JPEGs of :mod:`bench.detection` (about 640x480, boxes), random
  resized crop to 512 (scale 0.3-1), flip, brightness and contrast 0.4, ImageNet mean/std,
  boxes ``xyxy`` padded to 100, batch 16.

Albumentations gets the same steps (``RandomResizedCrop``, ``HorizontalFlip``,
``ColorJitter``, ``Normalize``, ``BboxParams`` for the boxes), files read with
``cv2.imread``. ``decode-cls`` is the ceiling of the classification row: the same files read
and decoded whole (as the engine decodes them) on as many threads, nothing else. Albumentations
is needed for this benchmark only (``pip install
albumentations``). Each measurement is a process of its own (warm-up batches, then
``--seconds`` of batches); the medians are reported (``opencv-engine-*.md``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from statistics import median
from typing import Any

import numpy as np

from bench import machine
from bench.workloads import IMAGENET_MEAN, IMAGENET_STD

OUTPUTS = ("tensorflow", "jax", "torch")
"""The other outputs both rows are measured through (``opencv.<framework>-<kind>``)."""
TOOLS = (
    "albumentations-cls",
    "opencv-cls",
    "decode-cls",
    *(f"opencv.{framework}-cls" for framework in OUTPUTS),
    "albumentations-det",
    "opencv-det",
    *(f"opencv.{framework}-det" for framework in OUTPUTS),
)
SIZES = {"cls": (224, 32, (0.08, 1.0)), "det": (512, 16, (0.3, 1.0))}
JITTER = 0.4
MAX_BOXES = 100


def _config(kind: str) -> dict[str, Any]:
    side, batch, scale = SIZES[kind]
    if kind == "cls":
        from bench.workloads import prepare

        data = prepare("b", quick=False)
        source: dict[str, Any] = {"type": "directory", "path": str(data.directory)}
    else:
        from bench.detection import dataset_root

        root = dataset_root()
        source = {
            "type": "coco",
            "annotations": str(root / "annotations.json"),
            "images": str(root / "images"),
        }
    return {
        "source": source,
        "image_size": side,
        "batch_size": batch,
        "max_boxes": MAX_BOXES,
        "shuffle": True,
        "seed": 0,
        "backend": "opencv",
        "transforms": [
            {"type": "random_resized_crop", "scale": list(scale), "ratio": [0.75, 4 / 3]},
            {"type": "flip", "horizontal": 0.5},
            {"type": "brightness", "factor": JITTER},
            {"type": "contrast", "factor": JITTER},
        ],
        "output": {"mean": IMAGENET_MEAN, "std": IMAGENET_STD},
    }


def _forever(make: Any) -> Iterator[int]:
    while True:
        for batch in make():
            yield len(batch[0])


def opencv_batches(kind: str, framework: str = "numpy") -> Iterator[int]:
    """The engine's batches through ``framework``'s output (Keras' backend set to it first for
    JAX and PyTorch, whose batches are Keras data adapters)."""
    if framework in ("jax", "torch"):
        os.environ["KERAS_BACKEND"] = framework
    import daliaug

    batches = daliaug.make_dataset(_config(kind), framework=framework)
    return _forever(lambda: batches)


class _Files:
    """A map-style dataset of the config's files through an Albumentations pipeline."""

    def __init__(self, kind: str) -> None:
        import albumentations as A

        from daliaug.config import load_config

        config = load_config(_config(kind))
        samples = config.source.samples()
        self.paths = samples.files["path"]
        self.boxes = samples.columns.get("boxes")
        self.labels = samples.columns.get("box_labels", samples.columns.get("label"))
        side, _, scale = SIZES[kind]
        steps = [
            A.RandomResizedCrop(size=(side, side), scale=scale, ratio=(0.75, 4 / 3)),
            A.HorizontalFlip(p=0.5),
            A.ColorJitter(brightness=JITTER, contrast=JITTER, saturation=0, hue=0, p=1.0),
            A.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD, max_pixel_value=1.0),
        ]
        params = A.BboxParams(format="pascal_voc", label_fields=["labels"])
        self.pipeline = A.Compose(steps, bbox_params=params if self.boxes is not None else None)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[np.ndarray, ...]:
        import cv2

        image = cv2.cvtColor(cv2.imread(self.paths[i]), cv2.COLOR_BGR2RGB)
        if self.boxes is None:
            return self.pipeline(image=image)["image"], np.int32(self.labels[i])
        out = self.pipeline(image=image, bboxes=self.boxes[i], labels=self.labels[i])
        boxes = np.full((MAX_BOXES, 4), -1.0, np.float32)
        labels = np.full(MAX_BOXES, -1, np.int32)
        count = min(len(out["bboxes"]), MAX_BOXES)
        boxes[:count] = np.asarray(out["bboxes"], np.float32)[:count]
        labels[:count] = np.asarray(out["labels"])[:count]
        return out["image"], boxes, labels


def albumentations_batches(kind: str) -> Iterator[int]:
    from torch.utils.data import DataLoader

    loader = DataLoader(
        _Files(kind),
        batch_size=SIZES[kind][1],
        shuffle=True,
        num_workers=2,
        persistent_workers=True,
        prefetch_factor=4,
    )
    return _forever(lambda: loader)


def decode_batches(kind: str) -> Iterator[int]:
    """Batches of the files decoded whole by the engine's decoder on its threads, no more."""
    from concurrent.futures import ThreadPoolExecutor

    from daliaug.config import load_config
    from daliaug.engine_spec import EngineSpec
    from daliaug.engines.opencv.image import decode
    from daliaug.engines.opencv.pipeline import threads

    config = load_config(_config(kind))
    paths = config.source.samples().files["path"]
    batch = SIZES[kind][1]
    pool = ThreadPoolExecutor(threads(EngineSpec.of(config, "cpu", 0, 0, batch)))

    def one(path: str) -> np.ndarray:
        with open(path, "rb") as f:
            return decode(f.read(), 3)

    def epoch() -> Iterator[tuple[list[np.ndarray]]]:
        for start in range(0, len(paths), batch):
            yield (list(pool.map(one, paths[start : start + batch])),)

    return _forever(epoch)


def measure(tool: str, seconds: float) -> dict[str, Any]:
    name, kind = tool.rsplit("-", 1)
    if name.startswith("opencv."):
        return machine.timed(tool, opencv_batches(kind, name.split(".")[1]), seconds, warmup=5)
    make = {"opencv": opencv_batches, "decode": decode_batches}.get(name, albumentations_batches)
    return machine.timed(tool, make(kind), seconds, warmup=5)


def _versions() -> str:
    import albumentations
    import cv2
    import simplejpeg
    import torch

    return (
        f"Albumentations {albumentations.__version__}, OpenCV {cv2.__version__}, simplejpeg "
        f"{simplejpeg.__version__}, PyTorch {torch.__version__}"
    )


TITLES = {
    "cls": "classification: (b) JPEGs -> RRC 224, flip, brightness/contrast, normalize, batch 32",
    "det": "detection: COCO-style JPEGs with boxes -> RRC 512 (0.3-1), flip, "
    "brightness/contrast, normalize, batch 16",
}


def report(samples: list[dict[str, Any]], described: dict[str, Any]) -> str:
    """The tables of the tools measured (``--tools`` may leave some out)."""
    measured = [t for t in TOOLS if any(s["tool"] == t for s in samples)]
    rates = {t: median(s["images_per_s"] for s in samples if s["tool"] == t) for t in measured}
    kinds = [k for k in TITLES if {f"albumentations-{k}", f"opencv-{k}"} <= set(rates)]
    lines = [
        "# The OpenCV engine against Albumentations + DataLoader",
        "",
        f"Machine: {described['cpu']} ({described['cores']} cores, {described['memory_gib']} "
        f"GiB), {described.get('gpu') or 'no GPU'}; commit {described['commit']}; "
        f"{_versions()}. Medians of {len(samples) // len(measured)} interleaved repeats, each a "
        "process of its own.",
        "",
        "| workload | Albumentations + DataLoader (2 workers) | daliaug backend: opencv, "
        "NumPy output | ratio |",
        "|---|---:|---:|---:|",
    ]
    for kind in kinds:
        a, o = rates[f"albumentations-{kind}"], rates[f"opencv-{kind}"]
        lines.append(f"| {TITLES[kind]} | {a:,.0f} img/s | {o:,.0f} img/s | {o / a:.2f}x |")
    if "decode-cls" in rates and "opencv-cls" in rates:
        ceiling = rates["decode-cls"]
        lines += [
            "",
            f"The ceiling of the classification row, the same files read and decoded whole on "
            f"the engine's threads and nothing else: {ceiling:,.0f} img/s; the engine reaches "
            f"{rates['opencv-cls'] / ceiling:.2f}x of it.",
        ]
    for kind in kinds:
        lines += [
            "",
            f"The {TITLES[kind].split(':')[0]} row through every output (the same engine and "
            "batches):",
            "",
            "| output | images/s | x Albumentations + DataLoader |",
            "|---|---:|---:|",
        ]
        albumentations = rates[f"albumentations-{kind}"]
        for framework in ("numpy", *OUTPUTS):
            tool = f"opencv-{kind}" if framework == "numpy" else f"opencv.{framework}-{kind}"
            if tool in rates:
                rate = rates[tool]
                lines.append(f"| {framework} | {rate:,.0f} | {rate / albumentations:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    machine.interleaved_main(
        "bench.opencv_engine",
        __doc__ or "",
        TOOLS,
        measure,
        report,
        defaults=(2, 15.0),
        subsets=True,
    )


if __name__ == "__main__":
    main()
