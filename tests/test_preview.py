"""daliaug preview's tiles: class names, or each class's label weight where batch stages mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.tools.preview import augmented_samples, caption
from tests.helpers import config_for


def test_caption_names_the_class_or_the_mixed_weights() -> None:
    names = ["cat", "dog", "fox"]
    assert caption(np.int32(1), names) == "dog"
    assert caption(np.array([0.38, 0.62, 0.0]), names) == "dog 0.62 / cat 0.38"


@pytest.mark.parametrize("stage", [{"type": "mixup", "alpha": 0.4}, {"type": "cutmix"}])
def test_mixed_batches_show_their_label_weights(demo_dir: Path, stage: dict) -> None:
    config = config_for(demo_dir, label_mode="categorical", transforms=[stage], shuffle=True)
    images, labels, names = augmented_samples(config, 8)
    assert images.dtype == np.uint8 and labels.shape == (8, len(names))
    np.testing.assert_allclose(labels.sum(axis=1), 1.0, atol=1e-5)
    mixed = [caption(t, names) for t in labels if np.count_nonzero(t > 0.005) == 2]
    assert mixed and all(" / " in c for c in mixed)
