"""The ``keras_flip`` transform: one coin flips the axes its mode names, on both backends (DALI's
CPU pipeline and the TF backend), checked against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.epoch import draw_rows
from daliaug.plan import Plan
from daliaug.transforms.keras_flip import KerasFlip
from tests.helpers import augment


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("horizontal", lambda a: a[:, ::-1]),
        ("vertical", lambda a: a[::-1]),
        ("horizontal_and_vertical", lambda a: a[::-1, ::-1]),
    ],
)
def test_a_flip_mirrors_the_axes_of_its_mode(
    backend: str, square_dir: Path, square_image: np.ndarray, mode: str, expected
) -> None:
    flip = {"type": "keras_flip", "mode": mode}
    assert np.array_equal(
        augment(backend, square_dir, [flip], params={"0.flip": 1.0}), expected(square_image)
    )
    assert np.array_equal(
        augment(backend, square_dir, [flip], params={"0.flip": 0.0}), square_image
    )


def test_one_coin_per_sample_with_probability_one_half() -> None:
    rows = draw_rows(Plan.of([KerasFlip()], (8, 8)), np.random.default_rng(0), 20_000)
    assert set(np.unique(rows)) == {0.0, 1.0}
    assert abs(rows.mean() - 0.5) < 0.015
