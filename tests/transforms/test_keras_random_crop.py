"""The ``keras_random_crop`` transform: a window at a uniformly drawn whole-pixel corner, and
Keras' fallback for images not larger than the window; pixels on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.plan import Plan
from daliaug.transforms.keras_random_crop import KerasRandomCrop
from tests.helpers import augment


def _box(crop: KerasRandomCrop, canvas: tuple[int, int], u: float, v: float) -> list[float]:
    params = {"u": np.float32([u]), "v": np.float32([v])}
    found = crop.crop_box(params, Canvas(*np.array([canvas], np.float32).T), NUMPY.math)
    return [float(np.asarray(x).item()) for x in found]


def test_corners_cover_every_whole_pixel_offset_evenly() -> None:
    crop = KerasRandomCrop(size=(60, 50))
    rows = draw_rows(Plan.of([crop], (60, 50)), np.random.default_rng(1), 30_000)
    canvas = Canvas(np.full(len(rows), 64.0), np.full(len(rows), 64.0))
    box = crop.crop_box({"u": rows[:, 0], "v": rows[:, 1]}, canvas, NUMPY.math)
    assert np.array_equal(np.unique(box.y), np.arange(5)) and np.array_equal(
        np.unique(box.x), np.arange(15)
    )
    counts = np.bincount(box.x.astype(int))
    assert counts.min() > 0.9 * len(rows) / 15
    assert np.all(box.h == 60) and np.all(box.w == 50)


def test_the_fallback_is_keras_centred_window_cut_at_the_edge() -> None:
    crop = KerasRandomCrop(size=(48, 32))
    # 40x100: the 48:32 window of the image is 40x26 at column 37; Keras cuts 48 rows (only 40
    # exist) and 32 columns from its corner, then resizes them to 48x32
    assert _box(crop, (40, 100), 0.9, 0.9) == [0.0, 37.0, 40.0, 32.0]
    # as large as the window along one side: the fallback too (Keras wants both larger)
    assert _box(KerasRandomCrop(size=(32, 32)), (32, 40), 0.99, 0.99) == [0.0, 4.0, 32.0, 32.0]


def test_the_window_is_cut_out(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    crop = {"type": "keras_random_crop", "size": [40, 24]}
    u, v = (13 + 0.5) / 41, (7 + 0.5) / 25
    out = augment(backend, square_dir, [crop], size=(40, 24), params={"0.u": u, "0.v": v})
    assert np.array_equal(out, square_image[7:47, 13:37])
