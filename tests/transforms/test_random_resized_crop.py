"""The ``random_resized_crop`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers import augment


def test_random_resized_crop_box_follows_its_parameters(
    backend: str, square_dir: Path, square_image
) -> None:
    # area 1/4 of 64x64 with ratio 1 -> a 32x32 window; x = floor(0.5*33), y = floor(0.25*33)
    params = {"0.area": 0.25, "0.log_ratio": 0.0, "0.u": 0.5, "0.v": 0.25}
    out = augment(backend, square_dir, [{"type": "random_resized_crop"}], size=32, params=params)
    assert np.array_equal(out, square_image[8:40, 16:48])


def test_random_resized_crop_aspect_ratio(backend: str, square_dir: Path, square_image) -> None:
    # area 1/8 with ratio 2 -> w = round(sqrt(512*2)) = 32, h = 16; u = v = 1 -> bottom-right
    params = {"0.area": 0.125, "0.log_ratio": float(np.log(2)), "0.u": 1.0, "0.v": 1.0}
    out = augment(
        backend,
        square_dir,
        [{"type": "random_resized_crop", "ratio": [0.5, 2]}],
        size=[16, 32],
        params=params,
    )
    assert np.array_equal(out, square_image[48:, 32:])
