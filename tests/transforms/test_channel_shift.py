"""The ``channel_shift`` transform adds one value to every channel and clips to the image's own
range, as Keras' ``apply_channel_shift``, on both backends, before the colour transforms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.errors import ConfigError
from tests.helpers import augment


@pytest.mark.parametrize("intensity", [37.5, -60.0])
def test_shift_clipped_to_the_image_range(
    backend: str, square_dir: Path, square_image: np.ndarray, intensity: float
) -> None:
    from keras.src.legacy.preprocessing.image import apply_channel_shift

    transform = {"type": "channel_shift", "intensity": 80}
    out = augment(backend, square_dir, [transform], params={"0.intensity": intensity})
    keras = apply_channel_shift(square_image.astype(np.float32), intensity, channel_axis=2)
    assert np.abs(out - keras).max() <= 0.5 + 1e-4
    assert out.min() == square_image.min() or out.max() == square_image.max()


def test_shift_then_brightness(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    transforms = [
        {"type": "channel_shift", "intensity": 80},
        {"type": "brightness", "factor": [0.5, 1.5]},
    ]
    params = {"0.intensity": 20.0, "1.factor": 0.75}
    out = augment(backend, square_dir, transforms, params=params)
    low, high = square_image.min(), square_image.max()
    expected = np.floor(np.clip(square_image + 20.0, low, high) * 0.75 + 0.5)
    assert np.abs(out - expected).max() <= 1.0


def test_must_come_before_the_colour_transforms() -> None:
    transforms = [{"type": "brightness", "factor": 0.2}, {"type": "channel_shift", "intensity": 9}]
    with pytest.raises(ConfigError, match=r"transforms\.1: 'channel_shift' must come before"):
        load_config({"source": {"type": "arrays"}, "image_size": 8, "transforms": transforms})
