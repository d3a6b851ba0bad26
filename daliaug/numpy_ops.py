"""NumPy primitives for the backend-neutral math: per-sample scalars are ``(batch,)`` arrays.

The DALI loader evaluates the plan with these on the host, one batch at a time, and feeds
DALI the resulting decode windows and matrices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daliaug.algebra import Canvas, Math, Scalar
from daliaug.plan import Plan

MATH = Math.of(np)


class NumpyRandom:
    """Draws ``size`` values per call from a NumPy generator (float32, like the other backends)."""

    def __init__(self, rng: np.random.Generator, size: int) -> None:
        self.rng, self.size = rng, size

    def uniform(self, low: float, high: float) -> Scalar:
        if low == high:
            return float(low)
        return self.rng.uniform(low, high, self.size).astype(np.float32)

    def bernoulli(self, p: float) -> Scalar:
        if p in (0.0, 1.0):
            return float(p)
        return (self.rng.random(self.size) < p).astype(np.float32)


def pack(values: Sequence[Scalar], batch: int) -> np.ndarray:
    """Per-sample scalars (arrays or constants) as a ``(batch, len(values))`` float32 array."""
    out = np.empty((batch, len(values)), dtype=np.float32)
    for i, v in enumerate(values):
        out[:, i] = v
    return out


def draw_params(plan: Plan, rng: np.random.Generator, batch: int) -> np.ndarray:
    """A ``(batch, len(plan.param_keys))`` float32 array of parameters drawn from ``rng``."""
    drawn = plan.draw(NumpyRandom(rng, batch))
    return pack([drawn[k] for k in plan.param_keys], batch)


def warp_batch(
    plan: Plan,
    rows: np.ndarray,
    sizes: np.ndarray,
    *,
    fuse_roi: bool,
    masks: bool,
    resize: bool = False,
) -> dict[str, np.ndarray]:
    """The plan's per-sample inputs (:meth:`Plan.warp_inputs`) for a batch of parameter
    ``rows`` and images of ``sizes`` ((height, width) rows), shaped ``(batch, *shape)``."""
    batch = len(sizes)
    params = {key: rows[:, i] for i, key in enumerate(plan.param_keys)}
    source = Canvas(h=sizes[:, 0].astype(np.float32), w=sizes[:, 1].astype(np.float32))
    values = plan.warp_inputs(params, source, MATH, fuse_roi=fuse_roi, masks=masks, resize=resize)
    return {
        name: pack(v, batch).reshape(batch, *plan.warp_input_shape(name))
        for name, v in values.items()
    }
