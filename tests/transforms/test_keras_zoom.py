"""The ``keras_zoom`` transform: each output pixel samples the source ``zoom`` times as far from
the centre, on both backends, checked against SciPy; its draws follow Keras' convention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.plan import Plan
from daliaug.transforms.keras_zoom import KerasZoom
from tests.helpers import augment, config_for
from tests.transforms.helpers import about_centre, inner, reference_warp


def test_zoom_samples_farther_from_the_centre(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    zoom = {"type": "keras_zoom", "height_factor": 0.5, "width_factor": 0.5, "fill": "nearest"}
    out = augment(backend, square_dir, [zoom], params={"0.height_zoom": 0.8, "0.width_zoom": 0.5})
    forward = about_centre(np.diag([1 / 0.5, 1 / 0.8]))
    expected = reference_warp(square_image, forward, (64, 64), mode="nearest")
    assert np.abs(inner(out - expected)).max() <= 1


def test_zooms_are_one_plus_the_factor_and_drawn_apart_only_with_a_width_factor() -> None:
    rng = np.random.default_rng(0)
    rows = draw_rows(Plan.of([KerasZoom(height_factor=(0.1, 0.3))], (8, 8)), rng, 5000)
    assert np.array_equal(rows[:, 0], rows[:, 1])
    assert rows.min() >= 1.1 and rows.max() <= 1.3
    apart = KerasZoom(height_factor=0.2, width_factor=(-0.5, -0.4))
    rows = draw_rows(Plan.of([apart], (8, 8)), rng, 5000)
    assert rows[:, 0].min() >= 0.8 and rows[:, 0].max() <= 1.2
    assert rows[:, 1].min() >= 0.5 and rows[:, 1].max() <= 0.6


def test_a_factor_of_minus_one_or_less_is_refused(square_dir: Path) -> None:
    with pytest.raises(ConfigError, match="zoom factors must be > -1"):
        config_for(square_dir, transforms=[{"type": "keras_zoom", "height_factor": [-1, 0]}])
