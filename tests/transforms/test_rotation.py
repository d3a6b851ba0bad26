"""The ``rotation`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import augment
from tests.transforms.helpers import about_centre, inner, inside, reference_warp


@pytest.mark.parametrize(("angle", "k"), [(90, 1), (-90, -1), (180, 2)])
def test_right_angle_rotation_matches_rot90(
    backend: str, square_dir: Path, square_image, angle, k
) -> None:
    out = augment(backend, square_dir, [{"type": "rotation", "angle": [angle, angle]}])
    assert np.abs(inner(out - np.rot90(square_image, k))).max() <= 1


def test_rotation_turns_counter_clockwise_about_the_centre(
    backend: str, square_dir, square_image
) -> None:
    out = augment(backend, square_dir, [{"type": "rotation", "angle": [30, 30], "fill": 0}])
    t = np.deg2rad(30)
    forward = about_centre(np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]))
    diff = np.abs(out - reference_warp(square_image, forward, (64, 64)))
    diff = diff[inside(forward)]
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995


def test_rotation_fill_constant_and_nearest(backend: str, square_dir: Path, square_image) -> None:
    const = augment(backend, square_dir, [{"type": "rotation", "angle": [45, 45], "fill": 200}])
    assert np.all(const[0, 0] == 200) and np.all(const[-1, -1] == 200)
    nearest = augment(
        backend, square_dir, [{"type": "rotation", "angle": [45, 45], "fill": "nearest"}]
    )
    # "nearest" repeats the border pixels outwards, as SciPy's (and Keras') mode "nearest"
    t = np.deg2rad(45)
    forward = about_centre(np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]))
    diff = np.abs(inner(nearest - reference_warp(square_image, forward, (64, 64), "nearest")))
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995
