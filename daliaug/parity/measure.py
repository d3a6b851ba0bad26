"""The NumPy side of the parity harness: explicit parameters, where warps meet the border, and
the error statistics with their tolerances. Imports neither TensorFlow nor DALI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from daliaug.algebra import Affine, Canvas, Math, Scalar
from daliaug.epoch import Epochs
from daliaug.plan import Plan

MATH = Math.of(np)

MAX_MEAN_ERROR = 0.5
"""Tolerated mean absolute difference on the 0..255 scale, lossless input."""
MAX_SHARE_OVER = 0.005
"""Tolerated share of pixels that differ by more than :data:`OVER` (at least 99.5% within)."""
OVER = 2
MAX_DECODE_MEAN_ERROR = 1.0
"""Tolerated mean absolute difference between two JPEG decoders."""
BORDER_BAND = 1.0
"""Width in source pixels of the band around the source border that warp comparisons skip."""


def seeded_rows(plan: Plan, n: int, seed: int) -> np.ndarray:
    """The parameter rows ``make_dataset`` gives the first ``n`` samples of epoch 0 for
    ``seed`` (unshuffled, one shard), ordered like ``plan.param_keys`` (float32)."""
    return Epochs(n, n, False, False, seed).rows(plan, 0)[0:n]


def inside_source(
    forward: Affine, out_hw: tuple[int, int], src_hw: tuple[Scalar, Scalar], margin: float = 1.0
) -> np.ndarray:
    """Output pixels whose source point lies at least ``margin`` pixels inside the source.

    ``forward`` maps source to output pixel-corner coordinates. Its entries and ``src_hw`` may
    be arrays with one element per sample; the result then has shape ``(n, H, W)``.
    """
    inv = [np.asarray(v, np.float64)[..., None, None] for v in forward.inverse()]
    y, x = np.mgrid[0 : out_hw[0], 0 : out_hw[1]] + 0.5
    sx = inv[0] * x + inv[1] * y + inv[2]
    sy = inv[3] * x + inv[4] * y + inv[5]
    h, w = (np.asarray(v, np.float64)[..., None, None] for v in src_hw)
    return (sx >= margin) & (sx <= w - margin) & (sy >= margin) & (sy <= h - margin)


def border_band(
    forward: Affine, out_hw: tuple[int, int], src_hw: tuple[Scalar, Scalar], width: float
) -> np.ndarray:
    """Output pixels whose source point lies in the band ``width`` pixels wide centred on the
    source border: there bilinear interpolation mixes image pixels with the fill (an identity
    map puts no pixel in it)."""
    outer = inside_source(forward, out_hw, src_hw, -width / 2)
    return outer & ~inside_source(forward, out_hw, src_hw, width / 2)


def compared_pixels(plan: Plan, rows: np.ndarray, source_hw: np.ndarray) -> np.ndarray:
    """``(n, H, W, 1)`` mask of the output pixels a comparison counts: all but those in the
    :data:`BORDER_BAND` of each sample's source (the decoded window for a fused crop)."""
    params = {k: rows[:, i].astype(np.float64) for i, k in enumerate(plan.param_keys)}
    source = Canvas(h=source_hw[:, 0].astype(np.float64), w=source_hw[:, 1].astype(np.float64))
    geometry = plan.geometry(params, source, MATH)
    src_hw = source if geometry.roi is None else Canvas(geometry.roi.h, geometry.roi.w)
    band = border_band(geometry.forward, plan.image_size, src_hw, BORDER_BAND)
    return ~np.broadcast_to(band, (len(rows), *plan.image_size))[..., None]


def differences(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The absolute differences of the compared values, flat: where ``mask`` (broadcast to
    the images' shape) is true, or all."""
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return diff[np.broadcast_to(mask, diff.shape)] if mask is not None else diff.ravel()


@dataclass(frozen=True)
class Stats:
    """Absolute differences between two backends' outputs on the 0..255 scale."""

    max_error: float
    mean_error: float
    share_over: float
    """Share of compared values that differ by more than :data:`OVER`."""
    compared: int
    """How many values (pixels x channels) were compared."""

    @staticmethod
    def of(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> Stats:
        """The statistics of ``|a - b|``, only where ``mask`` (broadcast) is true if given."""
        return Stats.of_differences(differences(a, b, mask))

    @staticmethod
    def of_differences(diff: np.ndarray) -> Stats:
        """The statistics of absolute differences already taken (see :func:`differences`)."""
        if diff.size == 0:
            return Stats(0.0, 0.0, 0.0, 0)
        return Stats(
            float(diff.max()), float(diff.mean()), float(np.mean(diff > OVER)), int(diff.size)
        )

    def within(self, kind: str = "pipeline") -> bool:
        """Whether the statistics meet the tolerance of their ``kind`` of comparison: the
        decoders' for ``decoder``; for ``masks`` the values compared are 1 where two class
        indices differ, so the mean is the share of differing mask pixels."""
        if kind == "decoder":
            return self.mean_error <= MAX_DECODE_MEAN_ERROR
        if kind == "masks":
            return self.mean_error <= MAX_SHARE_OVER
        return self.mean_error <= MAX_MEAN_ERROR and self.share_over <= MAX_SHARE_OVER

    def as_dict(self) -> dict[str, float]:
        return asdict(self)
