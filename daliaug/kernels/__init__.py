"""The pixel and batch kernels every engine supplies: what the pixel and batch stages
(:mod:`daliaug.transforms`) write their ``pixels``, ``masks``, ``images`` and ``targets`` with.

Each kernel is written once, over an array namespace (:mod:`daliaug.kernels.arrays`), in
:mod:`daliaug.kernels.formulas`; the TensorFlow and OpenCV engines bind it to their library
(``pixels.KERNELS`` of :mod:`daliaug.engines.tf.pixels`, :mod:`daliaug.engines.opencv.pixels`)
and write a kernel of their own only where their library is the point, saying why. DALI's graph
is its own: :mod:`daliaug.engines.dali.pixels`, one module of functions with these names and
parameters on DALI's data nodes. ``tests/engines/test_kernels.py`` holds each engine to the
protocol. ``images`` are a batch of float32 HWC samples on the 0..255 scale; a ``Value`` is one
number per sample (a constant, a DALI node, a ``(N,)`` array or tensor). A kernel an engine
lacks is named in the transform's ``dali_lacks`` (``clahe``: not DALI's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

Images = Any
Value = Any
Op = Callable[[Images], Images]

SMOOTH_DETAIL = ((1, 1, 1), (1, -8, 1), (1, 1, 1))
"""PIL's ``ImageFilter.SMOOTH`` kernel ``[[1, 1, 1], [1, 5, 1], [1, 1, 1]]`` minus 13 times the
identity: divided by 13 and correlated with an image, it gives ``smooth(x) - x``."""

MIN_SIGMA = 1e-3
"""Smaller blur sigmas act as this one (the kernel is then the identity to float precision)."""

POSTERIZE_STEPS = tuple(float(2 ** (8 - bits)) for bits in range(9))
"""The quantization step ``2 ** (8 - bits)`` for ``bits`` = 0..8, looked up (exact) rather
than computed with ``pow``."""


def clahe_neighbours(size: int, tile: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CLAHE's blend along one axis of ``size`` padded pixels in ``count`` tiles of ``tile``:
    for each pixel the two surrounding tables' indices (``int32``) and the weight of the
    second (tile centres at ``(k + 1/2) tile``, tables offset by the border's one)."""
    at = (np.arange(size, dtype=np.float32) - tile / 2.0) / tile + 1.0
    low = np.floor(at)
    first = np.clip(low, 0, count + 1).astype(np.int32)
    second = np.clip(low + 1, 0, count + 1).astype(np.int32)
    return first, second, (at - low).astype(np.float32)


class Noise(NamedTuple):
    """Per-pixel, per-channel noise ``clip(mean + std * n, 0, 255)``, ``n ~ N(0, 1)``, drawn by
    the engine (so the engines' noise differs): ``seed`` is one value in [0, 1) per sample, of
    which the TensorFlow and OpenCV engines take the first; DALI draws with the pipeline's."""

    mean: float
    std: float
    seed: Value


class Kernels(Protocol):
    """The kernels of one engine (see the module docstring); the docstrings of
    :class:`~daliaug.kernels.formulas.ArrayKernels` and of the kernels an engine writes itself
    give the exact definitions, which the parity harness holds equal."""

    def solarize(self, images: Images, threshold: Value) -> Images: ...
    def add_clipped(self, images: Images, delta: Value) -> Images: ...
    def posterize(self, images: Images, bits: Value) -> Images: ...
    def equalize(self, images: Images) -> Images: ...
    def auto_contrast(self, images: Images) -> Images: ...
    def sharpness(self, images: Images, factor: Value) -> Images: ...
    def gaussian_blur(self, images: Images, sigma: Value, size: int) -> Images: ...
    def erase(
        self, images: Images, y0: Value, x0: Value, h: Value, w: Value, fill: Sequence[Value]
    ) -> Images: ...
    def erase_noise(
        self, images: Images, y0: Value, x0: Value, h: Value, w: Value, noise: Noise
    ) -> Images: ...
    def perspective(
        self, images: Images, matrix: Sequence[Value], fill: float | str, nearest: bool
    ) -> Images: ...
    def elastic(
        self, images: Images, values: Any, grid: int, fill: float | str, nearest: bool
    ) -> Images: ...
    def clahe(self, images: Images, tiles: tuple[int, int], clip_limit: float) -> Images: ...
    def keras_saturation(
        self, images: Images, factor: Value, low: float, high: float
    ) -> Images: ...
    def keras_hue(self, images: Images, shift: Value) -> Images: ...
    def mix(self, batch: Images, partner: Value, lam: Value) -> Images: ...
    def paste(
        self, batch: Images, partner: Value, y0: Value, x0: Value, h: Value, w: Value
    ) -> Images: ...
    def blend(
        self, batch: Images, partners: Sequence[Value], weights: Sequence[Value]
    ) -> Images: ...
    def mosaic(
        self, batch: Images, partners: Sequence[Value], row: Value, column: Value
    ) -> Images: ...
    def scaled(self, images: Images, factor: Value) -> Images: ...
    def recolour(self, images: Images, entries: Sequence[Value]) -> Images: ...
    def select(self, flag: Value, op: Op, images: Images) -> Images: ...
    def choose(self, options: Sequence[tuple[Value, Op]], images: Images) -> Images: ...
    def each_sample(self, op: Op, images: Images) -> Images: ...
