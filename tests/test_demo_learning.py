"""The demo learns: its model and learning-rate schedule on its data, shortened to one seed and
a few epochs (``python -m bench.demo_seeds`` runs the whole demo for several seeds)."""

from __future__ import annotations

import math
from importlib.resources import files
from pathlib import Path

import pytest


@pytest.mark.slow
def test_the_demo_model_learns_the_demo_data(
    demo_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fourteen epochs of the demo (DALI on the CPU, seed 0) take validation accuracy to twice
    chance or more, where daliaug 0.2's demo sat at chance for up to ten epochs."""
    import keras

    from daliaug.config import load_config
    from daliaug.outputs.dataset import make_dataset
    from daliaug.tools.demo import fit, splits
    from daliaug.tools.models import model_for

    monkeypatch.setenv("DALIAUG_CACHE", str(demo_cache))  # the demo data, written once
    config = load_config(str(files("daliaug.pipelines") / "demo.yaml"), {"backend": "cpu"})
    train, val = splits(config, None)
    epochs, batches = 14, math.ceil(len(train) / config.batch_size)
    keras.utils.set_random_seed(config.seed)
    model = model_for(config, train.num_classes, steps=epochs * batches, warmup=batches)
    history = fit(
        model,
        make_dataset(config, samples=train),
        make_dataset(config.evaluation_twin(), samples=val),
        epochs,
        len(train),
        "accuracy",
        lambda line: None,
    )
    scores = history["val_accuracy"]
    assert max(scores) >= 0.5, scores  # chance: 0.25
