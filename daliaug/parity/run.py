"""Running one config through a backend on given samples with explicit parameters.

:func:`run_dali` needs DALI only and :func:`run_tf` TensorFlow only; each imports its backend
when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from daliaug.config import Config, Output
from daliaug.engines.select import Device
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
        "label_mode": "categorical",  # soft labels, which batch stages need
        "batch_size": 8,
    }
    return config.model_copy(update={**update, "output": output, **fields})


def explicit(config: Config, rows: np.ndarray | None) -> np.ndarray | None:
    """``rows`` as the backends take them: ``None`` when the plan has no parameters (and
    ``None`` rows mean random draws)."""
    plan = config.plan
    return rows if plan.param_keys else None


def outputs(
    name: str, config: Config, samples: Samples, rows: np.ndarray | None, device: Device = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """All output images and targets (labels or masks) of ``samples`` from backend ``name``
    on ``device``, in sample order, with explicit parameter ``rows`` (``None``: drawn)."""
    from daliaug.outputs.bridges import engine_batches

    batches = engine_batches(name, config, samples, device, params=explicit(config, rows))
    images, targets = zip(*batches, strict=True)
    return np.concatenate(images), np.concatenate(targets)


def dali_outputs(
    config: Config, samples: Samples, rows: np.ndarray | None, device: Device
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`outputs` of DALI on ``device``."""
    return outputs("dali", config, samples, rows, device)


def tf_outputs(
    config: Config, samples: Samples, rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`outputs` of the TensorFlow backend."""
    return outputs("tf", config, samples, rows)


def run_dali(
    config: Config, samples: Samples, rows: np.ndarray | None, device: Device
) -> np.ndarray:
    """All output images of ``samples`` from DALI on ``device``, in sample order."""
    return dali_outputs(config, samples, rows, device)[0]


def run_tf(config: Config, samples: Samples, rows: np.ndarray | None) -> np.ndarray:
    """All output images of ``samples`` from the TensorFlow backend, in sample order."""
    return tf_outputs(config, samples, rows)[0]
