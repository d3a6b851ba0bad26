"""The ``keras_brightness`` transform adds a share of 255 and clips, on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_brightness_adds_the_factor_times_255_then_clips(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    bright = {"type": "keras_brightness", "factor": 0.5}
    out = augment(backend, square_dir, [bright], params={"0.delta": 0.2})
    assert np.abs(out - np.clip(square_image + 51.0, 0, 255)).max() <= 1e-3
    out = augment(backend, square_dir, [bright], params={"0.delta": -0.4})
    assert np.abs(out - np.clip(square_image - 102.0, 0, 255)).max() <= 1e-3
