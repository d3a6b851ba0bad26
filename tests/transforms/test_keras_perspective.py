"""The ``keras_perspective`` pixel stage on both engines (DALI's CPU pipeline and the TF
engine), from Keras' own ``RandomPerspective`` through ``from_keras``: the same pixels as
Keras' layer on real photos with its draws pinned (within the parity tolerances), its corner
moves drawn as Keras draws them, and segmentation masks that follow (nearest)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.parity.measure import Stats
from daliaug.transforms.keras_perspective import MOVES
from daliaug.transforms.perspective import MATRIX
from tests.helpers import ENGINE_BACKENDS
from tests.keras.conftest import photos
from tests.sources.test_sources import PALETTE, seg_config, write_segmentation
from tests.transforms.helpers import from_keras_for, pin_keras_draws, rows_of, run_config

SIZE = (48, 64)
PHOTOS = photos(*SIZE)
N = len(PHOTOS)
APPLIED = np.array([1, 1, 0, 1], np.float32)
FACTORS = np.random.default_rng(7).uniform(-0.4, 0.4, (N, 4, 2)).astype(np.float32)
"""Keras' corner factors ``(N, 4, 2)``: top-left, top-right, bottom-left, bottom-right."""
AT = {"tr_x": (1, 0), "br_x": (3, 0), "br_y": (3, 1), "bl_y": (2, 1)}
"""Where each of daliaug's moves is in Keras' factors (the others multiply a zero)."""


def source_points(config, draws: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each output pixel's source point ``(x, y)`` under daliaug's map."""
    m = config.transforms[-1].stage(draws, SIZE, NUMPY.math)
    m = [np.broadcast_to(m[k], (N,)).astype(np.float64).reshape(-1, 1, 1) for k in MATRIX]
    y, x = np.mgrid[0 : SIZE[0], 0 : SIZE[1]].astype(np.float64)
    k = m[6] * x + m[7] * y + 1
    return (m[0] * x + m[1] * y + m[2]) / k, (m[3] * x + m[4] * y + m[5]) / k


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_matches_keras_with_its_draws_pinned(
    monkeypatch: pytest.MonkeyPatch, engine: str, interpolation: str
) -> None:
    import keras

    layer = keras.layers.RandomPerspective(
        factor=1.0, scale=0.8, fill_value=30.0, interpolation=interpolation
    )
    config = from_keras_for(layer, engine, SIZE, N)
    draws = {"perspective": APPLIED, **{k: FACTORS[:, i, a] for k, (i, a) in AT.items()}}
    ours = np.asarray(run_config(config, engine, PHOTOS, rows_of(config, draws, N))[0])
    threshold = np.where(APPLIED > 0, 0.0, 0.9).astype(np.float32)
    pin_keras_draws(monkeypatch, uniform=[np.full(N, 0.5, np.float32), threshold, FACTORS])
    theirs = np.asarray(layer(PHOTOS.astype(np.float32), training=True))
    np.testing.assert_array_equal(ours[2], PHOTOS[2])
    # left out: nearest's ties (source points within 0.01 pixel of halfway)
    near = np.zeros((N, *SIZE), bool)
    if interpolation == "nearest":
        for v in source_points(config, draws):
            near |= np.abs(v - np.floor(v) - 0.5) < 0.01
    assert near.mean() < 0.05
    print(
        np.abs(ours - theirs).max(),
        np.abs(ours - theirs).mean(),
        (np.abs(ours - theirs) > 1).mean(),
    )
    found = Stats.of(ours, theirs, ~near[..., None])
    assert found.within(), found


def test_moves_follow_keras_draws() -> None:
    """Keras' corner factors and application rate against daliaug's draws."""
    import keras

    keras.utils.set_random_seed(0)
    n, layer = 3000, keras.layers.RandomPerspective(factor=(0.2, 0.6), scale=0.7)
    t = layer.get_random_transformation(np.zeros((n, 8, 10, 1), np.float32))
    start, end = np.asarray(t["start_points"]), np.asarray(t["end_points"])
    config = from_keras_for(layer, "tf", (8, 10), 8, channels=1)
    transform = config.transforms[-1]
    assert transform.probability == pytest.approx(0.4) and transform.scale == pytest.approx(0.7)
    rows = draw_rows(config.plan, np.random.default_rng(1), n)
    p = dict(zip(transform.params, rows.T, strict=True))
    assert set(AT) == set(MOVES)
    for name, (i, a) in AT.items():
        theirs = end[:, i, a] / start[:, i, a] - 1
        assert stats.ks_2samp(theirs, p[name]).pvalue > 1e-3, name
    assert np.array_equal(end[:, 0], start[:, 0])  # the top-left corner never moves
    applied = np.asarray(t["apply_perspective"])
    table = [
        [applied.sum(), n - applied.sum()],
        [p["perspective"].sum(), n - p["perspective"].sum()],
    ]
    assert stats.chi2_contingency(table).pvalue > 1e-3


def test_map_takes_the_moved_corners_to_the_image_corners() -> None:
    import keras

    config = from_keras_for(keras.layers.RandomPerspective(scale=0.9), "tf", SIZE, N)
    draws = {
        "perspective": np.ones(N, np.float32),
        **{k: FACTORS[:, i, a] for k, (i, a) in AT.items()},
    }
    m = config.transforms[-1].stage(draws, SIZE, NUMPY.math)
    far_x, far_y = SIZE[1] - 1, SIZE[0] - 1
    for s in range(N):
        h = np.append([np.broadcast_to(m[k], (N,))[s] for k in MATRIX], 1.0).reshape(3, 3)
        moved = [
            (0, 0),
            (far_x * (1 + draws["tr_x"][s]), 0),
            (far_x * (1 + draws["br_x"][s]), far_y * (1 + draws["br_y"][s])),
            (0, far_y * (1 + draws["bl_y"][s])),
        ]
        for (u, v), corner in zip(
            moved, [(0, 0), (far_x, 0), (far_x, far_y), (0, far_y)], strict=True
        ):
            point = h @ [u, v, 1.0]
            np.testing.assert_allclose(point[:2] / point[2], corner, atol=1e-3)


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_segmentation(tmp_path_factory.mktemp("seg"), count=6)


def test_masks_follow_with_nearest(seg_root: Path, engine: str) -> None:
    """Nearest images and masks through the same map: the images keep their masks' palette
    where the image is sampled; the source's mask fill where the map reveals."""
    t = {"type": "keras_perspective", "probability": 1.0, "scale": 0.8}
    cfg = seg_config(
        seg_root,
        image_size=[48, 64],
        batch_size=6,
        backend=ENGINE_BACKENDS[engine],
        transforms=[{**t, "interpolation": "nearest"}],
    )
    images, masks = next(batches(engine, cfg, cfg.source.samples(), "cpu"))
    known = masks < 4
    assert (~known).any() and set(np.unique(masks[~known])) == {255}
    np.testing.assert_array_equal(images[known], PALETTE[masks[known]])


def test_fill_outside_the_pipeline_values_is_refused() -> None:
    import keras

    with pytest.raises(ConfigError, match="fill_value=300"):
        from_keras_for(keras.layers.RandomPerspective(fill_value=300.0), "tf", SIZE, N)
