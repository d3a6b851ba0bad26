"""The ``perspective`` pixel stage on both engines (DALI on the CPU, TF): its map takes the
moved corners onto the image's corners (checked against a direct 8x8 solve), the pixels are
SciPy's bilinear resampling through it, masks follow it (nearest), and its draws."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage, stats

from daliaug.config import load_config
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from tests.helpers import ENGINE_BACKENDS, run_of
from tests.sources.test_sources import PALETTE, seg_config, write_segmentation
from tests.transforms.helpers import photos, run_arrays

PHOTOS = photos()
H, W = PHOTOS.shape[1:3]
T = {"type": "perspective", "distortion_scale": 0.6, "probability": 0.8, "fill": 30}


def draws(seed: int, n: int = len(PHOTOS), **fields: object) -> tuple:
    cfg = load_config(
        {"source": {"type": "arrays"}, "image_size": [H, W], "transforms": [{**T, **fields}]}
    )
    rows = draw_rows(cfg.plan, np.random.default_rng(seed), n)
    t = cfg.transforms[0]
    matrix = t.stage(dict(zip(t.params, rows.T, strict=True)), (H, W), NUMPY.math)
    return cfg, rows, dict(zip(t.params, rows.T, strict=True)), matrix


def solved(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The 8 coefficients of the projective map taking ``src`` points to ``dst`` (NumPy)."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(src, dst, strict=True):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        rhs += [u, v]
    return np.linalg.solve(np.array(rows, float), np.array(rhs, float))


def test_map_takes_moved_corners_to_the_image_corners() -> None:
    _, _, p, matrix = draws(0, 200)
    dx, dy = int(0.6 * (W // 2)), int(0.6 * (H // 2))
    corners = np.array([[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]], float)
    for s in range(200):
        off = {k: int(np.floor(p[k][s] * ((dx if k.endswith("x") else dy) + 1))) for k in p}
        moved = np.array(
            [
                [off["tl_x"], off["tl_y"]],
                [W - 1 - off["tr_x"], off["tr_y"]],
                [W - 1 - off["br_x"], H - 1 - off["br_y"]],
                [off["bl_x"], H - 1 - off["bl_y"]],
            ],
            float,
        )
        m = np.array([matrix[f"m{k}"][s] for k in range(8)])
        expected = solved(moved, corners) if p["perspective"][s] else [1, 0, 0, 0, 1, 0, 0, 0]
        np.testing.assert_allclose(m, expected, rtol=1e-5, atol=1e-5)  # float32


def test_half_pixel_evaluates_the_map_half_a_pixel_on() -> None:
    """``half_pixel`` (torchvision's tensor kernel): ``src = M(q + 1/2) - 1/2`` for the map
    ``M`` without it, at every output point ``q``."""
    _, _, _, plain = draws(1, 50)
    _, _, _, half = draws(1, 50, half_pixel=True)

    def through(m: dict, s: int, q: np.ndarray) -> np.ndarray:
        k = np.array([m[f"m{i}"][s] for i in range(8)] + [1.0]).reshape(3, 3)
        out = k @ np.array([*q, 1.0])
        return out[:2] / out[2]

    q = np.array([3.0, 7.0])
    for s in range(50):
        expected = through(plain, s, q + 0.5) - 0.5
        np.testing.assert_allclose(through(half, s, q), expected, rtol=1e-4, atol=1e-3)


def test_pixels_are_scipy_bilinear_through_the_map(engine: str) -> None:
    cfg, rows, p, matrix = draws(1)
    out = run_arrays(engine, PHOTOS, [T], dict(zip(cfg.plan.param_keys, rows.T, strict=True)))
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    for s in range(len(PHOTOS)):
        m = [float(matrix[f"m{k}"][s]) for k in range(8)]
        k = m[6] * x + m[7] * y + 1
        points = [(m[3] * x + m[4] * y + m[5]) / k, (m[0] * x + m[1] * y + m[2]) / k]
        expected = np.stack(
            [
                ndimage.map_coordinates(
                    PHOTOS[s, ..., c].astype(float), points, order=1, mode="grid-constant", cval=30
                )
                for c in range(3)
            ],
            -1,
        )
        if not p["perspective"][s]:
            np.testing.assert_array_equal(out[s], PHOTOS[s])
        np.testing.assert_allclose(out[s], expected, atol=5e-3)


def test_engines_agree() -> None:
    dali, tf = (run_arrays(e, PHOTOS, [T]) for e in ("dali", "tf"))
    np.testing.assert_allclose(dali, tf, atol=5e-3)


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_segmentation(tmp_path_factory.mktemp("seg"), count=6)


def test_masks_follow_with_nearest(seg_root: Path, engine: str) -> None:
    cfg = seg_config(
        seg_root,
        image_size=[48, 64],
        batch_size=6,
        backend=ENGINE_BACKENDS[engine],
        transforms=[{**T, "probability": 1.0, "fill": 0}],
    )
    images, masks = next(batches(engine, cfg, cfg.source.samples(), "cpu"))
    known = masks < 4
    assert (~known).any() and set(np.unique(masks[~known])) == {255}  # mask_fill where revealed
    close = np.abs(images - PALETTE[np.where(known, masks, 0)]).max(axis=-1) <= 1
    assert close[known].mean() > 0.9  # nearest mask and bilinear image agree off class borders


def test_draws_are_uniform_and_probability_honoured() -> None:
    _, _, p, _ = draws(0, 20000, probability=0.3)
    assert abs(p["perspective"].mean() - 0.3) < 0.015
    for name in ("tl_x", "br_y"):
        assert stats.kstest(p[name], stats.uniform(0, 1).cdf).pvalue > 1e-4


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"distortion_scale": 1.0}, "distortion_scale"), ({"fill": -1}, "fill")],
)
def test_bad_fields_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        draws(0, **fields)


@pytest.mark.parametrize("mask_output", ["index", "one_hot"])
def test_gpu_graphs_keep_dalis_device_rules(seg_root: Path, mask_output: str) -> None:
    """Every new stage, with masks through perspective and cutmix, on DALI's GPU graph."""
    from daliaug.engines.dali import pipeline
    from daliaug.engines.dali.check import graph_problems
    from daliaug.prepare import prepare_samples

    stages = ["posterize", "equalize", "auto_contrast", "sharpness", "gaussian_blur"]
    cfg = seg_config(
        seg_root,
        image_size=[48, 64],
        source={"mask_output": mask_output},
        transforms=[
            *({"type": name} for name in stages),
            {"type": "random_erasing", "value": "random"},
            {"type": "perspective"},
            {"type": "cutmix"},
        ],
    )
    samples = prepare_samples(cfg)
    define = partial(pipeline.named_pipeline, run_of(cfg, samples, "gpu"), False, gpu_inputs=True)
    assert not graph_problems(define)


@pytest.mark.slow
def test_outputs_never_leave_0_to_255(engine: str) -> None:
    """A white image seen through a near-degenerate map filled with 255, then blurred: float
    arithmetic lands a step above 255 (255.00002, on the TF engine even without the blur);
    the outputs are clipped once, after the last stage."""
    white = np.full_like(PHOTOS, 255)
    edge = {**T, "distortion_scale": 0.999, "probability": 1.0, "fill": 255}
    blur = {"type": "gaussian_blur", "kernel_size": 5, "sigma": [0.5, 2.0]}
    for transforms in ([edge], [edge, blur]):
        for images in (PHOTOS, white):
            out = run_arrays(engine, images, transforms)
            assert out.dtype == np.float32 and out.min() >= 0.0 and out.max() <= 255.0
        np.testing.assert_allclose(out, 255.0, atol=1e-4)  # white stays white
