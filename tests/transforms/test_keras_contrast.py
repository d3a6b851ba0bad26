"""The ``keras_contrast`` transform stretches each channel about its own mean over the image it
receives, on both backends; the colour algebra carries that mean through the colour steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daliaug.algebra import ColourMatrix
from tests.helpers import augment


def test_contrast_stretches_each_channel_about_its_mean(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    contrast = {"type": "keras_contrast", "factor": [0.5, 2.0]}
    out = augment(backend, square_dir, [contrast], params={"0.factor": 1.7})
    mean = square_image.mean(axis=(0, 1))
    expected = np.clip((square_image - mean) * 1.7 + mean, 0, 255)
    assert np.abs(out - expected).max() <= 1e-2


def test_the_mean_is_that_of_the_image_after_the_steps_before(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    steps = [
        {"type": "brightness", "factor": 0.5},
        {"type": "keras_contrast", "factor": [0.5, 2.0]},
        {"type": "saturation", "factor": 0.5},
    ]
    params = {"0.factor": 0.8, "1.factor": 1.4, "2.factor": 0.6}
    out = augment(backend, square_dir, steps, params=params)
    x = square_image * 0.8
    mean = x.mean(axis=(0, 1))
    x = (x - mean) * 1.4 + mean
    grey = x @ np.array([0.299, 0.587, 0.114])
    expected = np.clip(0.6 * x + 0.4 * grey[..., None], 0, 255)
    assert np.abs(out - expected).max() <= 1e-2


def test_composed_maps_equal_applying_them_one_after_another() -> None:
    rng = np.random.default_rng(3)
    image = rng.uniform(0, 255, (5, 7, 3))

    def apply(c: ColourMatrix, x: np.ndarray) -> np.ndarray:
        m, t = np.array(c.matrix), np.array(c.offset)
        n = np.zeros((3, 3)) if c.means is None else np.array(c.means)
        return x @ m.T + n @ x.mean(axis=(0, 1)) + t

    steps = [
        ColourMatrix.about_mean(1.3, 3),
        ColourMatrix.linear(tuple(map(tuple, rng.uniform(-1, 1, (3, 3)))), (4.0, -2.0, 1.0)),
        ColourMatrix.about_mean(0.6, 3),
        ColourMatrix.diagonal(0.9, 3, offset=10.0),
    ]
    one_by_one, composed = image, ColourMatrix.identity(3)
    for step in steps:
        one_by_one = apply(step, one_by_one)
        composed = step.then_after(composed)
    assert np.allclose(apply(composed, image), one_by_one)
