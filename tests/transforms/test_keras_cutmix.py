"""The ``keras_cutmix`` batch stage on both engines (DALI's CPU pipeline and the TF engine), from
Keras' own ``CutMix`` through ``from_keras``: the same pixels as Keras' layer on real photos
with its draws and partners pinned, label weights that are the pasted area exactly, boxes and
``lam`` drawn as Keras draws them (masks follow: ``test_cutmix.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from daliaug.engines.feed import NUMPY
from daliaug.epoch import draw_rows
from daliaug.transforms.base import random_partners
from tests.keras.conftest import photos
from tests.transforms.helpers import from_keras_for, pin_keras_draws, rows_of, run_config

SIZE = (48, 64)
COLOURS = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]], np.uint8)


def cutmix(factor=(0.0, 1.0)):
    import keras

    return keras.layers.CutMix(factor=factor)


def test_matches_keras_with_its_draws_pinned(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    x = np.concatenate([photos(*SIZE), photos(*SIZE)[:, ::-1]])
    n = len(x)
    labels = np.arange(n) % 3
    layer = cutmix((0.2, 0.7))
    config = from_keras_for(layer, engine, SIZE, n, label_mode="categorical")
    rng = np.random.default_rng(0)
    draws = {
        "partner": rng.random(n).astype(np.float32),
        "lam": np.array([0.1, 0.5, 0.9, 0.0, 1.0, 0.3, 0.64, 0.75], np.float32),
        "x": rng.random(n).astype(np.float32),
        "y": rng.random(n).astype(np.float32),
    }
    images, targets = run_config(config, engine, x, rows_of(config, draws, n), labels)
    order = random_partners(draws["partner"], np.ones(n, bool)).astype(np.int32)
    pin_keras_draws(
        monkeypatch,
        uniform=[np.float32(0.4), draws["x"], draws["y"]],
        beta=[draws["lam"]],
        shuffle=[order],
    )
    one_hot = np.eye(3, dtype=np.float32)[labels]
    theirs = layer({"images": x.astype(np.float32), "labels": one_hot}, training=True)
    np.testing.assert_array_equal(np.asarray(images), np.asarray(theirs["images"]))
    # Keras weighs by the real-valued box, daliaug by the pixels pasted
    box = config.transforms[-1].stage(draws, SIZE, NUMPY.math)
    slack = (box["h"] + box["w"] + 1) / (SIZE[0] * SIZE[1])
    differs = np.abs(np.asarray(targets) - np.asarray(theirs["labels"])).max(axis=1)
    assert (differs <= slack + 1e-6).all()
    assert (order != np.arange(n)).any() and (box["h"] * box["w"] > 0).sum() >= 5


def test_label_weights_are_the_pasted_area(engine: str) -> None:
    """Constant-colour images per class: each colour's share of an image is its label weight."""
    n = 16
    labels = np.arange(n) % len(COLOURS)
    x = np.broadcast_to(COLOURS[labels][:, None, None], (n, *SIZE, 3)).copy()
    config = from_keras_for(cutmix(), engine, SIZE, n, label_mode="categorical")
    rows = draw_rows(config.plan, np.random.default_rng(2), n)
    images, targets = run_config(config, engine, x, rows, labels)
    share = np.stack([(images == c).all(-1).mean(axis=(1, 2)) for c in COLOURS], 1)
    assert share.sum(axis=1).min() == 1.0
    np.testing.assert_allclose(targets, share, atol=1e-6)
    assert (share.max(axis=1) < 1).sum() >= 4  # boxes pasted from other classes


@pytest.mark.slow
def test_lam_and_boxes_follow_keras_draws() -> None:
    """Keras draws ``alpha ~ U(factor)`` per batch, then ``lam ~ Beta(alpha, alpha)`` per
    image: its draws over many batches against daliaug's per image (``lam``: Keras' weight is
    ``1 - ratio ** 2``), and the pasted boxes' heights and corners."""
    import keras

    keras.utils.set_random_seed(0)
    layer, size, batch, count = cutmix((0.1, 0.9)), (16, 20), 8, 400
    lam, heights, tops = [], [], []
    for _ in range(count):
        t = layer.get_random_transformation(np.zeros((batch, *size, 1), np.float32))
        rows_any = np.asarray(t["batch_masks"])[..., 0].any(axis=2)
        lam.append(np.asarray(t["mix_weight"]).ravel())
        heights.append(rows_any.sum(1))
        tops.append(np.where(rows_any.any(1), rows_any.argmax(1), -1))
    config = from_keras_for(layer, "tf", size, batch, label_mode="categorical")
    transform = config.transforms[-1]
    rows = draw_rows(config.plan, np.random.default_rng(1), count * batch)
    p = dict(zip(transform.params, rows.T, strict=True))
    assert stats.ks_2samp(np.concatenate(lam), p["lam"]).pvalue > 1e-3
    box = transform.stage(p, size, NUMPY.math)
    ours_top = np.where(box["h"] > 0, box["y0"], -1)
    for theirs, ours in ((heights, box["h"]), (tops, ours_top)):
        table = np.array(
            [
                np.bincount(np.concatenate(theirs) + 1, minlength=18)[:18],
                np.bincount(ours.astype(int) + 1, minlength=18)[:18],
            ]
        )
        table = table[:, table.sum(0) > 0]
        assert stats.chi2_contingency(table).pvalue > 1e-3
