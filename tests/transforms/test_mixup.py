"""The ``mixup`` batch stage: pixels and labels agree exactly, lambda is drawn per sample from
Beta(alpha, alpha), partners are a permutation of the batch's real samples (never padding), on
both engines."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from daliaug.config import load_config
from daliaug.engines.select import placed
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.sources.arrays import array_samples
from daliaug.transforms.base import random_partners
from tests.helpers import run_of

CLASSES = 4


def config(backend: str, **fields: object):
    return load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "label_mode": "categorical",
            "batch_size": 16,
            "shuffle": False,
            "seed": 5,
            "transforms": [{"type": "mixup", "alpha": 0.4}],
            "backend": backend,
            **fields,
        }
    )


def test_pixels_give_back_lambda_and_labels_agree(backend: str) -> None:
    """Constant grey images whose value names their class: each output pixel is
    ``lam * v + (1 - lam) * v_partner`` and the label ``lam`` on the sample's class and
    ``1 - lam`` on the partner's."""
    labels = np.arange(16) % CLASSES
    values = 20.0 + 60.0 * labels  # 20, 80, 140, 200
    x = np.broadcast_to(values[:, None, None, None], (16, 8, 8, 3)).astype(np.uint8)
    cfg = config(backend)
    rows = draw_rows(cfg.plan, np.random.default_rng(1), 16)
    images, targets = next(
        batches(placed(backend).engine, cfg, array_samples(x, labels), "cpu", params=rows)
    )
    partner = random_partners(rows[:, 0], np.ones(16, bool)).astype(int)
    lam = rows[:, 1]
    assert sorted(partner) == list(range(16))
    expected = lam * values + (1 - lam) * values[partner]
    np.testing.assert_allclose(images[:, :, :, 0].mean(axis=(1, 2)), expected, atol=1e-3)
    assert np.ptp(images, axis=(1, 2, 3)).max() < 1e-3  # still constant images
    soft = np.zeros((16, CLASSES))
    soft[np.arange(16), labels] += lam
    soft[np.arange(16), labels[partner]] += 1 - lam
    np.testing.assert_allclose(targets, soft, atol=1e-6)
    # the pixel value gives lambda back wherever the partner has another class
    other = labels != labels[partner]
    recovered = (images[other, 0, 0, 0] - values[partner][other]) / (
        values[other] - values[partner][other]
    )
    np.testing.assert_allclose(recovered, lam[other], atol=1e-4)


def test_lambda_is_beta_per_sample() -> None:
    rows = draw_rows(config("tf").plan, np.random.default_rng(0), 5000)
    assert stats.kstest(rows[:, 1], stats.beta(0.4, 0.4).cdf).pvalue > 0.01
    assert len(np.unique(rows[:, 1])) > 4500  # one per sample (float32 collides near 0 and 1)


def test_partners_never_reach_padding() -> None:
    keys = np.random.default_rng(3).random(10).astype(np.float32)
    valid = np.arange(10) < 7
    p = random_partners(keys, valid).astype(int)
    assert sorted(p[:7]) == list(range(7)) and list(p[7:]) == [7, 8, 9]


def test_a_padded_shard_pairs_only_its_real_samples() -> None:
    """Under a strategy a short shard is padded (weight 0): through the feed every output
    reads, each batch stage pairs real samples with real samples only, every epoch."""
    from daliaug.engines.feed import EpochFeed
    from daliaug.outputs.options import DatasetOptions
    from daliaug.outputs.shards import Shards

    x = np.zeros((16, 8, 8, 3), np.uint8)
    mixed = config("tf", batch_size=9, transforms=[{"type": "mixup"}, {"type": "cutmix"}])
    samples = array_samples(x, np.arange(16) % CLASSES)
    shards = Shards.split(
        run_of(mixed, samples), DatasetOptions(), 3, "device", "a keras.distribution"
    )
    shard, options = shards.shard(0)
    assert options.weighs
    epochs = options.epochs(shard)
    weights = options.per_sample(shard.samples)
    feed = EpochFeed(shard.spec, shard.samples, resizes=False, epochs=epochs, weights=weights)
    keys = mixed.plan.stage_keys
    padded = 0
    for epoch in range(3):
        for batch in feed.batches(epoch, ("warp", "weight")):
            unpacked = feed.layout.unpack(batch["warp"], np.reshape, batched=True)
            real = batch["weight"] > 0
            padded += int((~real).sum())
            for i, _ in mixed.plan.batch_stages:
                partner = unpacked["stages"][:, keys.index(f"{i}.partner")].astype(int)
                assert real[partner[real]].all()
                assert (partner[~real] == np.flatnonzero(~real)).all()
    assert padded > 0


def test_partners_of_several_batches_are_each_batchs_own() -> None:
    """Paired a chunk at a time (one sort), each batch's partners are what pairing that batch
    alone gives: indices within the batch, padding kept, ties in the keys as a stable sort."""
    rng = np.random.default_rng(7)
    for batch, n in [(16, 100), (9, 27), (5, 3), (64, 64)]:
        keys = np.round(rng.random(n), 1).astype(np.float32)  # ties
        valid = rng.random(n) < 0.8
        alone = [
            random_partners(keys[a : a + batch], valid[a : a + batch]) for a in range(0, n, batch)
        ]
        np.testing.assert_array_equal(random_partners(keys, valid, batch), np.concatenate(alone))


@pytest.mark.parametrize("pairing", ["default", "own"])
def test_a_chunk_of_the_feed_is_its_batches_joined(
    pairing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``tf.data`` streams take the feed a chunk of batches at a time, made at once: the
    chunk is the batches joined (indices, warp, weights), a padded shard's padding included,
    and a stage with a pairing of its own is still asked batch by batch."""
    from daliaug.engines.feed import EpochFeed
    from daliaug.outputs.options import DatasetOptions
    from daliaug.outputs.shards import Shards
    from daliaug.transforms.mixup import MixUp

    asked: list[int] = []

    def own(self: MixUp, draws: np.ndarray, valid: np.ndarray) -> np.ndarray:
        asked.append(len(draws))
        return np.roll(np.arange(len(draws), dtype=np.float32), 1)

    if pairing == "own":
        monkeypatch.setattr(MixUp, "partners", own)
    mixed = config("tf", batch_size=12, shuffle=True)  # 4 per replica
    samples = array_samples(np.zeros((40, 8, 8, 3), np.uint8), np.arange(40) % CLASSES)
    shards = Shards.split(
        run_of(mixed, samples), DatasetOptions(), 3, "device", "a keras.distribution"
    )
    shard, options = shards.shard(0)
    epochs = options.epochs(shard)
    weights = options.per_sample(shard.samples)
    feed = EpochFeed(shard.spec, shard.samples, resizes=False, epochs=epochs, weights=weights)
    names = ("index", "warp", "weight")
    for epoch in range(2):
        alone = list(feed.batches(epoch, names))
        assert 0 in alone[-1]["weight"]  # padded
        chunks = list(feed.chunks(epoch, names, 2 * shard.batch_size))
        assert len(chunks) == -(-len(alone) // 2)
        for name in names:
            joined = np.concatenate([b[name] for b in alone])
            np.testing.assert_array_equal(np.concatenate([c[name] for c in chunks]), joined)
    if pairing == "own":
        assert set(asked) == {shard.batch_size}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"label_mode": "int"}, "label_mode: categorical"),
        ({"label_mode": "float"}, "label_mode: categorical"),
        ({"label_mode": "raw"}, "label_mode: categorical"),
        ({"label_mode": "input"}, "label_mode: categorical"),
        ({"label_mode": "none"}, "label_mode: categorical"),
        (
            {
                "source": {"type": "segmentation", "images": "i", "masks": "m", "num_classes": 3},
                "label_mode": "int",
            },
            "segmentation",
        ),
    ],
)
def test_refused_without_soft_labels(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config("tf", **fields)
