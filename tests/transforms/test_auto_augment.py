"""The ``auto_augment`` policy (ImageNet): a sub-policy per sample, its two ops at their
probabilities and magnitude bins, and both engines on photos."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from daliaug.transforms.auto_augment import BINS, IMAGENET_POLICY
from daliaug.transforms.policy import SIGNED_OPS, UNMAGNIFIED_OPS
from tests.helpers import write_image_dir
from tests.transforms.helpers import photo_crops
from tests.transforms.test_rand_augment import (
    _config,
    _rows,
    engine_difference,
    torchvision_table,
)

OPS = tuple(dict.fromkeys(op for sub in IMAGENET_POLICY for op, _, _ in sub))


@pytest.mark.parametrize("slot", [0, 1])
def test_ops_appear_as_often_as_the_policy_says(slot: int) -> None:
    count = 25000
    rows = _rows({"type": "auto_augment"}, count)
    flags = np.stack([rows[f"{slot}_{op}"] for op in OPS], axis=1)
    assert set(np.unique(flags)) <= {0.0, 1.0} and flags.sum(axis=1).max() == 1.0
    expected = np.zeros(len(OPS) + 1)
    for sub in IMAGENET_POLICY:
        op, probability, _ = sub[slot]
        expected[OPS.index(op)] += probability / 25
    expected[-1] = 1 - expected.sum()  # nothing applied in this slot
    observed = np.append(flags.sum(axis=0), count - flags.sum())
    kept = expected > 0
    assert (observed[~kept] == 0).all()
    assert stats.chisquare(observed[kept], expected[kept] * count).pvalue > 1e-3


def test_magnitudes_are_the_policy_bins_of_torchvisions_table() -> None:
    rows = _rows({"type": "auto_augment"}, 20000)
    for slot in (0, 1):
        for op in OPS:
            if op in UNMAGNIFIED_OPS:
                continue
            chosen = rows[f"{slot}_{op}"] == 1.0
            allowed = {
                np.float32(torchvision_table(op, BINS)[bin_])
                for sub in IMAGENET_POLICY
                for name, _, bin_ in (sub[slot],)
                if name == op
            }
            if not allowed:
                assert not chosen.any()
                continue
            drawn = np.unique(np.abs(rows[f"{slot}_{op}_mag"][chosen]))
            np.testing.assert_allclose(drawn, sorted(allowed), rtol=1e-6, err_msg=op)
            if op in SIGNED_OPS:
                values = rows[f"{slot}_{op}_mag"][chosen]
                share = (values[values != 0] > 0).mean()
                assert 0.4 < share < 0.6, (slot, op)


def test_only_the_imagenet_policy() -> None:
    from daliaug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"transforms\.0\.auto_augment\.policy"):
        _config({"type": "auto_augment", "policy": "cifar10"})


@pytest.mark.slow
def test_engines_agree(tmp_path: Path) -> None:
    root = write_image_dir(tmp_path, {"a": photo_crops(8)})
    diff = engine_difference(root, {"type": "auto_augment"}, 11)
    assert (diff > 0.05).mean() < 1e-3, diff.max()
