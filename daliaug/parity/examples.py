"""The configs parity is checked on: every transform alone, and every shipped pipeline."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from daliaug.config import Config, load_config

TRANSFORM_EXAMPLES: tuple[dict[str, Any], ...] = (
    {"type": "random_resized_crop", "scale": [0.1, 1.0], "ratio": [0.6, 1.6]},
    {"type": "resize", "shorter_side": 80},
    {"type": "center_crop", "size": [56, 72], "fill": 30},
    {"type": "rotation", "angle": 45, "fill": 128},
    {"type": "rotation", "angle": 45, "fill": "nearest"},
    {"type": "zoom", "factor": 0.5, "keep_aspect": False},
    {"type": "shift", "x": 0.25, "y": 0.25, "fill": "nearest"},
    {"type": "shear", "angle": 35},
    {"type": "flip", "horizontal": 0.5, "vertical": 0.5},
    {
        "type": "random_affine",
        "degrees": 30,
        "translate": [0.2, 0.1],
        "scale": [0.7, 1.3],
        "shear_x": [-20, 20],
        "shear_y": [-10, 10],
        "fill": 60,
    },
    {"type": "random_crop", "size": [56, 48], "padding": [4, 8, 2, 6], "fill": "nearest"},
    {"type": "brightness", "factor": 0.6},
    {"type": "contrast", "factor": 0.6},
    {"type": "saturation", "factor": 0.9},
    {"type": "hue", "degrees": 90},
    {"type": "color_jitter", "brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1},
    {"type": "color_jitter", "brightness": 0.5, "contrast": 0.5, "clip": "once"},
    {
        "type": "keras_affine",
        "rotation_range": 30,
        "width_shift_range": 0.1,
        "height_shift_range": 0.1,
        "shear_range": 15,
        "zoom_range": 0.2,
        "horizontal_flip": True,
        "fill": "nearest",
    },
    {"type": "channel_shift", "intensity": 40},
    {"type": "invert", "probability": 0.5},
    {"type": "grayscale", "probability": 0.5},
    {"type": "color_degeneration", "factor": 0.8},
    {"type": "solarize", "threshold": 128, "probability": 0.5},
    {"type": "posterize", "bits": 3, "probability": 0.5},
    {"type": "equalize", "probability": 0.5},
    {"type": "auto_contrast", "probability": 0.5},
    {"type": "sharpness", "factor": [0.0, 2.0], "probability": 0.8},
    {"type": "gaussian_blur", "kernel_size": 7, "sigma": [0.1, 2.0], "probability": 0.8},
    {"type": "random_erasing", "probability": 0.8, "scale": [0.02, 0.4], "value": "random"},
    {"type": "random_erasing", "probability": 0.8, "value": [124, 116, 104]},
    {"type": "perspective", "distortion_scale": 0.5, "probability": 0.8, "fill": 40},
    {"type": "mixup", "alpha": 0.4},
    {"type": "cutmix", "alpha": 1.0},
    {"type": "mosaic", "center_range": [0.2, 0.8], "probability": 0.8},
    {"type": "rand_augment", "num_ops": 2, "magnitude": 9},
    {"type": "trivial_augment"},
    {"type": "auto_augment", "policy": "imagenet"},
    {"type": "keras_flip", "mode": "horizontal_and_vertical"},
    {"type": "keras_zoom", "height_factor": 0.4, "width_factor": [-0.3, 0.5], "fill": 40},
    {"type": "keras_shear", "x_factor": 0.4, "y_factor": 0.3, "fill": "nearest"},
    {"type": "keras_random_crop", "size": [40, 56]},
    {"type": "keras_center_crop", "size": [50, 44]},
    {"type": "keras_resize", "size": [48, 64], "aspect": "pad", "fill": 90},
    {"type": "keras_brightness", "factor": 0.3},
    {"type": "keras_contrast", "factor": [0.4, 1.8]},
    {"type": "keras_saturation", "factor": 0.6},
    {"type": "keras_hue", "factor": 0.8},
    {"type": "keras_solarization", "addition": [0, 60], "threshold": [40, 200]},
    {"type": "keras_random_erasing", "probability": 0.8, "scale": [0.02, 0.6], "value": 77},
    {"type": "keras_random_erasing", "probability": 0.8, "value": [124, 116, 104]},
    {"type": "keras_cutmix", "factor": [0.0, 1.0]},
    {"type": "keras_perspective", "scale": 0.8, "probability": 0.8},
    {"type": "keras_perspective", "scale": 0.6, "probability": 1.0, "interpolation": "nearest"},
    {"type": "elastic", "scale": [0.5, 1.0], "probability": 0.8},
    {"type": "elastic", "scale": 1.0, "probability": 1.0, "fill": 40, "interpolation": "nearest"},
    {"type": "clahe", "tile_grid_size": [4, 6], "clip_limit": 2.0, "probability": 0.8},
    # Keras' RandAugment
    {"type": "keras_rand_augment", "num_ops": 3, "factor": [0.1, 0.6], "fill": 30},
    # AugMix: torchvision's and Keras' (its default reflect fill)
    {"type": "aug_mix", "severity": 5, "fill": 30},
    {"type": "keras_aug_mix", "factor": [0.1, 0.6]},
)
"""One or more settings of each transform, with wide ranges (``normalize`` is the output's)."""

EXAMPLE_FIELDS: dict[str, Any] = {
    "image_size": 64,
    "output": {"dtype": "uint8"},
    "label_mode": "categorical",  # soft labels, which batch stages need
}


def _with_source(data: dict[str, Any], path: Path) -> dict[str, Any]:
    return {**data, "source": {"type": "directory", "path": str(path)}}


def transform_examples(source: Path) -> list[tuple[str, Config]]:
    """``(name, config)`` for each of :data:`TRANSFORM_EXAMPLES` alone, at 64x64."""
    out = []
    for t in TRANSFORM_EXAMPLES:
        fill = f", fill {t['fill']}" if "fill" in t else ""
        config = load_config(_with_source({**EXAMPLE_FIELDS, "transforms": [t]}, source))
        out.append((f"{t['type']}{fill}", config))
    return out


def shipped_pipelines() -> list[Path]:
    """The shipped configs (the package ``daliaug.pipelines``, a link to ``pipelines/``)."""
    return sorted(Path(str(files("daliaug.pipelines"))).glob("*.yaml"))


def pipeline_examples() -> list[tuple[str, Config]]:
    """``(file name, config)`` for each shipped pipeline (the harness supplies the images, and
    synthetic masks for a segmentation source)."""
    return [(p.name, load_config(p)) for p in shipped_pipelines()]
