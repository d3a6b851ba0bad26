"""The ``hue`` transform does what it says, on both backends (DALI's CPU pipeline
and the TF backend), checked against NumPy/SciPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import augment, structured_image, write_image_dir


def _yiq(rgb: np.ndarray) -> np.ndarray:
    m = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
    return rgb @ m.T


def test_hue_rotates_chroma_and_keeps_luma(backend: str, square_dir: Path) -> None:
    # mid-range colours, so that no channel clips after the rotation
    img = (60 + structured_image(64, 64) * 0.5).astype(np.uint8)
    root = write_image_dir(square_dir.parent / "hue", {"a": [img]})
    out = augment(backend, root, [{"type": "hue", "degrees": [60, 60]}])
    before, after = _yiq(img.astype(np.float64)), _yiq(out)
    assert np.abs(after[..., 0] - before[..., 0]).max() <= 1.0
    strong = np.hypot(before[..., 1], before[..., 2]) > 20
    turn = np.angle((after[..., 1] + 1j * after[..., 2]) / (before[..., 1] + 1j * before[..., 2]))
    assert np.degrees(np.median(turn[strong])) == pytest.approx(60, abs=1.0)
