"""The config's JSON Schema, for editors: made from the :class:`~daliaug.config.Config` model,
with a few configs as its examples, and the copy that ships beside the shipped configs
(``pipelines/config.schema.json``, which their ``yaml-language-server`` line names)."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from daliaug.config import Config

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect pydantic writes (``prefixItems`` for ``[low, high]`` ranges)."""

SHIPPED_NAME = "config.schema.json"
"""The schema's file name beside the shipped configs."""

EXAMPLES: tuple[dict[str, Any], ...] = (
    {
        "source": {"type": "directory", "path": "data/train"},
        "image_size": 224,
        "batch_size": 64,
        "label_mode": "categorical",
        "transforms": [
            {"type": "random_resized_crop", "scale": [0.08, 1.0]},
            {"type": "flip", "horizontal": 0.5},
            {"type": "rand_augment", "num_ops": 2, "magnitude": 9},
            {"type": "normalize", "mean": [123.675, 116.28, 103.53], "std": [58.4, 57.1, 57.4]},
        ],
    },
    {
        "source": {
            "type": "coco",
            "images": "data/coco/train2017",
            "annotations": "data/coco/annotations/instances_train2017.json",
        },
        "image_size": [480, 640],
        "bounding_box_format": "xywh",
        "min_visibility": 0.3,
        "transforms": [
            {"type": "rotation", "angle": 10, "fill": 114},
            {"type": "flip", "horizontal": 0.5},
            {"type": "brightness", "factor": 0.2},
        ],
    },
    {
        "source": {
            "type": "segmentation",
            "images": "data/images",
            "masks": "data/masks",
            "num_classes": 21,
        },
        "image_size": 256,
        "output": {"rescale": 0.00392156862745098, "dtype": "float16"},
        "transforms": [{"type": "zoom", "factor": 0.3}, {"type": "flip", "horizontal": 0.5}],
    },
)
"""A classification, a detection and a segmentation config, shown by editors as the schema's
examples (each one a valid config: ``tests/tools/test_schema.py``)."""


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a config file: every field, its default and its limits, each
    transform and source by its ``type``. It checks what a JSON Schema can say (types, ranges,
    names); the rules across fields are :func:`daliaug.config.load_config`'s."""
    schema = Config.model_json_schema()
    return {"$schema": DIALECT, **schema, "examples": list(EXAMPLES)}


def schema_text() -> str:
    """:func:`config_schema` as the file ``daliaug schema`` writes: indented JSON, one final
    newline."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"


def shipped_schema() -> Path:
    """The schema file that ships beside the shipped configs."""
    return Path(str(files("daliaug.pipelines") / SHIPPED_NAME))
