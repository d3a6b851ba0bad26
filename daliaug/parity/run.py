"""Running one config through a backend on given samples with explicit parameters.

:func:`run_dali` needs DALI only and :func:`run_tf` TensorFlow only; each imports its backend
when called.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from daliaug.config import Config, Output
from daliaug.device import Device
from daliaug.plan import Plan
from daliaug.sources import FileSamples

COMPARED_OUTPUT = Output(dtype="uint8")
"""The outputs are compared on the uint8 scale, before normalization."""


def compared(config: Config, output: Output = COMPARED_OUTPUT, **fields: Any) -> Config:
    """``config`` as a comparison runs it: fixed order, every sample, ``output`` (by default
    uint8 without normalization) and ``fields`` replaced."""
    update = {"shuffle": False, "drop_remainder": False, "label_mode": "int", "batch_size": 8}
    return config.model_copy(update={**update, "output": output, **fields})


def explicit(config: Config, rows: np.ndarray | None) -> np.ndarray | None:
    """``rows`` as the backends take them: ``None`` when the plan has no parameters (and
    ``None`` rows mean random draws)."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    return rows if plan.param_keys else None


def run_dali(
    config: Config, samples: FileSamples, rows: np.ndarray | None, device: Device
) -> np.ndarray:
    """All output images of ``samples`` from DALI on ``device``, in sample order."""
    from daliaug.dali_loader import DaliLoader

    loader = DaliLoader(config, samples=samples, device=device, params=explicit(config, rows))
    return np.concatenate([batch[0] for batch in loader])


def run_tf(config: Config, samples: FileSamples, rows: np.ndarray | None) -> np.ndarray:
    """All output images of ``samples`` from the TensorFlow backend, in sample order."""
    from daliaug.tf_backend import tf_dataset

    dataset = tf_dataset(config, samples, explicit(config, rows))
    return np.concatenate([batch[0].numpy() for batch in dataset])


def source_sizes(samples: FileSamples) -> np.ndarray:
    """``(n, 2)`` height and width of each file, read from its header."""
    sizes = []
    for path in samples.paths:
        with Image.open(path) as im:
            sizes.append((im.height, im.width))
    return np.asarray(sizes, np.int64).reshape(-1, 2)
