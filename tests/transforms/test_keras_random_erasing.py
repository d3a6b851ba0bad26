"""The ``keras_random_erasing`` pixel stage on both engines (DALI's CPU pipeline and the TF
engine), from Keras' own ``RandomErasing`` through ``from_keras``: the same pixels as Keras'
layer on real photos with its draws pinned, its boxes drawn as Keras draws them, and its noise
fill distributed as Keras' (the noise itself is drawn in each engine's graph)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from daliaug.config import load_config
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from tests.helpers import run_of
from tests.keras.conftest import photos
from tests.transforms.helpers import from_keras_for, pin_keras_draws, rows_of, run_config

SIZE = (48, 64)
PHOTOS = photos(*SIZE)
N = len(PHOTOS)
DRAWS = {
    "erase": np.array([1, 1, 0, 1], np.float32),
    "width": np.array([0.3, 0.05, 0.2, 0.33], np.float32),
    "height": np.array([0.1, 0.25, 0.2, 0.02], np.float32),
    "x": np.array([0.5, 0.0, 0.3, 0.97], np.float32),
    "y": np.array([0.21, 0.99, 0.6, 0.4], np.float32),
    "noise_seed": np.float32(0.5),
}


def keras_pinned(monkeypatch: pytest.MonkeyPatch, layer, x: np.ndarray) -> np.ndarray:
    """Keras' layer on ``x`` with its uniform draws pinned to :data:`DRAWS` (its order: the
    two side fractions, the corners along x then y, the probability, the threshold)."""
    sides = np.stack([DRAWS["width"], DRAWS["height"]], 1)
    threshold = np.where(DRAWS["erase"] > 0, 0.0, 0.9).astype(np.float32)
    queue = [sides, DRAWS["x"], DRAWS["y"], np.full(N, 0.5, np.float32), threshold]
    pin_keras_draws(monkeypatch, uniform=queue)
    return np.asarray(layer(x.astype(np.float32), training=True), np.float64)


def box_mask(box: dict, size: tuple[int, int]) -> np.ndarray:
    """``(N, H, W)``: the pixels of each sample's box (``y0``, ``x0``, ``h``, ``w``)."""
    y = np.arange(size[0])[None, :, None] - box["y0"][:, None, None]
    x = np.arange(size[1])[None, None, :] - box["x0"][:, None, None]
    return (y >= 0) & (y < box["h"][:, None, None]) & (x >= 0) & (x < box["w"][:, None, None])


@pytest.mark.parametrize("fill_value", [77.0, (10.0, 200.0, 300.0)])
def test_matches_keras_with_its_draws_pinned(
    monkeypatch: pytest.MonkeyPatch, engine: str, fill_value
) -> None:
    import keras

    layer = keras.layers.RandomErasing(factor=1.0, scale=(0.02, 0.33), fill_value=fill_value)
    config = from_keras_for(layer, engine, SIZE, N)
    assert config.transforms[-1].type == "keras_random_erasing"
    ours = run_config(config, engine, PHOTOS, rows_of(config, DRAWS, N))[0]
    theirs = keras_pinned(monkeypatch, layer, PHOTOS)
    np.testing.assert_array_equal(np.asarray(ours, np.float64), theirs)
    assert ((theirs != PHOTOS).any(axis=-1).sum(axis=(1, 2)) > 0).tolist() == [1, 1, 0, 1]


@pytest.mark.slow
def test_noise_fill_follows_keras_distribution(
    monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """Keras' default fill ``clip(n * 255, 0, 255)`` per pixel: the values in the same boxes
    (half of them 0, a sixth 255) against Keras' own, two-sample."""
    import keras

    layer = keras.layers.RandomErasing(factor=1.0, scale=(0.3, 0.33))
    config = from_keras_for(layer, engine, SIZE, N)
    assert config.transforms[-1].value == "normal" and config.transforms[-1].noise == (0, 255)
    ours = np.asarray(run_config(config, engine, PHOTOS, rows_of(config, DRAWS, N))[0])
    theirs = keras_pinned(monkeypatch, layer, PHOTOS)
    box = box_mask(config.transforms[-1].stage(DRAWS, SIZE, NUMPY.math), SIZE)
    assert box[2].sum() == 0 and box.sum() > 1000  # sample 2 is not erased
    assert 0.45 < np.mean(ours[box] == 0) < 0.55 and 0.12 < np.mean(ours[box] == 255) < 0.2
    assert stats.ks_2samp(ours[box].ravel(), theirs[box].ravel()).pvalue > 1e-3
    np.testing.assert_array_equal(ours[~box], PHOTOS[~box])


def test_boxes_follow_keras_draws() -> None:
    """Box heights and widths (in pixels) and corners from Keras' own draws against daliaug's,
    and the erase rate (Keras: ``p ~ U(factor)``, ``p`` 0.3 on average here)."""
    import keras

    keras.utils.set_random_seed(0)
    n, size = 3000, (30, 40)
    layer = keras.layers.RandomErasing(factor=(0.1, 0.5), scale=(0.05, 0.6), fill_value=0)
    t = layer.get_random_transformation(np.ones((n, *size, 1), np.float32))
    masks = np.asarray(t["batch_masks"])[..., 0]
    applied = np.asarray(t["apply_erasing"])
    rows_any, cols_any = masks.any(axis=2), masks.any(axis=1)
    theirs = {
        "h": rows_any.sum(1),
        "w": cols_any.sum(1),
        "y0": rows_any.argmax(1),
        "x0": cols_any.argmax(1),
    }
    config = from_keras_for(layer, "tf", size, 8, channels=1)
    transform = config.transforms[-1]
    assert transform.probability == pytest.approx(0.3)
    rows = draw_rows(config.plan, np.random.default_rng(1), n)
    p = dict(zip(transform.params, rows[:, -len(transform.params) :].T, strict=True))
    ours = transform.stage({**p, "erase": np.float32(1.0)}, size, NUMPY.math)
    for name, values in theirs.items():
        table = [np.bincount(v.astype(int), minlength=41) for v in (values, ours[name])]
        table = np.array(table)[:, np.array(table).sum(0) > 0]
        assert stats.chi2_contingency(table).pvalue > 1e-3, name
    table = [[applied.sum(), n - applied.sum()], [p["erase"].sum(), n - p["erase"].sum()]]
    assert stats.chi2_contingency(table).pvalue > 1e-3


def test_fill_through_the_value_frame_and_bounds() -> None:
    import keras

    layers = keras.layers
    config = from_keras_for(
        keras.Sequential(
            [layers.Rescaling(1 / 255), layers.RandomErasing(fill_value=0.5, value_range=(0, 1))]
        ),
        "tf",
        SIZE,
        N,
    )
    assert config.transforms[-1].value == (127.5, 127.5, 127.5)
    with pytest.raises(ConfigError, match="value_range"):
        from_keras_for(layers.RandomErasing(value_range=(0, 1)), "tf", SIZE, N)
    with pytest.raises(ConfigError, match=r"keras_random_erasing\.scale"):
        load_config(
            {
                "source": {"type": "arrays"},
                "image_size": 8,
                "transforms": [{"type": "keras_random_erasing", "scale": [0.1, 1.5]}],
            }
        )


def test_gpu_graphs_keep_dalis_device_rules(tmp_path) -> None:
    """The noise fill, with Keras' perspective and CutMix moving masks, on DALI's GPU graph
    (walked without a GPU)."""
    from functools import partial

    from daliaug.engines.dali import pipeline
    from daliaug.engines.dali.check import graph_problems
    from daliaug.prepare import prepare_samples
    from tests.sources.test_sources import seg_config, write_segmentation

    cfg = seg_config(
        write_segmentation(tmp_path, count=3),
        image_size=[48, 64],
        transforms=[
            {"type": "keras_random_erasing"},
            {"type": "keras_perspective"},
            {"type": "keras_cutmix"},
        ],
    )
    define = partial(
        pipeline.named_pipeline, run_of(cfg, prepare_samples(cfg), "gpu"), False, gpu_inputs=True
    )
    assert not graph_problems(define)
