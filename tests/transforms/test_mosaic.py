"""The ``mosaic`` batch stage: each output is the window of the 2x2 canvas of four whole images
(the sample's own top left) at the drawn centre, on both engines and against a NumPy
reference; labels weighed by the area each image shows; segmentation masks get the same grid;
boxes move with their image and are cut to its quadrant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.boxes import PAD
from daliaug.config import load_config
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.sources.arrays import array_samples
from daliaug.transforms.base import random_partners
from tests.helpers import ENGINE_BACKENDS
from tests.sources.test_sources import PALETTE, seg_config, write_segmentation

H, W, N = 12, 20, 8
COLOURS = np.array(
    [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255], [255, 0, 255]],
    np.uint8,
)


def config(engine: str, **fields: object):
    return load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [H, W],
            "label_mode": "categorical",
            "batch_size": N,
            "shuffle": False,
            "seed": 5,
            "transforms": [{"type": "mosaic", "probability": 0.8}],
            "backend": ENGINE_BACKENDS[engine],
            **fields,
        }
    )


def pinned_rows(cfg, count: int = N) -> np.ndarray:
    """Drawn rows with a centre on each edge and one sample left alone."""
    rows = draw_rows(cfg.plan, np.random.default_rng(2), count)
    column = {key.split(".")[1]: k for k, key in enumerate(cfg.plan.param_keys)}
    rows[:, column["mosaic"]] = 1.0
    rows[0, [column["y"], column["x"]]] = (0.0, 1.0)  # the centre at the top right corner
    rows[1, [column["y"], column["x"]]] = (1.0, 0.0)
    rows[2, column["mosaic"]] = 0.0
    return rows


def grid(rows: np.ndarray, cfg) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The reference's reading of the draws: the three partners (each a random permutation
    of the batch from its own keys), and the centre ``(round(y * H), round(x * W))``, the
    bottom-right corner where not drawn."""
    p = dict(zip((k.split(".")[1] for k in cfg.plan.param_keys), rows.T, strict=True))
    every = np.ones(len(rows), bool)
    partners = [
        random_partners(p[k], every).astype(int)
        for k in ("top_right", "bottom_left", "bottom_right")
    ]
    drawn = p["mosaic"] > 0.5
    top = np.where(drawn, np.floor(p["y"] * np.float32(H) + 0.5), H).astype(int)
    left = np.where(drawn, np.floor(p["x"] * np.float32(W) + 0.5), W).astype(int)
    return partners, top, left


def reference(x: np.ndarray, partners: list[np.ndarray], top, left) -> np.ndarray:
    """The ``H x W`` window at ``(H - top, W - left)`` of the canvas ``[[A, B], [C, D]]``."""
    out = np.empty_like(x)
    for i in range(len(x)):
        a, b, c, d = x[i], *(x[p[i]] for p in partners)
        canvas = np.concatenate([np.concatenate([a, b], 1), np.concatenate([c, d], 1)], 0)
        out[i] = canvas[H - top[i] : 2 * H - top[i], W - left[i] : 2 * W - left[i]]
    return out


def photos_and_labels() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).integers(0, 256, (N, H, W, 3), dtype=np.uint8)
    return x, np.arange(N) % 3


def test_pixels_and_labels_match_the_reference(engine: str) -> None:
    """Random pixels through both engines: the mosaic equals the NumPy reference's window of
    the 2x2 canvas exactly, the labels the area-weighted sum of the four images' labels."""
    x, labels = photos_and_labels()
    cfg = config(engine)
    rows = pinned_rows(cfg)
    images, targets = next(batches(engine, cfg, array_samples(x, labels), "cpu", params=rows))
    partners, top, left = grid(rows, cfg)
    np.testing.assert_array_equal(images, reference(x, partners, top, left))
    np.testing.assert_array_equal(images[2], x[2])  # not drawn: left as it is
    one_hot = np.eye(3)[labels]
    shares = [top * left, top * (W - left), (H - top) * left, (H - top) * (W - left)]
    indices = [np.arange(N), *partners]
    expected = sum(s[:, None] / (H * W) * one_hot[i] for s, i in zip(shares, indices, strict=True))
    np.testing.assert_allclose(targets, expected, atol=1e-6)
    np.testing.assert_allclose(targets.sum(axis=1), 1.0, atol=1e-6)


def test_engines_agree_on_random_draws() -> None:
    x, labels = photos_and_labels()
    out = [next(batches(e, config(e), array_samples(x, labels), "cpu")) for e in ("dali", "tf")]
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_allclose(out[0][1], out[1][1], atol=1e-6)


def test_quadrants_show_their_images_and_labels_their_shares() -> None:
    """Constant colours per class: each quadrant is its image's colour, and each colour's share
    of the output is its label's weight."""
    labels = np.arange(N) % len(COLOURS)
    x = np.broadcast_to(COLOURS[labels][:, None, None], (N, H, W, 3)).copy()
    cfg = config("dali")
    rows = pinned_rows(cfg)
    images, targets = next(batches("dali", cfg, array_samples(x, labels), "cpu", params=rows))
    partners, top, left = grid(rows, cfg)
    for i in range(N):
        b, c, d = (labels[p[i]] for p in partners)
        t, lf = top[i], left[i]
        for part, label in (
            (images[i, :t, :lf], labels[i]),
            (images[i, :t, lf:], b),
            (images[i, t:, :lf], c),
            (images[i, t:, lf:], d),
        ):
            assert (part == COLOURS[label]).all()
    share = np.stack([(images == c).all(-1).mean(axis=(1, 2)) for c in COLOURS], 1)
    np.testing.assert_allclose(targets, share, atol=1e-6)


def test_centre_follows_the_draws() -> None:
    """``y, x ~ U(center_range)``: the centre lies in the range's whole pixels and the four
    shares sum to one."""
    cfg = config("tf", transforms=[{"type": "mosaic", "center_range": [0.3, 0.6]}])
    t = cfg.transforms[0]
    rows = draw_rows(cfg.plan, np.random.default_rng(0), 4000)
    p = dict(zip(t.params, rows.T, strict=True))
    v = t.stage(p, (H, W), NUMPY.math)
    top, left = H - v["row"], W - v["column"]  # each image is cut where the centre falls
    assert top.min() == round(0.3 * H) and top.max() == round(0.6 * H)
    assert left.min() == round(0.3 * W) and left.max() == round(0.6 * W)
    np.testing.assert_array_equal(top, np.floor(p["y"] * np.float32(H) + 0.5))
    total = sum(v[f"{q}_share"] for q in ("top_left", "top_right", "bottom_left", "bottom_right"))
    np.testing.assert_allclose(total, 1.0, atol=1e-6)


def test_bad_centre_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="center_range"):
        config("tf", transforms=[{"type": "mosaic", "center_range": [0.5, 1.5]}])
    with pytest.raises(ConfigError, match="label_mode: categorical"):
        config("tf", label_mode="int")


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_segmentation(tmp_path_factory.mktemp("seg"), count=6)


@pytest.mark.parametrize("mask_output", ["index", "one_hot"])
def test_masks_get_the_same_grid(seg_root: Path, engine: str, mask_output: str) -> None:
    """Images whose colours are their masks' palette stay so after Mosaic."""
    fields = {"image_size": [48, 64], "batch_size": 6, "source": {"mask_output": mask_output}}
    cfg = seg_config(
        seg_root,
        backend=ENGINE_BACKENDS[engine],
        transforms=[{"type": "mosaic"}],
        **fields,
    )
    rows = draw_rows(cfg.plan, np.random.default_rng(1), 6)
    plain = seg_config(seg_root, transforms=[], **fields)
    originals = next(batches("dali", plain, plain.source.samples(), "cpu"))[0]
    images, masks = next(batches(engine, cfg, cfg.source.samples(), "cpu", params=rows))
    index = masks.argmax(-1) if mask_output == "one_hot" else masks
    np.testing.assert_array_equal(images, PALETTE[index])
    assert (images != originals).any()


def detection_batch(engine: str, cfg, samples, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """The first batch's images, boxes and labels."""
    images, targets = next(batches(engine, cfg, samples, "cpu", params=rows))
    return images, targets["boxes"], targets["labels"]


def test_boxes_land_in_their_quadrants(engine: str) -> None:
    """Each image has a box over the whole image (label ``3 * i``), one in its top-left corner
    (``3 * i + 1``, out of sight above left of the centre unless the image is below or right
    of it) and one across its centre (``3 * i + 2``): each lands shifted with its image, cut
    to its quadrant, and boxes left without area (or under ``min_area``) are dropped."""
    x, _ = photos_and_labels()
    whole = [0.0, 0.0, W, H]
    corner = [0.0, 0.0, 2.0, 2.0]
    middle = [W / 2 - 3, H / 2 - 3, W / 2 + 3, H / 2 + 3]
    y = {
        "boxes": [np.array([whole, corner, middle], np.float32)] * N,
        "labels": [np.array([3 * i, 3 * i + 1, 3 * i + 2]) for i in range(N)],
    }
    cfg = config(engine, source={"type": "arrays", "boxes": True}, min_area=2.0)
    rows = pinned_rows(cfg)
    images, boxes, labels = detection_batch(engine, cfg, array_samples(x, y), rows)
    partners, top, left = grid(rows, cfg)
    np.testing.assert_array_equal(images, reference(x, partners, top, left))
    for i in range(N):
        t, lf = float(top[i]), float(left[i])
        quadrants = [  # image, offset (dx, dy), window xyxy
            (i, (lf - W, t - H), (0.0, 0.0, lf, t)),
            (partners[0][i], (lf, t - H), (lf, 0.0, W, t)),
            (partners[1][i], (lf - W, t), (0.0, t, lf, H)),
            (partners[2][i], (lf, t), (lf, t, W, H)),
        ]
        expected_boxes, expected_labels = [], []
        for image, (dx, dy), (wx0, wy0, wx1, wy1) in quadrants:
            for k, box in enumerate((whole, corner, middle)):
                x0, y0 = max(box[0] + dx, wx0), max(box[1] + dy, wy0)
                x1, y1 = min(box[2] + dx, wx1), min(box[3] + dy, wy1)
                if x1 > x0 and y1 > y0 and (x1 - x0) * (y1 - y0) >= 2.0:
                    expected_boxes.append([x0, y0, x1, y1])
                    expected_labels.append(3 * image + k)
        count = len(expected_labels)
        np.testing.assert_allclose(boxes[i, :count], expected_boxes, atol=1e-5)
        np.testing.assert_array_equal(labels[i, :count], expected_labels)
        assert (labels[i, count:] == PAD).all() and (boxes[i, count:] == PAD).all()
    assert (labels[2, :3] == [6, 7, 8]).all() and (labels[2, 3:] == PAD).all()  # not drawn


def test_keypoints_outside_their_quadrant_become_invisible() -> None:
    """On the host: each image's keypoints shift with it; those its quadrant cuts away (or
    already invisible) are not shown, and ``min_visibility`` drops boxes cut too far."""
    from daliaug.boxes import Rules, Targets

    t = config("tf").transforms[0]
    box = np.array([[2.0, 2.0, 18.0, 10.0]], np.float32)  # 16 x 8 of the 20 x 12 image
    points = np.array([[[3.0, 3.0, 1.0], [17.0, 9.0, 1.0], [17.0, 3.0, 0.0]]], np.float32)
    targets = Targets.of([box, box], [np.array([0]), np.array([1])], [points, points], 3)
    p = {
        "top_right": np.array([1, 0]),
        "bottom_left": np.array([1, 1]),
        "bottom_right": np.array([0, 1]),
        "mosaic": np.ones(2, np.float32),
        "y": np.full(2, 0.5, np.float32),  # the centre (6, 10): each quadrant 6 x 10
        "x": np.full(2, 0.5, np.float32),
    }
    out = t.boxes(targets, p, (H, W), Rules(min_visibility=0.3))
    # image 0: its own box shifted by (-10, -6) to [-8, -4, 8, 4], kept [0, 0, 8, 4] (1/4:
    # dropped at 0.3); image 1's top-right box [12, -4, 28, 4] cut to [12, 0, 20, 4], also 1/4;
    # bottom-left (image 1) [-8, 8, 8, 16] -> [0, 8, 8, 12]; bottom-right (image 0) [12, 8,
    # 28, 16] -> [12, 8, 20, 12]: all a quarter of 128 pixels
    assert out.count.tolist() == [0, 0]
    out = t.boxes(targets, p, (H, W), Rules())
    assert out.count.tolist() == [4, 4]
    np.testing.assert_array_equal(
        out.boxes[0], [[0, 0, 8, 4], [12, 0, 20, 4], [0, 8, 8, 12], [12, 8, 20, 12]]
    )
    assert out.labels[0].tolist() == [0, 1, 1, 0] and out.labels[1].tolist() == [1, 0, 1, 1]
    kp = out.keypoints[0]
    # own: (3, 3) -> (-7, -3) out of sight; (17, 9) -> (7, 3) shown; the third never shown
    np.testing.assert_array_equal(kp[0, :, :2], [[-7, -3], [7, 3], [7, -3]])
    assert kp[0, :, 2].tolist() == [0.0, 1.0, 0.0]
    # top right: (3, 3) -> (13, -3) above the output; (17, 9) -> (27, 3) right of it
    assert kp[1, :, 2].tolist() == [0.0, 0.0, 0.0]
    # bottom right: (3, 3) -> (13, 9) shown; (17, 9) -> (27, 15) outside
    assert kp[3, :, 2].tolist() == [1.0, 0.0, 0.0]
