"""The ``random_crop`` transform (torchvision's ``RandomCrop``): its corners (every whole-pixel
corner of the padded canvas equally likely), ``pad_if_needed``, and its fields. Its pixels
against torchvision's ``pad`` and ``crop`` on every engine are in
tests/torchvision/test_from_torchvision.py."""

from __future__ import annotations

import numpy as np
import pytest

from daliaug.algebra import Canvas, Math
from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError


def _corners(n: int, canvas: Canvas, **fields: object) -> np.ndarray:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [{"type": "random_crop", **fields}],
        }
    )
    t = config.transforms[0]
    rows = draw_rows(config.plan, np.random.default_rng(0), n)
    boxes = [
        t.crop_box(dict(zip(t.params, r.tolist(), strict=True)), canvas, Math.of(np)) for r in rows
    ]
    return np.array([(b.x, b.y) for b in boxes])


def test_every_corner_of_the_padded_canvas_is_as_likely() -> None:
    """A 10 x 12 canvas padded by 1 left, 2 right, 3 top, 0 bottom, a 7 x 8 window: corners x
    in -1..6 (12 + 3 - 8 + 1 = 8 of them), y in -3..3 (10 + 3 - 7 + 1 = 7)."""
    xy = _corners(8000, Canvas(10.0, 12.0), size=[7, 8], padding=[1, 2, 3, 0])
    assert set(xy[:, 0]) == set(range(-1, 7)) and set(xy[:, 1]) == set(range(-3, 4))
    counts = np.unique(xy[:, 0], return_counts=True)[1] / len(xy)
    assert np.all(np.abs(counts - 1 / 8) < 0.02)


def test_pad_if_needed_pads_both_sides_by_what_is_lacking() -> None:
    """torchvision: a 6-wide canvas for a 10-wide window pads 4 on each side (14 wide), so
    the corner is -4..0; a side long enough is not padded."""
    xy = _corners(2000, Canvas(20.0, 6.0), size=[8, 10], pad_if_needed=True)
    assert set(xy[:, 0]) == set(range(-4, 1)) and set(xy[:, 1]) == set(range(0, 13))


def test_a_window_larger_than_the_canvas_sits_at_its_corner() -> None:
    xy = _corners(50, Canvas(4.0, 4.0), size=[6, 6], padding=[1, 0, 0, 0])
    assert np.all(xy == [-1, 0])


@pytest.mark.parametrize(
    ("fields", "named"),
    [({"size": [0, 4]}, "size"), ({"size": 4, "padding": [1, -1, 0, 0]}, "padding")],
)
def test_fields_are_checked(fields: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=rf"random_crop\.{named}"):
        _corners(1, Canvas(8.0, 8.0), **fields)
