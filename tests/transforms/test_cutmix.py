"""The ``cutmix`` batch stage: the fraction of each class's colour in an image equals its label
weight exactly, the box follows the draws, partners are real samples (never padding),
segmentation masks get the same box, on both engines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from daliaug.config import load_config
from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.sources.arrays import array_samples
from daliaug.transforms.base import random_partners
from tests.helpers import ENGINE_BACKENDS
from tests.sources.test_sources import PALETTE, seg_config, write_segmentation

COLOURS = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]], np.uint8)
H, W = 12, 20


def config(engine: str, **fields: object):
    return load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [H, W],
            "label_mode": "categorical",
            "batch_size": 16,
            "shuffle": False,
            "seed": 5,
            "transforms": [{"type": "cutmix", "alpha": 1.0}],
            "backend": ENGINE_BACKENDS[engine],
            **fields,
        }
    )


def test_colour_fractions_equal_label_weights(engine: str) -> None:
    """Constant-colour images per class: each colour's share of a CutMix image is the label's
    weight on that class; the pasted colour is the partner's."""
    labels = np.arange(16) % len(COLOURS)
    x = np.broadcast_to(COLOURS[labels][:, None, None], (16, H, W, 3)).copy()
    cfg = config(engine)
    rows = draw_rows(cfg.plan, np.random.default_rng(2), 16)
    images, targets = next(batches(engine, cfg, array_samples(x, labels), "cpu", params=rows))
    share = np.stack([(images == c).all(-1).mean(axis=(1, 2)) for c in COLOURS], 1)
    assert share.sum(axis=1).min() == 1.0  # every pixel is one sample's colour
    np.testing.assert_allclose(targets, share, atol=1e-6)
    partner = random_partners(rows[:, 0], np.ones(16, bool)).astype(int)
    pasted = share[np.arange(16), labels[partner]]
    assert (pasted[labels != labels[partner]] > 0).any()
    # the weight is the drawn box's, cut at the border
    box = cfg.transforms[0].stage(
        dict(zip(cfg.transforms[0].params, rows.T, strict=True)), (H, W), NUMPY.math
    )
    mixed = labels != labels[partner]
    np.testing.assert_allclose(pasted[mixed], (box["h"] * box["w"] / (H * W))[mixed], atol=1e-6)


def test_engines_agree_on_photos() -> None:
    from tests.transforms.helpers import photos

    x = np.concatenate([photos()] * 2)[:, :H, :W]
    labels = np.arange(len(x)) % 3
    out = [
        next(batches(e, config(e, batch_size=len(x)), array_samples(x, labels), "cpu"))
        for e in ("dali", "tf")
    ]
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_allclose(out[0][1], out[1][1], atol=1e-6)


def test_box_follows_the_draws() -> None:
    """``lam ~ Beta(alpha, alpha)`` per sample; the box (cut to the image) lies in it, is
    ``round(side * sqrt(1 - lam))`` long where it is not cut, and the weight is its area."""
    t = config("tf").transforms[0]
    rows = draw_rows(config("tf").plan, np.random.default_rng(0), 5000)
    p = dict(zip(t.params, rows.T, strict=True))
    assert stats.kstest(p["lam"], stats.beta(1.0, 1.0).cdf).pvalue > 1e-4
    box = t.stage(p, (H, W), NUMPY.math)
    y0, x0, h, w = box["y0"], box["x0"], box["h"], box["w"]
    assert (y0 >= 0).all() and (x0 >= 0).all() and (y0 + h <= H).all() and (x0 + w <= W).all()
    full = np.floor(H * np.sqrt(1 - p["lam"]) + 0.5)
    centre = np.floor(p["y"] * H)
    inside = (centre - np.floor(full / 2) >= 0) & (centre - np.floor(full / 2) + full <= H)
    np.testing.assert_array_equal(h[inside], full[inside])
    assert (h[~inside] < full[~inside]).all()
    np.testing.assert_allclose(box["weight"], 1 - h * w / (H * W), atol=1e-6)


def test_padding_is_never_a_partner() -> None:
    keys = np.random.default_rng(3).random(10).astype(np.float32)
    p = random_partners(keys, np.arange(10) < 6).astype(int)
    assert sorted(p[:6]) == list(range(6)) and list(p[6:]) == [6, 7, 8, 9]


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_segmentation(tmp_path_factory.mktemp("seg"), count=6)


@pytest.mark.parametrize("mask_output", ["index", "one_hot"])
@pytest.mark.parametrize(
    "transform",
    [{"type": "cutmix", "alpha": 1.0}, {"type": "keras_cutmix"}],
    ids=["torchvision", "keras"],
)
def test_masks_get_the_same_box(
    seg_root: Path, engine: str, mask_output: str, transform: dict
) -> None:
    """Images whose colours are their masks' palette stay so after CutMix (``cutmix``, and
    Keras' ``keras_cutmix``)."""
    cfg = seg_config(
        seg_root,
        image_size=[48, 64],
        batch_size=6,
        backend=ENGINE_BACKENDS[engine],
        transforms=[transform],
        source={"mask_output": mask_output},
    )
    rows = draw_rows(cfg.plan, np.random.default_rng(1), 6)
    plain = seg_config(seg_root, image_size=[48, 64], batch_size=6, transforms=[])
    originals = next(batches("dali", plain, plain.source.samples(), "cpu"))[0]
    images, masks = next(batches(engine, cfg, cfg.source.samples(), "cpu", params=rows))
    index = masks.argmax(-1) if mask_output == "one_hot" else masks
    np.testing.assert_array_equal(images, PALETTE[index])
    assert (images != originals).any()


def test_mixup_on_masks_is_refused(seg_root: Path) -> None:
    with pytest.raises(ConfigError, match=r"mixup.*segmentation masks cannot follow"):
        seg_config(seg_root, transforms=[{"type": "mixup"}])


def test_refused_without_soft_labels() -> None:
    with pytest.raises(ConfigError, match="label_mode: categorical"):
        config("tf", label_mode="int")
