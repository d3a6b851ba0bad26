"""One definition of an epoch: every consumer (make_dataset on both backends, DaliLoader,
preview, the parity harness) sees the same samples in the same order with the same parameters
for one seed; epoch k is the same whether a run starts there or reaches it; shards draw their
own streams."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.config import Config
from daliaug.epoch import Epochs
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.outputs.dataset import make_dataset
from daliaug.parity.measure import seeded_rows
from daliaug.tools.preview import augmented_samples
from tests.helpers import BACKENDS, config_for

TRANSFORMS = [
    {"type": "flip", "horizontal": 0.5, "vertical": 0.5},
    {"type": "rotation", "angle": 30},
    {"type": "brightness", "factor": 0.5},
]


def numbered(numbered_list: Path, **fields) -> Config:
    """The 23 numbered images (label = index), shuffled, random transforms, uint8 output."""
    source = {"type": "file_list", "path": str(numbered_list)}
    base = {"batch_size": 5, "shuffle": True, "seed": 11, "transforms": TRANSFORMS}
    return config_for(
        numbered_list.parent, source=source, output={"dtype": "uint8"}, **{**base, **fields}
    )


def dataset_epoch(config: Config, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """Images and labels of the first iteration of ``make_dataset``."""
    images, labels = zip(
        *((b[0].numpy(), b[1].numpy()) for b in make_dataset(config, **kwargs)), strict=True
    )
    return np.concatenate(images), np.concatenate(labels)


def test_every_consumer_sees_the_same_epoch(numbered_list: Path) -> None:
    config = numbered(numbered_list)
    images, labels, params = (
        np.concatenate(part) for part in zip(*DaliLoader(config, return_params=True), strict=True)
    )
    assert sorted(labels.tolist()) == list(range(23)) and labels.tolist() != list(range(23))
    assert len(np.unique(params, axis=0)) == 23  # every sample has its own parameters

    dali_images, dali_labels = dataset_epoch(config)
    assert np.array_equal(dali_labels, labels) and np.array_equal(dali_images, images)

    tf_images, tf_labels = dataset_epoch(config.model_copy(update={"backend": "tf"}))
    assert np.array_equal(tf_labels, labels)
    diff = np.abs(tf_images.astype(float) - images)
    assert diff.mean() < 0.5 and np.mean(diff > 2) < 0.01  # the same parameters, not others

    preview_images, preview_labels, _ = augmented_samples(config, 23)  # one batch of 23
    assert np.array_equal(preview_labels, labels) and np.array_equal(preview_images, images)

    in_order = config.model_copy(update={"shuffle": False})
    loader_rows = np.concatenate([b[2] for b in DaliLoader(in_order, return_params=True)])
    assert np.array_equal(seeded_rows(config.plan, 23, 11), loader_rows)


def test_parameter_rows_do_not_depend_on_the_batch_size() -> None:
    from daliaug.config import load_config

    config = load_config(
        {"source": {"type": "directory", "path": "."}, "image_size": 8, "seed": 5}
        | {"transforms": TRANSFORMS}
    )
    rows = [
        np.concatenate(list(Epochs(3000, size, False, True, 5).parameters(config.plan, 4)))
        for size in (1, 7, 1024, 3000)
    ]
    assert all(np.array_equal(rows[0], r) for r in rows[1:])


def test_initial_epoch_starts_where_an_uninterrupted_run_gets_to(
    backend: str, numbered_list: Path
) -> None:
    config = numbered(numbered_list, backend=backend)
    ds = make_dataset(config)
    uninterrupted = [np.concatenate([b[0].numpy() for b in ds]) for _ in range(3)]
    labels = [np.concatenate([b[1].numpy() for b in ds]) for _ in range(3)]  # epochs 3, 4, 5
    resumed = make_dataset(config, initial_epoch=2)
    assert np.array_equal(np.concatenate([b[0].numpy() for b in resumed]), uninterrupted[2])
    next_labels = np.concatenate([b[1].numpy() for b in resumed])  # its second epoch: 3
    assert np.array_equal(next_labels, labels[0])


def test_shards_draw_their_own_orders_and_parameters() -> None:
    from daliaug.config import load_config

    config = load_config(
        {"source": {"type": "directory", "path": "."}, "image_size": 8, "seed": 5}
        | {"transforms": TRANSFORMS}
    )
    a, b = (Epochs(100, 10, False, True, 5, stream=s) for s in (0, 1))
    assert not np.array_equal(a.order(0), b.order(0))
    assert not np.array_equal(
        next(a.parameters(config.plan, 0)), next(b.parameters(config.plan, 0))
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dataset_without_seed_keeps_its_inputs_aligned(numbered_list: Path, backend: str) -> None:
    """Without a seed each dataset draws one, shared by all its inputs (file names, labels,
    per-sample numbers): every image still comes with its own label."""
    config = numbered(numbered_list, seed=None, transforms=[], backend=backend)
    reference = np.concatenate(
        [b[0] for b in DaliLoader(config.model_copy(update={"shuffle": False}))]
    )
    for _ in range(2):
        images, labels = dataset_epoch(config)
        assert labels.tolist() != list(range(23))
        diff = np.abs(images.astype(float) - reference[labels])
        assert diff.mean() < 0.1  # rounding apart at most (the TF backend); a swap is far more
