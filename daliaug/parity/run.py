"""Running one config through a backend on given samples with explicit parameters.

:func:`run_dali` needs DALI only and :func:`run_tf` TensorFlow only; each imports its backend
when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from daliaug.config import Config, Output
from daliaug.device import Device
from daliaug.sources import Samples
from daliaug.sources.directory import DirectorySource

COMPARED_OUTPUT = Output(dtype="uint8")
"""The outputs are compared on the uint8 scale, before normalization."""


def compared(config: Config, output: Output = COMPARED_OUTPUT, **fields: Any) -> Config:
    """``config`` as a comparison runs it on labelled image files: fixed order, every sample,
    ``output`` (by default uint8 without normalization) and ``fields`` replaced."""
    update = {
        "source": DirectorySource(path=Path(".")),
        "shuffle": False,
        "drop_remainder": False,
        "label_mode": "int",
        "batch_size": 8,
    }
    return config.model_copy(update={**update, "output": output, **fields})


def explicit(config: Config, rows: np.ndarray | None) -> np.ndarray | None:
    """``rows`` as the backends take them: ``None`` when the plan has no parameters (and
    ``None`` rows mean random draws)."""
    plan = config.plan
    return rows if plan.param_keys else None


def dali_outputs(
    config: Config, samples: Samples, rows: np.ndarray | None, device: Device
) -> tuple[np.ndarray, np.ndarray]:
    """All output images and targets (labels or masks) of ``samples`` from DALI on
    ``device``, in sample order."""
    from daliaug.dali_loader import DaliLoader

    loader = DaliLoader(config, samples=samples, device=device, params=explicit(config, rows))
    images, targets = zip(*(batch[:2] for batch in loader), strict=True)
    return np.concatenate(images), np.concatenate(targets)


def tf_outputs(
    config: Config, samples: Samples, rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """All output images and targets of ``samples`` from the TensorFlow backend, in order."""
    from daliaug.tf_backend import tf_dataset

    dataset = tf_dataset(config, samples, explicit(config, rows))
    images, targets = zip(*((b[0].numpy(), b[1].numpy()) for b in dataset), strict=True)
    return np.concatenate(images), np.concatenate(targets)


def run_dali(
    config: Config, samples: Samples, rows: np.ndarray | None, device: Device
) -> np.ndarray:
    """All output images of ``samples`` from DALI on ``device``, in sample order."""
    return dali_outputs(config, samples, rows, device)[0]


def run_tf(config: Config, samples: Samples, rows: np.ndarray | None) -> np.ndarray:
    """All output images of ``samples`` from the TensorFlow backend, in sample order."""
    return tf_outputs(config, samples, rows)[0]
