"""The ``elastic`` pixel stage, from Keras' own ``RandomElasticTransform`` through
``from_keras``: the same pixels as Keras' layer on real photos with its draws pinned (the TF
engine here, DALI's remap where a GPU is), a displacement field with the statistics of Keras'
own (read off its layer run on coordinate ramps), masks that follow it (nearest), and the
engine choice where DALI has no remap (its CPU)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.engines.select import cpu_placement, resolve_device
from daliaug.epoch import draw_rows
from daliaug.errors import BackendError, BackendWarning, ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.parity.measure import MAX_MEAN_ERROR, Stats
from daliaug.sources.arrays import array_samples
from daliaug.transforms.elastic import GRID, NODE_STD, NODES
from tests.helpers import ENGINE_BACKENDS
from tests.keras.conftest import photos
from tests.sources.test_sources import PALETTE, seg_config, write_segmentation
from tests.transforms.helpers import from_keras_for, pin_keras_draws, rows_of

SIZE = (96, 128)
PHOTOS = photos(*SIZE)
N = len(PHOTOS)
FACTOR = 0.8
"""The scale Keras' pinned draw gives: ``sigma = 0.05 * 0.8 * 96 = 3.84`` pixels."""
ENGINES = ["tf", "opencv", pytest.param("dali", marks=pytest.mark.gpu)]


def keras_sigma_alpha(factor: float) -> tuple[float, float]:
    return 0.05 * factor * min(SIZE), 0.1 * factor * max(SIZE)


def keras_kernel(sigma: float) -> np.ndarray:
    """The 1-D Gaussian Keras' ``elastic_transform`` blurs with (``6 int(sigma) | 1`` taps)."""
    size = 6 * int(sigma) | 1
    x = np.arange(size) - (size - 1) / 2
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def run(config: Any, engine: str, x: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    device = "gpu" if engine == "dali" else "cpu"
    samples = array_samples(x, np.zeros(len(x), np.int32))
    return np.asarray(next(iter(batches(engine, config, samples, device, params=rows)))[0])


def elastic_layer(**kwargs: Any) -> Any:
    import keras

    return keras.layers.RandomElasticTransform(factor=1.0, scale=1.0, **kwargs)


def convert(layer: Any, engine: str = "tf") -> Any:
    """``from_keras`` for ``engine`` (DALI on the GPU), without its note on the field."""
    import daliaug

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return daliaug.from_keras(
            [layer],
            source={"type": "arrays"},
            image_size=SIZE,
            batch_size=N,
            shuffle=False,
            backend="gpu" if engine == "dali" else ENGINE_BACKENDS[engine],
            seed=0,
            label_mode="none",
        )


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "fill", [{}, {"fill_mode": "nearest"}, {"fill_mode": "constant", "fill_value": 40.0}]
)
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_matches_keras_with_its_draws_pinned(
    monkeypatch: pytest.MonkeyPatch, engine: str, fill: dict, interpolation: str
) -> None:
    """Keras' noise pinned to waves whose blur it computes itself: ``c (cos(k x) + cos(k y))``
    with the period of daliaug's grid, ``k = 2 pi / (24 sigma)``, peak shifts of 6 pixels;
    daliaug's nodes given that field at the nodes (the wave times the cosine sum of Keras'
    kernel). Between nodes daliaug interpolates the field bilinearly, within 0.1 pixel of
    Keras' here (read off both on a ramp), which moves the photos' sharpest edges by a few
    levels: the mean error is held to the parity tolerance, the share of errors over 2 levels
    to 2%. Compared away from the band where Keras' blur pads with zeros."""
    import tensorflow as tf

    layer = elastic_layer(interpolation=interpolation, **fill)
    config = convert(layer, engine)
    sigma, alpha = keras_sigma_alpha(FACTOR)
    k = 2 * math.pi / (GRID * sigma)
    taps = np.arange(6 * int(sigma) | 1) - 3 * int(sigma)
    gain = float(np.sum(keras_kernel(sigma) * np.cos(k * taps)))
    c = np.array([3.0, -2.0, 0.0, 3.0], np.float32) / (alpha * sigma * gain)  # peak shifts, px
    applied = np.array([1, 1, 0, 1], np.float32)
    y, x = np.mgrid[0 : SIZE[0], 0 : SIZE[1]].astype(np.float32)
    noise = tf.constant(c[:, None, None] * (np.cos(k * x) + np.cos(k * y))[None])
    monkeypatch.setattr(tf.random, "stateless_normal", lambda *a, **kw: noise)

    j = np.arange(GRID)
    wave = np.cos(k * sigma * j)[None, :] + np.cos(k * sigma * j)[:, None]  # (row, col)
    unit = 1 / (alpha * NODE_STD)  # daliaug's nodes are in units of alpha * NODE_STD
    nodes = (alpha * sigma * gain * unit) * c[:, None, None] * wave[None]
    draws = {"elastic": applied, "scale": np.full(N, FACTOR, np.float32)}
    draws |= {name: nodes.reshape(N, -1)[:, i] for i, name in enumerate(NODES)}
    rows = rows_of(config, draws, N)
    threshold = np.where(applied > 0, 0.0, 0.9).astype(np.float32)
    ramp = np.broadcast_to(x[None, ..., None], PHOTOS.shape).astype(np.uint8)
    band = 3 * int(sigma) + 8  # Keras' blur reaches the zero padding, plus the largest shift
    inner = np.zeros((N, *SIZE, 1), bool)
    inner[:, band:-band, band:-band] = True
    for images in (PHOTOS, ramp):
        pinned = [np.full(N, 0.5, np.float32), threshold, np.float32(FACTOR)]
        pin_keras_draws(monkeypatch, uniform=pinned)
        theirs = np.asarray(layer(images.astype(np.float32), training=True))
        ours = run(config, engine, images, rows)
        np.testing.assert_array_equal(ours[2], images[2])
        found = Stats.of(ours, theirs, inner)
        if images is ramp and interpolation == "bilinear":
            assert found.max_error <= 0.1, found
        assert found.mean_error <= MAX_MEAN_ERROR and found.share_over <= 0.02, found


def keras_field(layer: Any, count: int) -> np.ndarray:
    """Keras' shift at each pixel of ``count`` images, read off its layer run on a ramp (the
    column index plus 1000 times the row index would mix rounding; the column alone suffices,
    as both axes move by the same shift)."""
    ramp = np.broadcast_to(np.arange(SIZE[1], dtype=np.float32)[None, :, None], (*SIZE, 1))
    out = np.asarray(layer(np.repeat(ramp[None], count, 0), training=True))
    return out[..., 0] - ramp[None, ..., 0]


@pytest.mark.slow
def test_field_has_keras_statistics() -> None:
    """Standard deviation and correlation at one and two sigma of the shifts, away from the
    borders, against Keras' own field (the pixels of its layer on a ramp, ``fill_mode``
    nearest, ``value_range`` wide enough not to clip)."""
    import keras

    keras.utils.set_random_seed(1)
    layer = keras.layers.RandomElasticTransform(
        factor=(1.0, 1.0), scale=(FACTOR, FACTOR), fill_mode="nearest", value_range=(-500, 500)
    )
    sigma, _ = keras_sigma_alpha(FACTOR)
    theirs = np.concatenate([keras_field(layer, 8) for _ in range(8)])
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": list(SIZE),
            "channels": 1,
            "batch_size": 64,
            "label_mode": "none",
            "backend": "tf",
            "seed": 1,
            "output": {"dtype": "float32"},
            "transforms": [
                {
                    "type": "elastic",
                    "scale": [FACTOR, FACTOR],
                    "probability": 1.0,
                    "fill": "nearest",
                }
            ],
        }
    )
    ramp = np.broadcast_to(np.arange(SIZE[1], dtype=np.float32)[None, :, None], (64, *SIZE, 1))
    ours = run(config, "tf", ramp.astype(np.uint8), None)[..., 0] - ramp[..., 0]
    band = 3 * int(sigma) + 12
    lags = [round(sigma), round(2 * sigma)]

    def statistics(field: np.ndarray) -> list[float]:
        inner = field[:, band:-band, band:-band]
        inner = inner - inner.mean()
        var = inner.var()
        out = [float(np.sqrt(var))]
        for lag in lags:
            out.append(float(np.mean(inner[:, :, lag:] * inner[:, :, :-lag]) / var))
            out.append(float(np.mean(inner[:, lag:] * inner[:, :-lag]) / var))
        return out

    mine, keras_ = statistics(ours), statistics(theirs)
    assert mine[0] == pytest.approx(keras_[0], rel=0.1), (mine, keras_)
    # the grid's bilinear interpolation keeps the field correlated a little longer at two
    # sigma than Keras' full-resolution blur (about +0.07 over seeds 1-4, this VM)
    np.testing.assert_allclose(mine[1:], keras_[1:], atol=0.1)


def test_draws_follow_keras_probability_and_scale() -> None:
    config = convert(elastic_layer())
    transform = config.transforms[-1]
    assert transform.probability == pytest.approx(0.5)
    assert transform.scale == (0.0, 1.0) and transform.fill == "reflect"
    rows = draw_rows(config.plan, np.random.default_rng(0), 4000)
    p = dict(zip(transform.params, rows.T, strict=True))
    assert p["elastic"].mean() == pytest.approx(0.5, abs=0.03)
    assert p["scale"].min() >= 0 and p["scale"].max() <= 1
    nodes = np.stack([p[n] for n in NODES], 1).reshape(-1, GRID, GRID)
    assert nodes.std() == pytest.approx(1.0, abs=0.02)
    # neighbours one node (one sigma) apart correlate as Keras' blurred noise does: exp(-1/4)
    assert np.mean(nodes[:, :, 1:] * nodes[:, :, :-1]) == pytest.approx(math.exp(-0.25), abs=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_masks_follow_with_nearest(tmp_path: Path, engine: str) -> None:
    """Nearest images and masks through the same field: the images keep their masks' palette."""
    root = write_segmentation(tmp_path, count=6)
    t = {"type": "elastic", "probability": 1.0, "scale": 1.0, "interpolation": "nearest"}
    for fill in ("reflect", 0.0):
        cfg = seg_config(
            root,
            image_size=[48, 64],
            batch_size=6,
            backend="gpu" if engine == "dali" else ENGINE_BACKENDS[engine],
            transforms=[{**t, "fill": fill}],
        )
        device = "gpu" if engine == "dali" else "cpu"
        images, masks = next(batches(engine, cfg, cfg.source.samples(), device))
        known = masks < 4
        assert known.mean() > 0.5
        if fill == 0.0:
            assert (~known).any() and set(np.unique(masks[~known])) == {255}
        np.testing.assert_array_equal(images[known], PALETTE[masks[known]])


def test_dali_on_the_cpu_is_refused_or_replaced(tmp_path: Path) -> None:
    """DALI's remap runs on the GPU only: ``backend: cpu`` is refused naming the transform;
    ``auto`` without a GPU runs the TF engine, with one warning where DALI's CPU operators
    would have been chosen (segmentation); DALI without TensorFlow refuses."""
    t = {"type": "elastic"}
    with pytest.raises(
        ConfigError, match=r"transforms\.0: 'elastic' cannot run on DALI's cpu \(DALI's fn\.exp"
    ):
        load_config(
            {"source": {"type": "arrays"}, "image_size": 8, "backend": "cpu", "transforms": [t]}
        )
    root = write_segmentation(tmp_path, count=2)
    cfg = seg_config(root, backend="auto", transforms=[t])
    with pytest.warns(BackendWarning, match="elastic"):
        assert cpu_placement(cfg) == "tf"
    plain = load_config({"source": {"type": "arrays"}, "image_size": 8, "transforms": [t]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cpu_placement(plain) == "tf"  # the TF engine anyway: nothing to say
    from daliaug.engines.select import dali_gpu_count

    if dali_gpu_count() == 0:
        with pytest.raises(BackendError, match="DALI cannot run it on its cpu"):
            resolve_device(plain)


def test_other_keras_fill_modes_are_refused() -> None:
    with pytest.raises(ConfigError, match="fill_mode='wrap'"):
        from_keras_for(elastic_layer(fill_mode="wrap"), "tf", SIZE, N)


@pytest.mark.parametrize("fill", ["reflect", "nearest", 30.0])
def test_dalis_coordinates_are_tfs(fill: object) -> None:
    """The arithmetic around DALI's remaps (each pixel's index, the fill modes' folding) runs
    on DALI's CPU as well: the same coordinates as the TF engine's."""
    import tensorflow as tf
    from nvidia.dali import fn, pipeline_def, types

    from daliaug.engines.dali import pixels as dali_pixels
    from daliaug.engines.tf import pixels as tf_pixels

    h, w = 7, 9
    points = np.random.default_rng(0).uniform(-40, 50, (2, h, w, 1)).astype(np.float32)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def coordinates() -> Any:
        v = fn.external_source(source=lambda: list(points), batch=True, layout="HWC")
        size = types.Constant(np.array([h, w], np.float32), device="cpu")
        x, y = dali_pixels._grid(v, size)
        return x, y, dali_pixels._folded(v, float(w), fill)

    pipe = coordinates()
    pipe.build()
    x, y, folded = (np.stack([np.asarray(o[i]) for i in range(2)]) for o in pipe.run())
    rows, cols = np.mgrid[0:h, 0:w].astype(np.float32)
    np.testing.assert_allclose(x[..., 0], np.broadcast_to(cols, (2, h, w)), atol=1e-4)
    np.testing.assert_allclose(y[..., 0], np.broadcast_to(rows, (2, h, w)), atol=1e-4)
    theirs = tf_pixels.KERNELS.folded(tf.constant(points), tf.constant(float(w)), fill)
    np.testing.assert_allclose(folded, np.asarray(theirs), atol=1e-4)
