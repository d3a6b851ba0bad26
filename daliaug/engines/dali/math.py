"""DALI primitives for the backend-neutral math: per-sample scalars are CPU ``DataNode``s."""

from __future__ import annotations

from collections.abc import Sequence

import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types

from daliaug.algebra import Math, Scalar, is_const

MATH = Math.of(dmath, minimum="min", maximum="max")


class DaliRandom:
    """Draws with DALI's random operators; their seeds derive from the pipeline's seed."""

    def uniform(self, low: float, high: float) -> Scalar:
        if low == high:
            return float(low)
        return fn.random.uniform(range=[float(low), float(high)], dtype=types.FLOAT)

    def bernoulli(self, p: float) -> Scalar:
        if p in (0.0, 1.0):
            return float(p)
        return fn.cast(fn.random.coin_flip(probability=float(p)), dtype=types.FLOAT)

    def choice(self, values: Sequence[float]) -> Scalar:
        if len(set(values)) == 1:
            return float(values[0])
        return fn.cast(fn.random.choice([float(v) for v in values]), dtype=types.FLOAT)

    def beta(self, a: Scalar, b: Scalar) -> Scalar:
        alpha, beta = (float(v) if is_const(v) else v for v in (a, b))
        return fn.random.beta(alpha=alpha, beta=beta, dtype=types.FLOAT)

    def normal(self) -> Scalar:
        return fn.random.normal(dtype=types.FLOAT)


def as_tensor_arg(values: Sequence[Scalar], shape: Sequence[int]) -> object:
    """Pack per-sample scalars into one argument of ``shape`` (a plain list if all constant)."""
    if all(is_const(v) for v in values):
        return [float(v) for v in values]
    nodes = [types.Constant(float(v), dtype=types.FLOAT) if is_const(v) else v for v in values]
    return fn.reshape(fn.stack(*nodes), shape=list(shape))
