"""Engine-neutral per-sample arithmetic: the math every engine runs on its own scalars.

A *scalar* here is one value per sample: a Python number (a constant), a DALI ``DataNode``,
a ``tf.Tensor`` or a NumPy array. Transforms compute their geometry and colour matrices
with the helpers below and an engine's :class:`Math`, so the same formulas run in the
DALI graph, in TensorFlow and on the host (NumPy: the feed's plan evaluator, the targets).
Python numbers are folded eagerly, which keeps DALI graphs small when a range is degenerate
(for example ``zoom`` with ``keep_aspect``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple, Protocol

Scalar = Any


def is_const(x: Scalar) -> bool:
    """Whether ``x`` is a plain Python number known while building the graph."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def add(a: Scalar, b: Scalar) -> Scalar:
    if is_const(a) and is_const(b):
        return a + b
    if is_const(a) and a == 0:
        return b
    if is_const(b) and b == 0:
        return a
    return a + b


def sub(a: Scalar, b: Scalar) -> Scalar:
    if is_const(b):
        return add(a, -b)
    if is_const(a) and a == 0:
        return -b
    return a - b


def mul(a: Scalar, b: Scalar) -> Scalar:
    if is_const(a) and is_const(b):
        return a * b
    if is_const(a):
        return 0.0 if a == 0 else b if a == 1 else a * b
    if is_const(b):
        return 0.0 if b == 0 else a if b == 1 else a * b
    return a * b


def div(a: Scalar, b: Scalar) -> Scalar:
    if is_const(a) and is_const(b):
        return a / b
    if is_const(b):
        return mul(a, 1.0 / b)
    if is_const(a) and a == 0:
        return 0.0
    return a / b


def neg(a: Scalar) -> Scalar:
    return -a if is_const(a) else sub(0.0, a)


def dot(row: tuple[Scalar, ...], col: tuple[Scalar, ...]) -> Scalar:
    """Sum of pairwise products, folding constant zeros."""
    total: Scalar = 0.0
    for r, c in zip(row, col, strict=True):
        total = add(total, mul(r, c))
    return total


class Random(Protocol):
    """Draws one value per sample; each call is an independent draw."""

    def uniform(self, low: float, high: float) -> Scalar:
        """A value from U[low, high)."""

    def bernoulli(self, p: float) -> Scalar:
        """1.0 with probability ``p``, else 0.0."""

    def choice(self, values: Sequence[float]) -> Scalar:
        """One of ``values``, each equally likely."""

    def beta(self, a: Scalar, b: Scalar) -> Scalar:
        """A value from Beta(a, b) (``a``, ``b`` numbers or per-sample values)."""

    def normal(self) -> Scalar:
        """A value from the standard normal distribution N(0, 1)."""


def _folded(on_constants: Callable[..., float], name: str) -> Callable[..., Scalar]:
    """A :class:`Math` method: ``on_constants`` for Python numbers, else the backend's ``name``."""

    def method(self: Math, *args: Scalar) -> Scalar:
        if all(is_const(a) for a in args):
            return float(on_constants(*args))
        return getattr(self.ops, name)(*args)

    method.__name__ = name
    return method


@dataclass(frozen=True)
class Math:
    """Elementwise functions of a backend (``ops``: a module or namespace with ``cos``, ``sin``,
    ``tan``, ``sqrt``, ``exp``, ``log``, ``floor``, ``minimum``, ``maximum``); Python numbers
    are folded with :mod:`math` instead."""

    ops: Any

    @staticmethod
    def of(module: Any, **renames: str) -> Math:
        """The functions of ``module``, where ``renames`` maps our names to the module's."""
        names = ("cos", "sin", "tan", "sqrt", "exp", "log", "floor", "minimum", "maximum")
        ops = {n: getattr(module, renames.get(n, n)) for n in names}
        return Math(SimpleNamespace(**ops))

    cos = _folded(math.cos, "cos")
    sin = _folded(math.sin, "sin")
    tan = _folded(math.tan, "tan")
    sqrt = _folded(math.sqrt, "sqrt")
    exp = _folded(math.exp, "exp")
    log = _folded(math.log, "log")
    floor = _folded(math.floor, "floor")
    minimum = _folded(min, "minimum")
    maximum = _folded(max, "maximum")

    def round(self, x: Scalar) -> Scalar:
        """Round half up: ``floor(x + 0.5)``, identical in every backend."""
        return self.floor(add(x, 0.5))

    def clip(self, x: Scalar, low: Scalar, high: Scalar) -> Scalar:
        return self.minimum(self.maximum(x, low), high)


class Canvas(NamedTuple):
    """Per-sample height and width of the image at some stage of the geometric chain."""

    h: Scalar
    w: Scalar


class Box(NamedTuple):
    """An integer-valued crop window: top-left corner and size, in pixels."""

    y: Scalar
    x: Scalar
    h: Scalar
    w: Scalar


class Affine(NamedTuple):
    """``x' = a*x + b*y + c``, ``y' = d*x + e*y + f`` in pixel-corner coordinates.

    The centre of pixel ``(row i, column j)`` sits at ``(x, y) = (j + 0.5, i + 0.5)``.
    """

    a: Scalar = 1.0
    b: Scalar = 0.0
    c: Scalar = 0.0
    d: Scalar = 0.0
    e: Scalar = 1.0
    f: Scalar = 0.0

    @staticmethod
    def translate(tx: Scalar, ty: Scalar) -> Affine:
        return Affine(c=tx, f=ty)

    @staticmethod
    def scale(sx: Scalar, sy: Scalar) -> Affine:
        return Affine(a=sx, e=sy)

    @staticmethod
    def about(cx: Scalar, cy: Scalar, linear: tuple[Scalar, Scalar, Scalar, Scalar]) -> Affine:
        """The 2x2 ``linear`` map ``(a, b, d, e)`` applied about the point ``(cx, cy)``."""
        a, b, d, e = linear
        inner = Affine(a=a, b=b, d=d, e=e)
        return (
            Affine.translate(cx, cy)
            .then_after(inner)
            .then_after(Affine.translate(neg(cx), neg(cy)))
        )

    def then_after(self, first: Affine) -> Affine:
        """``self ∘ first``: apply ``first``, then ``self``."""
        return Affine(
            a=dot((self.a, self.b), (first.a, first.d)),
            b=dot((self.a, self.b), (first.b, first.e)),
            c=add(dot((self.a, self.b), (first.c, first.f)), self.c),
            d=dot((self.d, self.e), (first.a, first.d)),
            e=dot((self.d, self.e), (first.b, first.e)),
            f=add(dot((self.d, self.e), (first.c, first.f)), self.f),
        )

    def inverse(self) -> Affine:
        det = sub(mul(self.a, self.e), mul(self.b, self.d))
        ia, ib = div(self.e, det), div(neg(self.b), det)
        id_, ie = div(neg(self.d), det), div(self.a, det)
        return Affine(
            a=ia,
            b=ib,
            c=neg(dot((ia, ib), (self.c, self.f))),
            d=id_,
            e=ie,
            f=neg(dot((id_, ie), (self.c, self.f))),
        )


Row = tuple[Scalar, ...]


@dataclass(frozen=True)
class ColourMatrix:
    """An affine colour map ``out = M @ rgb + N @ mean + t`` on the 0..255 scale, one row per
    channel: ``rows`` holds ``[M | t]``; ``means`` (``N``, optional) weighs ``mean``, the
    per-channel mean of the whole image the map receives (a contrast about the image's own
    mean needs it; every backend computes that mean in its graph)."""

    rows: tuple[Row, ...]
    means: tuple[Row, ...] | None = None

    @staticmethod
    def identity(channels: int) -> ColourMatrix:
        return ColourMatrix.diagonal(1.0, channels)

    @staticmethod
    def diagonal(value: Scalar, channels: int, offset: Scalar = 0.0) -> ColourMatrix:
        """``out = value * in + offset`` on every channel."""
        return ColourMatrix.linear(_diagonal(value, channels), (offset,) * channels)

    @staticmethod
    def linear(m: tuple[Row, ...], offset: Row | None = None) -> ColourMatrix:
        t = offset or (0.0,) * len(m)
        return ColourMatrix(tuple((*row, t_i) for row, t_i in zip(m, t, strict=True)))

    @staticmethod
    def about_mean(value: Scalar, channels: int) -> ColourMatrix:
        """``out = value * (in - mean) + mean`` on every channel (``mean``: the image's own)."""
        return ColourMatrix(
            ColourMatrix.diagonal(value, channels).rows, _diagonal(sub(1.0, value), channels)
        )

    @property
    def channels(self) -> int:
        return len(self.rows)

    @property
    def matrix(self) -> tuple[Row, ...]:
        """``M``."""
        return tuple(row[:-1] for row in self.rows)

    @property
    def offset(self) -> Row:
        """``t``."""
        return tuple(row[-1] for row in self.rows)

    def then_after(self, first: ColourMatrix) -> ColourMatrix:
        """``self ∘ first``: apply ``first``, then ``self``. The mean ``self`` receives is the
        mean of ``first``'s output, ``(M1 + N1) mean + t1`` (the maps are affine), so::

            M = M2 M1    N = M2 N1 + N2 (M1 + N1)    t = (M2 + N2) t1 + t2
        """
        m1, t1 = first.matrix, first.offset
        m2, t2 = self.matrix, self.offset
        matrix = _product(m2, m1)
        offset = tuple(add(dot(row, t1), t_i) for row, t_i in zip(m2, t2, strict=True))
        means = None if first.means is None else _product(m2, first.means)
        if self.means is not None:
            seen = m1 if first.means is None else _sum(m1, first.means)
            own = _product(self.means, seen)
            means = own if means is None else _sum(means, own)
            shift = tuple(dot(row, t1) for row in self.means)
            offset = tuple(add(a, b) for a, b in zip(offset, shift, strict=True))
        return ColourMatrix(ColourMatrix.linear(matrix, offset).rows, means)

    def flat(self) -> list[Scalar]:
        """Row-major ``[M | t]`` entries, ``channels * (channels + 1)`` of them."""
        return [v for row in self.rows for v in row]

    def flat_means(self) -> list[Scalar]:
        """Row-major ``N`` entries, ``channels * channels`` of them (zeros without ``means``)."""
        if self.means is None:
            return [0.0] * self.channels**2
        return [v for row in self.means for v in row]


def _diagonal(value: Scalar, channels: int) -> tuple[Row, ...]:
    return tuple(tuple(value if i == j else 0.0 for j in range(channels)) for i in range(channels))


def _product(a: tuple[Row, ...], b: tuple[Row, ...]) -> tuple[Row, ...]:
    """The matrix product ``a @ b``."""
    columns = list(zip(*b, strict=True))
    return tuple(tuple(dot(row, col) for col in columns) for row in a)


def _sum(a: tuple[Row, ...], b: tuple[Row, ...]) -> tuple[Row, ...]:
    return tuple(
        tuple(add(x, y) for x, y in zip(r, s, strict=True)) for r, s in zip(a, b, strict=True)
    )
