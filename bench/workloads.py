"""The workloads, each defined once as a daliaug config; every tool derives its pipeline
from that config (:class:`Equivalent`), so the transform sets cannot drift apart.

(a) CIFAR-sized in-memory uint8 arrays: rotation ±45°, shifts ±0.1, horizontal flip, ``nearest``
fill, rescale 1/255 (the classic ``ImageDataGenerator`` example).
(b) A folder of textured JPEGs of about 500x375: random resized crop to 224, horizontal flip,
brightness/contrast/saturation jitter 0.4, ImageNet mean/std.
(c) The JPEGs of (b): random resized crop to 224, horizontal flip, RandAugment (2 ops,
magnitude 9 of 31), then MixUp (alpha 0.2) and CutMix (alpha 1) in turn (soft labels), ImageNet
mean/std: the shipped recipe ``imagenet_randaug_mix.yaml``.
(d), the GPU suite's detection workload, is :mod:`bench.detection`'s (its config and data).

Both use batch size 128: the CIFAR example's batch and a common per-GPU ImageNet batch; on two
cores a batch of (b) still takes well under a second for the fast tools, so every timed window
spans many batches. Imports neither TensorFlow nor Keras.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.cache import default_cache_dir
from daliaug.config import Config, load_config
from daliaug.sources import Samples

BATCH_SIZE = 128
QUICK_BATCH_SIZE = 8
"""A quick (smoke) run's batch, every workload's: each tool, stage and row still builds and
yields whole batches (MixUp and CutMix still pair samples), of 16 times fewer pixels than (b)'s."""
IMAGENET_MEAN = [123.675, 116.28, 103.53]
IMAGENET_STD = [58.395, 57.12, 57.375]


@dataclass(frozen=True)
class Equivalent:
    """A workload's transforms as the plain numbers the baselines take (from the config)."""

    size: tuple[int, int]
    batch_size: int
    rotation: float  # degrees, ±
    shift: tuple[float, float]  # (x, y) fractions of the size, ±
    flip: bool
    fill: str  # "nearest" or "constant"
    crop_scale: tuple[float, float] | None  # random resized crop: area fraction range
    crop_ratio: tuple[float, float] | None
    brightness: float  # factor ranges [1 - d, 1 + d]; 0 = none
    contrast: float
    saturation: float
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @staticmethod
    def of(config: Config) -> Equivalent:
        def first(kind: str) -> Any:
            return next((t for t in config.transforms if t.type == kind), None)

        def spread(t: Any) -> float:
            return 0.0 if t is None else round(float(t.factor[1]) - 1.0, 6)

        rotation, shift, crop = first("rotation"), first("shift"), first("random_resized_crop")
        flip = first("flip")
        mean, std = config.output.mean_std(config.channels)
        return Equivalent(
            size=config.image_size,
            batch_size=config.batch_size,
            rotation=0.0 if rotation is None else float(rotation.angle[1]),
            shift=(0.0, 0.0) if shift is None else (float(shift.x[1]), float(shift.y[1])),
            flip=flip is not None and flip.horizontal > 0,
            fill="nearest" if config.fill == "nearest" else "constant",
            crop_scale=None if crop is None else tuple(crop.scale),
            crop_ratio=None if crop is None else tuple(crop.ratio),
            brightness=spread(first("brightness")),
            contrast=spread(first("contrast")),
            saturation=spread(first("saturation")),
            mean=tuple(mean),
            std=tuple(std),
        )

    @property
    def zoom(self) -> tuple[float, float]:
        """Stand-in for the random resized crop where a tool has none: the crop window's side
        as a fraction of the image side, ``sqrt`` of the area range (``(1, 1)`` without one)."""
        if self.crop_scale is None:
            return (1.0, 1.0)
        return (self.crop_scale[0] ** 0.5, self.crop_scale[1] ** 0.5)


@dataclass(frozen=True)
class Workload:
    """One workload: its daliaug config (without a data path) and how its data is made."""

    name: str
    title: str
    config: dict[str, Any]

    def daliaug_config(self, data: Data, **overrides: Any) -> Config:
        source = dict(self.config["source"])
        if data.annotations is not None:
            source.update(annotations=str(data.annotations), images=str(data.directory))
        elif data.directory is not None:
            source["path"] = str(data.directory)
        return load_config({**self.config, "source": source, **overrides})

    def at_batch(self, batch_size: int | None) -> Workload:
        """This workload with batches of ``batch_size`` (``None``: its own)."""
        if batch_size is None:
            return self
        return replace(self, config={**self.config, "batch_size": batch_size})

    @cached_property
    def equivalent(self) -> Equivalent:
        return Equivalent.of(self.daliaug_config(Data(None, Path("."), 1)))


WORKLOADS = {
    "a": Workload(
        "a",
        "(a) 32x32 in-memory arrays: rotation 45°, shift 0.1, flip",
        {
            "source": {"type": "arrays"},
            "image_size": 32,
            "batch_size": BATCH_SIZE,
            "shuffle": True,
            "seed": 0,
            "transforms": [
                {"type": "rotation", "angle": 45, "fill": "nearest"},
                {"type": "shift", "x": 0.1, "y": 0.1, "fill": "nearest"},
                {"type": "flip", "horizontal": 0.5},
                {"type": "normalize", "rescale": 1 / 255},
            ],
            "backend": "cpu",
        },
    ),
    "b": Workload(
        "b",
        "(b) ~500x375 JPEGs: random resized crop 224, flip, colour jitter, normalize",
        {
            "source": {"type": "directory", "path": "."},
            "image_size": 224,
            "batch_size": BATCH_SIZE,
            "shuffle": True,
            "seed": 0,
            "transforms": [
                {"type": "random_resized_crop", "scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]},
                {"type": "flip", "horizontal": 0.5},
                {"type": "brightness", "factor": 0.4},
                {"type": "contrast", "factor": 0.4},
                {"type": "saturation", "factor": 0.4},
                {"type": "normalize", "mean": IMAGENET_MEAN, "std": IMAGENET_STD},
            ],
            "backend": "cpu",
        },
    ),
    "c": Workload(
        "c",
        "(c) ~500x375 JPEGs: random resized crop 224, flip, RandAugment(2, 9), MixUp, CutMix, "
        "normalize",
        {
            "source": {"type": "directory", "path": "."},
            "image_size": 224,
            "batch_size": BATCH_SIZE,
            "shuffle": True,
            "seed": 0,
            "label_mode": "categorical",
            "transforms": [
                {"type": "random_resized_crop", "scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]},
                {"type": "flip", "horizontal": 0.5},
                {"type": "rand_augment", "num_ops": 2, "magnitude": 9},
                {"type": "mixup", "alpha": 0.2},
                {"type": "cutmix", "alpha": 1.0},
                {"type": "normalize", "mean": IMAGENET_MEAN, "std": IMAGENET_STD},
            ],
            "backend": "cpu",
        },
    ),
}


@dataclass(frozen=True)
class Data:
    """A workload's data on disk: an ``.npz`` of arrays (a), a folder of JPEGs (b), or a folder
    of JPEGs with a COCO ``annotations`` file (:func:`bench.detection.prepare`).

    ``repeat`` makes one epoch that many passes over the data (tools see a longer epoch),
    so that a timed window never crosses an epoch boundary.
    """

    arrays: Path | None
    directory: Path | None
    repeat: int
    annotations: Path | None = None

    def arrays_xy(self) -> tuple[np.ndarray, np.ndarray]:
        assert self.arrays is not None
        with np.load(self.arrays) as f:
            return np.tile(f["x"], (self.repeat, 1, 1, 1)), np.tile(f["y"], self.repeat)

    def files(self) -> tuple[list[str], np.ndarray, list[str]]:
        """Image paths and int labels of one (repeated) epoch, and the class names."""
        samples = self.samples()
        return samples.paths, samples.labels, samples.class_names

    def samples(self) -> Samples:
        """The daliaug samples of one (repeated) epoch."""
        from daliaug.sources.arrays import array_samples
        from daliaug.sources.coco import CocoSource
        from daliaug.sources.directory import DirectorySource

        if self.arrays is not None:
            return array_samples(*self.arrays_xy())
        if self.annotations is not None:
            base = CocoSource(annotations=self.annotations, images=self.directory).samples()
        else:
            base = DirectorySource(path=self.directory).samples()
        return base.subset(np.tile(np.arange(len(base)), self.repeat))


def prepare(name: str, quick: bool, cache: Path | None = None, scale: int = 1) -> Data:
    """Write (once, cached) and describe the data of workload ``name``; ``scale`` makes each
    epoch that many times longer (a GPU outruns the CPU-sized epoch within its warm-up).

    (a): 5,000 procedural 32x32 images repeated 20 times (twice CIFAR-10's 50,000, so that the
    fastest tools stay inside one epoch; 256 x 4 in quick mode).
    (b), (c): 1,000 textured JPEGs of 300-450 x 400-600 pixels (about 500x375 on average), repeated
    8 times per epoch (16 images x 16 in quick mode).
    """
    from daliaug.tools.demo_data import CLASS_NAMES, render_sample, write_classification_dataset

    root = (cache or default_cache_dir()) / "bench"
    if name == "a":
        count, repeat = (256, 4) if quick else (5000, 20)
        path = root / f"arrays-32-{count}.npz"
        if not path.is_file():
            rng = np.random.default_rng(0)
            labels = np.arange(count) % len(CLASS_NAMES)
            x = np.stack([render_sample(rng, (32, 32), int(k))[0] for k in labels])
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.npz")  # workers write side by side
            np.savez(tmp, x=x, y=labels.astype(np.int32))
            tmp.replace(path)
        return Data(path, None, repeat * scale)
    per_class, repeat = (4, 16) if quick else (250, 8)
    folder = write_classification_dataset(
        root / f"jpeg-{4 * per_class}",
        per_class=per_class,
        size=((300, 450), (400, 600)),
        png_fraction=0.0,
        seed=0,
    )
    return Data(None, folder, repeat * scale)
