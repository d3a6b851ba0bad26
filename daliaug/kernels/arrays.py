"""The array namespace the engine-neutral code is written against, and its NumPy binding.

Two kinds of code run over it: the plan evaluator (:meth:`WarpLayout.evaluate
<daliaug.engines.feed.WarpLayout.evaluate>`: ``math``, ``floats``, ``length``, ``columns``,
``differs``) and the kernels and target encoders (:mod:`daliaug.kernels.formulas`,
:mod:`daliaug.kernels.targets`: the rest). :data:`NUMPY` binds it to NumPy (the host's feed,
the OpenCV engine), :data:`daliaug.engines.tf.math.TF_ARRAYS` to TensorFlow (XLA-compiled
graphs). A per-sample parameter is a ``(N, ...)`` array (its first axis the batch) or a number
(the same for every sample); while an engine computes some samples only (OpenCV's ``select``:
some rows, TensorFlow's ``each_sample``: one), :meth:`Arrays.of_samples` cuts each parameter to
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, Protocol

import numpy as np

from daliaug.algebra import Math, Scalar
from daliaug.epoch import columns

Axes = int | tuple[int, ...]


class Arrays(Protocol):
    """The array operations of one library (NumPy's or TensorFlow's), under one set of names."""

    math: Math

    # the plan evaluator's
    def floats(self, x: Any) -> Any:
        """``x`` as float32."""

    def length(self, x: Any) -> Any:
        """The size of ``x``'s first dimension."""

    def columns(self, values: Sequence[Scalar], count: Any) -> Any:
        """Per-sample scalars (arrays or constants) as ``(count, len(values))`` float32."""

    def differs(self, rows: Any, reference: Sequence[float]) -> Any:
        """Per row of the float32 ``rows``, 1.0 where it differs from ``reference``, else 0.0."""

    # the kernels'
    def of_samples(self, value: Any) -> Any:
        """A per-sample parameter cut to the samples being computed (a number as it is)."""

    def per_sample(self, value: Any, rank: int) -> Any:
        """A per-sample ``(N,)`` parameter (or a number), cut as :meth:`of_samples` says, as
        float32 shaped ``(N, 1, ...)`` to broadcast against a rank-``rank`` batch."""

    def each(self, value: Any, count: Any) -> Any:
        """A per-sample parameter, cut as :meth:`of_samples` says, as ``count`` float32 values
        (a number repeated)."""

    def shape(self, x: Any) -> Any:
        """``x``'s shape as the library knows it when the code runs (TensorFlow: a tensor)."""

    def index(self, x: Any) -> Any:
        """``x`` (whole numbers, as floats or integers) as gather indices, truncated."""

    def ints(self, x: Any) -> Any:
        """``x`` as int32."""

    def cast(self, x: Any, dtype: str) -> Any:
        """``x`` as the dtype named (NumPy's names)."""

    def arange(self, count: Any) -> Any:
        """``0, 1, ..., count - 1`` as indices."""

    def where(self, condition: Any, x: Any, y: Any) -> Any: ...
    def clip(self, x: Any, low: Any, high: Any) -> Any: ...
    def floor(self, x: Any) -> Any: ...
    def minimum(self, x: Any, y: Any) -> Any: ...

    def reshape(self, x: Any, shape: Sequence[Any]) -> Any: ...
    def transpose(self, x: Any, axes: Sequence[int]) -> Any: ...
    def concat(self, xs: Sequence[Any], axis: int) -> Any: ...
    def stack(self, xs: Sequence[Any], axis: int) -> Any: ...

    def pad(self, x: Any, pads: Sequence[Sequence[int]], mode: str, value: float = 0.0) -> Any:
        """``x`` padded by ``pads`` (before, after per axis): ``mode`` ``"constant"`` (with
        ``value``) or ``"symmetric"`` (mirrored, the edge included)."""

    def gather(self, x: Any, index: Any) -> Any:
        """``x[index]``: the rows of ``x`` (or of a sequence of numbers) at ``index``."""

    def amin(self, x: Any, axis: Axes, keepdims: bool = False) -> Any: ...
    def amax(self, x: Any, axis: Axes, keepdims: bool = False) -> Any: ...
    def mean(self, x: Any, axis: Axes, keepdims: bool = False) -> Any: ...
    def sum(self, x: Any, axis: Axes, keepdims: bool = False) -> Any: ...
    def cumsum(self, x: Any, axis: int) -> Any: ...

    def counts(self, ids: Any, length: Any) -> Any:
        """How often each of ``0 .. length - 1`` occurs in ``ids``, as ``(length,)`` float32."""

    def one_hot(self, index: Any, count: int) -> Any:
        """``index`` as float32 one-hot vectors of ``count`` along a new last axis (all 0 for
        an index outside ``0 .. count - 1``)."""

    def normal(self, shape: Any, mean: float, std: float, seed: Any) -> Any:
        """float32 noise ``mean + std * n``, ``n ~ N(0, 1)``, of ``shape``, seeded by the first
        sample's ``seed`` in [0, 1): each library draws its own."""


class NumpyArrays:
    """:class:`Arrays` on NumPy arrays: the host's feed and the OpenCV engine. ``rows``: the
    batch rows being computed (``None``: all of them), set by the OpenCV engine's ``select``."""

    math = Math.of(np)
    rows: ClassVar[ContextVar[np.ndarray | None]] = ContextVar("daliaug_numpy_rows", default=None)

    @staticmethod
    def floats(x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float32)

    @staticmethod
    def length(x: Any) -> int:
        return len(x)

    columns = staticmethod(columns)

    @staticmethod
    def differs(rows: np.ndarray, reference: Sequence[float]) -> np.ndarray:
        return np.any(rows != np.asarray(reference, np.float32), axis=1).astype(np.float32)

    def of_samples(self, value: Any) -> Any:
        rows = self.rows.get()
        if rows is None or np.ndim(value) == 0:
            return value
        return np.asarray(value)[rows]

    def per_sample(self, value: Any, rank: int) -> np.ndarray:
        return np.asarray(self.of_samples(value), np.float32).reshape([-1] + [1] * (rank - 1))

    def each(self, value: Any, count: Any) -> np.ndarray:
        values = np.asarray(self.of_samples(value), np.float32).reshape(-1)
        return np.broadcast_to(values, (count,))

    @staticmethod
    def shape(x: Any) -> tuple[int, ...]:
        return np.shape(x)

    @staticmethod
    def index(x: Any) -> np.ndarray:
        return np.asarray(x).astype(np.intp)

    @staticmethod
    def ints(x: Any) -> np.ndarray:
        return np.asarray(x).astype(np.int32)

    @staticmethod
    def cast(x: Any, dtype: str) -> np.ndarray:
        return np.asarray(x).astype(dtype)

    arange = staticmethod(np.arange)
    where = staticmethod(np.where)
    clip = staticmethod(np.clip)
    floor = staticmethod(np.floor)
    minimum = staticmethod(np.minimum)
    reshape = staticmethod(np.reshape)
    transpose = staticmethod(np.transpose)
    concat = staticmethod(np.concatenate)
    stack = staticmethod(np.stack)

    @staticmethod
    def pad(x: Any, pads: Sequence[Sequence[int]], mode: str, value: float = 0.0) -> np.ndarray:
        if mode == "constant":
            return np.pad(x, pads, constant_values=value)
        return np.pad(x, pads, mode)

    @staticmethod
    def gather(x: Any, index: Any) -> np.ndarray:
        return np.asarray(x)[index]

    amin = staticmethod(np.min)
    amax = staticmethod(np.max)
    mean = staticmethod(np.mean)
    sum = staticmethod(np.sum)
    cumsum = staticmethod(np.cumsum)

    @staticmethod
    def counts(ids: Any, length: Any) -> np.ndarray:
        return np.bincount(np.ravel(ids), minlength=length).astype(np.float32)

    @staticmethod
    def one_hot(index: Any, count: int) -> np.ndarray:
        return (np.asarray(index)[..., None] == np.arange(count)).astype(np.float32)

    def normal(self, shape: Any, mean: float, std: float, seed: Any) -> np.ndarray:
        seeds = np.reshape(self.of_samples(seed), -1)
        first = float(seeds[0]) if seeds.size else 0.0
        rng = np.random.default_rng(int(first * 2**31))
        return (mean + std * rng.standard_normal(shape)).astype(np.float32)


NUMPY = NumpyArrays()
