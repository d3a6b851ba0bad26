"""The OpenCV engine's pixel operations for per-sample pixel stages and batch stages: the kernels
written once (:class:`~daliaug.kernels.formulas.ArrayKernels`) bound to NumPy (:data:`KERNELS`),
and those that OpenCV computes itself, each saying why (the definitions stated in
:mod:`daliaug.engines.tf.pixels`).

Images are ``(N, H, W, C)`` ``float32`` batches on the 0..255 scale; a per-sample parameter is
a ``(N,)`` array (or a number, the same for every sample). :meth:`CvKernels.select` and
:meth:`CvKernels.choose` run an operation only on the samples that chose it, as DALI's
conditionals do: the operation gets those samples' rows, and every ``(N, ...)`` parameter a
kernel is given inside it is cut to the same rows (:attr:`NumpyArrays.rows
<daliaug.kernels.arrays.NumpyArrays.rows>`), so a kernel never sees another sample's values.
Filters, lookups and colour conversions are OpenCV's per image (each releases the GIL); the
rest is NumPy over the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

from daliaug.kernels import MIN_SIGMA, SMOOTH_DETAIL
from daliaug.kernels.arrays import NUMPY
from daliaug.kernels.formulas import ArrayKernels

Value = Any
Op = Callable[[np.ndarray], np.ndarray]


def _per_channel(images: np.ndarray, op: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``op`` on each ``uint8`` channel of each image (rounded half up), as ``float32``."""
    values = KERNELS.quantized(images).astype(np.uint8)
    out = np.empty(images.shape, np.float32)
    for i in range(images.shape[0]):
        for c in range(images.shape[3]):
            out[i, :, :, c] = op(np.ascontiguousarray(values[i, :, :, c]))
    return out


def _hsv(images: np.ndarray) -> np.ndarray:
    """``(N, H, W, 3)`` HSV of the 0..255 RGB values: hue in turns, saturation 0..1, value
    0..255 (TensorFlow's ``rgb_to_hsv``), by OpenCV's conversion (hue in degrees)."""
    out = np.empty_like(images)
    for i in range(images.shape[0]):
        out[i] = cv2.cvtColor(images[i], cv2.COLOR_RGB2HSV)
    out[..., 0] *= np.float32(1.0 / 360.0)
    return out


def _rgb(hsv: np.ndarray) -> np.ndarray:
    """:func:`_hsv`'s inverse, clipped to 0..255."""
    hsv[..., 0] *= np.float32(360.0)
    out = np.empty_like(hsv)
    for i in range(hsv.shape[0]):
        out[i] = cv2.cvtColor(hsv[i], cv2.COLOR_HSV2RGB)
    return np.clip(out, 0.0, 255.0)


class CvKernels(ArrayKernels):
    """The kernels on NumPy batches, OpenCV's where it computes them itself."""

    def equalize(self, images: np.ndarray) -> np.ndarray:
        """OpenCV's ``equalizeHist`` of each channel rounded to ``uint8``: the definition
        itself."""
        return _per_channel(images, cv2.equalizeHist)

    def sharpness(self, images: np.ndarray, factor: Value) -> np.ndarray:
        """PIL's ``ImageEnhance.Sharpness`` (the one-pixel border kept), by OpenCV's
        ``filter2D``, one image at a time, without the GIL."""
        kernel = np.asarray(SMOOTH_DETAIL, np.float32) / 13.0
        detail = np.zeros_like(images)
        h, w = images.shape[1:3]
        if h > 2 and w > 2:
            for i in range(images.shape[0]):
                smooth = cv2.filter2D(images[i], -1, kernel, borderType=cv2.BORDER_CONSTANT)
                detail[i, 1:-1, 1:-1] = smooth.reshape(images.shape[1:])[1:-1, 1:-1]
        factor = self.xp.per_sample(factor, 4)
        return np.clip(images + (1.0 - factor) * detail, 0.0, 255.0)

    def gaussian_blur(self, images: np.ndarray, sigma: Value, size: int) -> np.ndarray:
        """Each image correlated with a normalized ``size`` x ``size`` Gaussian of its own
        ``sigma``, mirrored at the border without repeating the edge (``reflect_101``), by
        OpenCV's separable filter, one image at a time, without the GIL."""
        if size < 1 or size % 2 == 0:
            raise ValueError(f"gaussian_blur needs an odd kernel size, got {size}")
        offsets = np.arange(-(size // 2), size // 2 + 1, dtype=np.float32)
        sigmas = np.maximum(self.xp.each(sigma, images.shape[0]), MIN_SIGMA)
        out = np.empty_like(images)
        for i, s in enumerate(sigmas):
            taps = np.exp(-0.5 * np.square(offsets / s))
            taps = (taps / taps.sum()).astype(np.float32)
            border = cv2.BORDER_REFLECT_101
            blurred = cv2.sepFilter2D(images[i], -1, taps, taps, borderType=border)
            out[i] = blurred.reshape(images.shape[1:])
        return out

    def keras_saturation(
        self, images: np.ndarray, factor: Value, low: float, high: float
    ) -> np.ndarray:
        """Keras' ``RandomSaturation``: ``S' = clip(factor * S, low, high)`` in HSV, by
        OpenCV's colour conversion."""
        hsv = _hsv(images)
        hsv[..., 1] = np.clip(hsv[..., 1] * self.xp.per_sample(factor, 3), low, high)
        return _rgb(hsv)

    def keras_hue(self, images: np.ndarray, shift: Value) -> np.ndarray:
        """Keras' ``RandomHue``: ``H' = H + shift`` turns, kept within one turn, by OpenCV's
        colour conversion."""
        hsv = _hsv(images)
        hue = hsv[..., 0] + self.xp.per_sample(shift, 3)
        hue = np.where(hue > 1.0, hue - 1.0, hue)
        hsv[..., 0] = np.where(hue < 0.0, hue + 1.0, hue)
        return _rgb(hsv)

    def mosaic(
        self, batch: np.ndarray, partners: Sequence[Value], row: Value, column: Value
    ) -> np.ndarray:
        """Four images of the batch in a 2x2 grid cut at ``row`` and ``column`` (the TF
        engine's definition): any batch ``(N, H, W, ...)`` of any dtype; the four quarters
        copied as slices, where TensorFlow selects and gathers every pixel."""
        quarters = [batch, *(batch[self.xp.index(p)] for p in partners)]
        out = np.empty_like(batch)
        h, w = batch.shape[1:3]
        rows = np.asarray(row).astype(np.int64).reshape(-1)
        columns = np.asarray(column).astype(np.int64).reshape(-1)
        for i in range(batch.shape[0]):
            r, c = int(rows[i % len(rows)]), int(columns[i % len(columns)])
            a, b, lower, right = (q[i] for q in quarters)
            top, left = h - r, w - c
            out[i, :top, :left] = a[r:, c:]
            out[i, :top, left:] = b[r:, :c]
            out[i, top:, :left] = lower[:r, c:]
            out[i, top:, left:] = right[:r, :c]
        return out

    def select(self, flag: Value, op: Op, images: np.ndarray) -> np.ndarray:
        """Per sample, ``op(images)`` where ``flag`` (0 or 1) is 1, else ``images``; ``op``
        runs on the chosen samples alone."""
        return self.choose([(flag, op)], images)

    def choose(self, options: Sequence[tuple[Value, Op]], images: np.ndarray) -> np.ndarray:
        """Per sample, ``op(images)`` of the option whose flag (0 or 1, at most one 1) is 1,
        else ``images``; each ``op`` runs on the samples that chose it alone."""
        out = images
        current = NUMPY.rows.get()
        for flag, op in options:
            picked = np.flatnonzero(self.xp.each(flag, images.shape[0]) > 0.5)
            if picked.size == 0:
                continue
            token = NUMPY.rows.set(picked if current is None else current[picked])
            try:
                result = op(images[picked])
            finally:
                NUMPY.rows.reset(token)
            if out is images:
                out = images.astype(np.float32, copy=True)
            out[picked] = result
        return out

    def each_sample(self, op: Op, images: np.ndarray) -> np.ndarray:
        """``op(images)``: :meth:`select` already computes each operation for the samples that
        chose it alone."""
        return op(images)


KERNELS = CvKernels(NUMPY)
"""The OpenCV engine's :class:`~daliaug.kernels.Kernels`."""
