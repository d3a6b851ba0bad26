"""The ``trivial_augment`` policy (TrivialAugment Wide): one op per sample, uniformly, at a
uniformly drawn bin of torchvision's wide tables, and both engines on photos."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from daliaug.transforms.policy import RAND_AUGMENT_OPS, SIGNED_OPS, UNMAGNIFIED_OPS, magnitudes
from tests.helpers import write_image_dir
from tests.transforms.helpers import photo_crops
from tests.transforms.test_rand_augment import _rows, engine_difference


def wide_table(op: str, bins: int) -> np.ndarray:
    """torchvision's TrivialAugmentWide magnitudes, written from its published definition
    (translations in pixels)."""
    import torch

    linear = {"shear_x": 0.99, "shear_y": 0.99, "rotate": 135.0}
    linear |= {"translate_x": 32.0, "translate_y": 32.0}
    linear |= dict.fromkeys(("brightness", "color", "contrast", "sharpness"), 0.99)
    if op in linear:
        return torch.linspace(0.0, linear[op], bins).numpy()
    if op == "posterize":
        return (8 - (torch.arange(bins) / ((bins - 1) / 6)).round().int()).numpy()
    return torch.linspace(255.0, 0.0, bins).numpy()


def test_one_op_per_sample_uniformly_at_uniform_bins() -> None:
    rows = _rows({"type": "trivial_augment"}, 28000)
    flags = np.stack([rows[f"0_{op}"] for op in RAND_AUGMENT_OPS], axis=1)
    np.testing.assert_array_equal(flags.sum(axis=1), 1.0)
    assert stats.chisquare(flags.sum(axis=0)).pvalue > 1e-3
    for op in RAND_AUGMENT_OPS:
        if op in UNMAGNIFIED_OPS:
            continue
        table = wide_table(op, 31).astype(np.float32)
        drawn = rows[f"0_{op}_mag"]
        bins = np.abs(np.abs(drawn)[:, None] - table[None]).argmin(axis=1)
        np.testing.assert_allclose(np.abs(drawn), table[bins], rtol=1e-6, err_msg=op)
        if op == "posterize":  # repeated table values: compare the values' shares
            _, counts = np.unique(drawn, return_counts=True)
            _, expected = np.unique(table, return_counts=True)
            assert stats.chisquare(counts, expected * len(drawn) / 31).pvalue > 1e-3
        else:
            assert stats.chisquare(np.bincount(bins, minlength=31)).pvalue > 1e-3, op
        if op in SIGNED_OPS:
            assert 0.47 < (drawn > 0).mean() < 0.53, op


def test_wide_ranges_match_dali_auto_aug_where_it_follows_torchvision() -> None:
    """DALI's TrivialAugment Wide suite: the same ranges but solarize (256 to 0) and the
    enhancements, which start at 0.01 there."""
    from nvidia.dali.auto_aug.trivial_augment import get_trivial_augment_wide_suite

    suite = {a.name: a for a in get_trivial_augment_wide_suite(use_shape=False)}
    for op in RAND_AUGMENT_OPS:
        if op in UNMAGNIFIED_OPS:
            assert suite[op].mag_range is None
            continue
        low, high = suite[op].mag_range
        ours = magnitudes(op, 31, wide=True)
        if op == "solarize":
            assert (low, high) == (256, 0) and (ours[0], ours[-1]) == (255.0, 0.0)
        elif op in ("brightness", "color", "contrast", "sharpness"):
            assert (low, high) == (0.01, 0.99) and (ours[0], ours[-1]) == (0.0, 0.99)
        else:
            theirs = np.linspace(low, high, 31)
            theirs = np.round(theirs) if op == "posterize" else theirs
            np.testing.assert_allclose(theirs, ours, rtol=1e-6, err_msg=op)


@pytest.mark.slow
def test_engines_agree(tmp_path: Path) -> None:
    root = write_image_dir(tmp_path, {"a": photo_crops(8)})
    diff = engine_difference(root, {"type": "trivial_augment"}, 5)
    assert (diff > 0.05).mean() < 1e-3, diff.max()
