"""In-memory arrays of any channel count (issue 54): the OpenCV engine warps 2, 5 and more
channels as it warps each channel alone, and as DALI's CPU operators do; a colour transform
DALI cannot run on more than 6 channels is refused by name at the config on DALI, and runs on
the engines that can."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.config import load_config
from daliaug.errors import BackendWarning, ConfigError

ROTATION = [{"type": "rotation", "angle": 30, "fill": 7}]
RECOLOURED = [{"type": "rotation", "angle": 30}, {"type": "brightness", "factor": 0.3}]
SAME = 1e-3
"""The OpenCV engine against itself channel by channel (float32 output)."""
DALI = 5e-3
"""The OpenCV engine against DALI's CPU operators, as for 1, 3 and 4 channels."""


def config(backend: str, channels: int, transforms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "source": {"type": "arrays"},
        "image_size": [24, 24],
        "batch_size": 2,
        "shuffle": False,
        "seed": 1,
        "backend": backend,
        "num_threads": 1,
        "label_mode": "none",
        "channels": channels,
        "transforms": transforms,
        "output": {"dtype": "float32", "mean": 0, "std": 1},
    }


def images(backend: str, x: np.ndarray, transforms: list[dict[str, Any]]) -> np.ndarray:
    """The first batch's images of ``x`` (``(N, H, W, C)``)."""
    framework = "tensorflow" if backend == "tf" else "numpy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        batches = daliaug.make_dataset(
            config(backend, x.shape[-1], transforms), x=x, framework=framework
        )
        batch = next(iter(batches))
    return np.asarray(batch[0] if isinstance(batch, tuple) else batch, np.float32)


def arrays(channels: int) -> np.ndarray:
    return np.random.default_rng(channels).integers(0, 256, (2, 30, 36, channels), np.uint8)


@pytest.mark.parametrize("channels", [2, 5, 6, 9])
def test_any_channel_count_warps_as_each_channel_alone(channels: int) -> None:
    x = arrays(channels)
    whole = images("opencv", x, ROTATION)
    alone = [images("opencv", x[..., k : k + 1], ROTATION) for k in range(channels)]
    assert np.abs(whole - np.concatenate(alone, -1)).max() <= SAME
    assert np.abs(whole - images("cpu", x, ROTATION)).max() <= DALI


@pytest.mark.parametrize("channels", [2, 5, 6])
def test_recoloured_channels_match_dali(channels: int) -> None:
    x = arrays(channels)
    assert np.abs(images("opencv", x, RECOLOURED) - images("cpu", x, RECOLOURED)).max() <= DALI


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_dali_refuses_a_colour_transform_beyond_six_channels(backend: str) -> None:
    load_config(config(backend, 6, RECOLOURED))  # the boundary: DALI recolours 6 channels
    with pytest.raises(ConfigError, match=r"transforms\.1: 'brightness' cannot run on DALI's"):
        load_config(config(backend, 7, RECOLOURED))
    load_config(config(backend, 64, ROTATION))  # no colour pass: DALI warps them


@pytest.mark.parametrize("backend", ["opencv", "tf"])
def test_the_engines_that_can_recolour_seven_channels_do(backend: str) -> None:
    x = arrays(7)
    out = images(backend, x, RECOLOURED)
    alone = np.concatenate(
        [images(backend, x[..., :4], RECOLOURED), images(backend, x[..., 4:], RECOLOURED)], -1
    )
    assert out.shape == (2, 24, 24, 7) and np.abs(out - alone).max() <= SAME
