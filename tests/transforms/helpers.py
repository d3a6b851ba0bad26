"""Helpers shared by the transform tests: reference resampling with SciPy and the
geometry of 64x64 warps."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from daliaug.algebra import Affine
from daliaug.parity.measure import inside_source


def inner(a: np.ndarray, border: int = 1) -> np.ndarray:
    return a[border:-border, border:-border]


def reference_warp(
    img: np.ndarray, forward: np.ndarray, out_hw: tuple[int, int], mode: str = "constant"
) -> np.ndarray:
    """Bilinear resampling with SciPy for a 2x3 source-to-destination map in pixel-corner
    coordinates (pixel centres at +0.5), the convention daliaug documents."""
    full = np.vstack([forward, [0, 0, 1]])
    inv = np.linalg.inv(full)
    # index coords (row, col) = corner coords (y, x) - 0.5
    m = np.array([[inv[1, 1], inv[1, 0]], [inv[0, 1], inv[0, 0]]])
    centre = np.array([0.5, 0.5])
    offset = m @ centre + np.array([inv[1, 2], inv[0, 2]]) - centre
    return np.stack(
        [
            ndimage.affine_transform(
                img[..., c].astype(np.float64), m, offset, out_hw, order=1, mode=mode
            )
            for c in range(img.shape[-1])
        ],
        axis=-1,
    )


def inside(forward: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Output pixels of a 64x64 warp whose source point lies ``margin`` pixels inside."""
    return inside_source(Affine(*forward.ravel()), (64, 64), (64, 64), margin)


def about_centre(linear: np.ndarray, c: float = 32.0) -> np.ndarray:
    t = np.array([[1, 0, c], [0, 1, c], [0, 0, 1]])
    l3 = np.eye(3)
    l3[:2, :2] = linear
    return (t @ l3 @ np.linalg.inv(t))[:2]


def photos(count: int, size: int = 64) -> list[np.ndarray]:
    """``count`` ``size`` x ``size`` crops of scikit-learn's two sample photos (lossless PNG
    when written), or structured images where scikit-learn is missing."""
    try:
        from sklearn.datasets import load_sample_images
    except ImportError:
        from tests.helpers import structured_image

        return [structured_image(size, size, seed=i) for i in range(count)]
    sources = load_sample_images().images
    out = []
    for i in range(count):
        img = sources[i % len(sources)]
        y, x = 60 + 37 * i, 120 + 53 * i
        out.append(np.ascontiguousarray(img[y : y + size, x : x + size]))
    return out
