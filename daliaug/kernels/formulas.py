"""The kernels written once, over an array namespace (:class:`~daliaug.kernels.arrays.Arrays`):
the definitions the TensorFlow and OpenCV engines bind (``ArrayKernels(TF_ARRAYS)``,
``ArrayKernels(NUMPY)``, each engine's ``pixels.KERNELS``) and DALI's graph matches
(:mod:`daliaug.engines.dali.pixels`); the parity harness holds them equal.

Images are batches ``(N, H, W, C)`` of ``float32`` on the 0..255 scale; every per-sample
parameter is a ``(N,)`` array (a Python number means the same value for every sample). Every
formula compiles with XLA on TensorFlow: static channel counts, no data-dependent control flow.
Results stay ``float32``; operations that quantize (``posterize``, ``equalize``) first round
each value half up (``floor(x + 0.5)``), as the output's ``uint8`` conversion does.

:class:`ArrayKernels` has no ``equalize``, ``sharpness``, ``gaussian_blur``, ``keras_saturation``,
``keras_hue``, ``mosaic``, ``select``, ``choose`` or ``each_sample``: each engine writes those
in its own library, where the library is the point (OpenCV's filters, histogram and colour
conversions; TensorFlow's image ops and control flow under XLA).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daliaug.kernels import POSTERIZE_STEPS, Noise, clahe_neighbours
from daliaug.kernels.arrays import Arrays

Images = Any
Value = Any


class ArrayKernels:
    """The kernels every engine computes the same way, over the array namespace ``xp``; an
    engine subclasses it with the kernels it writes in its own library."""

    def __init__(self, xp: Arrays) -> None:
        self.xp = xp

    # helpers the kernels (an engine's own ones too) share

    def quantized(self, images: Images) -> Images:
        """Round half up and saturate to the integers 0..255 (still ``float32``)."""
        return self.xp.clip(self.xp.floor(images + 0.5), 0.0, 255.0)

    def box(self, shape: Any, y0: Value, x0: Value, h: Value, w: Value) -> Any:
        """``(N, H, W)`` booleans: rows ``y0 <= i < y0 + h`` and columns ``x0 <= j < x0 + w``
        of each sample (whole pixels; a box reaching outside the image is cut by its border)."""
        xp = self.xp
        rows = xp.floats(xp.arange(shape[1]))[None, :, None]
        cols = xp.floats(xp.arange(shape[2]))[None, None, :]
        y0, x0, h, w = (xp.per_sample(v, 3) for v in (y0, x0, h, w))
        return (rows >= y0) & (rows < y0 + h) & (cols >= x0) & (cols < x0 + w)

    @staticmethod
    def trailing(mask: Any, rank: int) -> Any:
        """A ``(N, H, W)`` mask with unit axes appended to broadcast against a rank-``rank``
        batch."""
        return mask[(..., *([None] * (rank - 3)))]

    def grid(self, images: Images) -> tuple[Any, Any]:
        """The row and column index of each pixel, ``(1, H, 1)`` and ``(1, 1, W)``."""
        xp = self.xp
        shape = xp.shape(images)
        rows = xp.floats(xp.arange(shape[1]))[None, :, None]
        cols = xp.floats(xp.arange(shape[2]))[None, None, :]
        return rows, cols

    def wrapped(self, v: Any, period: Any) -> Any:
        """``v`` modulo ``period``, within ``[0, period)``."""
        return v - period * self.xp.floor(v / period)

    def reflected(self, v: Any, size: Any) -> Any:
        """Source coordinates ``v`` on an axis of ``size`` pixels mirrored about the image's
        edges (``... b a | a b ... y z | z y ...``), then clamped: TensorFlow's
        ``ImageProjectiveTransformV3`` ``reflect`` (Keras' affine layers), OpenCV's
        ``BORDER_REFLECT``."""
        xp = self.xp
        t = self.wrapped(v, 2.0 * size)
        t = xp.where(t >= size, 2.0 * size - t - 1.0, t)
        return xp.clip(t, 0.0, size - 1.0)

    def folded(self, v: Any, size: Any, fill: float | str) -> Any:
        """Source coordinates ``v`` on an axis of ``size`` pixels brought inside for a ``fill``
        mode: ``nearest`` clamps; ``reflect`` mirrors below 0 about the first pixel centre and
        above the last about the image's edge (Keras' ``map_coordinates``: ``... c b | a b c d
        | d c ...``), then clamps; a constant leaves them."""
        if not isinstance(fill, str):
            return v
        xp = self.xp
        if fill == "reflect":
            t = self.wrapped(abs(v), 2.0 * size)
            v = xp.where(t < size, t, 2.0 * size - t - 1.0)
        return xp.clip(v, 0.0, size - 1.0)

    def sample(self, images: Images, x: Any, y: Any, fill: float, nearest: bool) -> Images:
        """Each sample of ``images`` at the points ``(x, y)`` (``(N, H', W')``, index
        coordinates): its nearest pixel (half up) or the four around it (bilinear), those
        outside the image taking ``fill``; ``float32`` ``(N, H', W', C)``. The images are
        padded by one ``fill`` pixel and each point clamped into that border, so a neighbour
        is one gather at a fixed offset from the point's index."""
        xp = self.xp
        shape = xp.shape(images)
        h, w, c = shape[1], shape[2], images.shape[3]
        pads = [[0, 0], [1, 1], [1, 1], [0, 0]]
        flat = xp.reshape(xp.pad(xp.floats(images), pads, "constant", fill), [-1, c])
        stride = w + 2
        base = (xp.arange(shape[0]) * ((h + 2) * stride))[:, None, None]
        hf, wf = xp.floats(h), xp.floats(w)
        x, y = xp.clip(x, -1.0, wf), xp.clip(y, -1.0, hf)
        if nearest:
            x0, y0 = xp.floor(x + 0.5), xp.floor(y + 0.5)
        else:
            x0, y0 = xp.minimum(xp.floor(x), wf - 1.0), xp.minimum(xp.floor(y), hf - 1.0)
        at = base + (xp.index(y0) + 1) * stride + xp.index(x0) + 1
        if nearest:
            return xp.gather(flat, at)
        fx, fy = (x - x0)[..., None], (y - y0)[..., None]
        top = xp.gather(flat, at) * (1 - fx) + xp.gather(flat, at + 1) * fx
        bottom = xp.gather(flat, at + stride) * (1 - fx) + xp.gather(flat, at + stride + 1) * fx
        return top * (1 - fy) + bottom * fy

    # the kernels

    def solarize(self, images: Images, threshold: Value) -> Images:
        """``255 - x`` where ``x >= threshold``, else ``x`` (PIL's ``ImageOps.solarize``)."""
        xp = self.xp
        return xp.where(images >= xp.per_sample(threshold, 4), 255.0 - images, images)

    def add_clipped(self, images: Images, delta: Value) -> Images:
        """``clip(x + delta, 0, 255)``, one ``delta`` per sample."""
        return self.xp.clip(images + self.xp.per_sample(delta, 4), 0.0, 255.0)

    def posterize(self, images: Images, bits: Value) -> Images:
        """Keep the top ``bits`` (an integer 0..8 per sample) bits of each value rounded to
        ``uint8`` (PIL's ``ImageOps.posterize``; 0 bits gives black, 8 the rounded image)."""
        xp = self.xp
        index = xp.index(xp.clip(xp.floor(xp.floats(bits) + 0.5), 0.0, 8.0))
        step = xp.per_sample(xp.gather(POSTERIZE_STEPS, index), 4)
        return xp.floor(self.quantized(images) / step) * step

    def auto_contrast(self, images: Images) -> Images:
        """Stretch each channel of each image from its own ``[min, max]`` to ``[0, 255]``:
        ``(x - min) * (255 / (max - min))``; a channel with ``max == min`` is unchanged (PIL's
        ``ImageOps.autocontrast`` with no cutoff, before its truncation to ``uint8``)."""
        xp = self.xp
        low = xp.amin(images, (1, 2), keepdims=True)
        high = xp.amax(images, (1, 2), keepdims=True)
        spread = high > low
        scale = 255.0 / xp.where(spread, high - low, 255.0)
        return xp.floats(xp.minimum((images - xp.where(spread, low, 0.0)) * scale, 255.0))

    def erase(
        self, images: Images, y0: Value, x0: Value, h: Value, w: Value, fill: Sequence[Value]
    ) -> Images:
        """Set rows ``y0 <= i < y0 + h``, columns ``x0 <= j < x0 + w`` (whole pixels per
        sample) to ``fill``: one value per channel, each a number or a ``(N,)`` array."""
        xp = self.xp
        shape = xp.shape(images)
        values = xp.stack([xp.each(v, shape[0]) for v in fill], 1)
        inside = self.box(shape, y0, x0, h, w)[..., None]
        return xp.floats(xp.where(inside, values[:, None, None, :], images))

    def erase_noise(
        self, images: Images, y0: Value, x0: Value, h: Value, w: Value, noise: Noise
    ) -> Images:
        """:meth:`erase` with ``noise`` (:class:`~daliaug.kernels.Noise`), drawn in the graph,
        not on the host (:meth:`Arrays.normal <daliaug.kernels.arrays.Arrays.normal>`)."""
        xp = self.xp
        shape = xp.shape(images)
        drawn = xp.clip(xp.normal(shape, noise.mean, noise.std, noise.seed), 0.0, 255.0)
        return xp.where(self.box(shape, y0, x0, h, w)[..., None], drawn, images)

    def perspective(
        self, images: Images, matrix: Sequence[Value], fill: float | str, nearest: bool
    ) -> Images:
        """Projective resampling onto the same size: output pixel ``(x, y)`` (index
        coordinates, pixel centres at whole numbers) takes the input at ``((m0 x + m1 y + m2) /
        k, (m3 x + m4 y + m5) / k)``, ``k = m6 x + m7 y + 1`` (:meth:`sample`; ``fill``
        ``"reflect"``: the points mirrored inside first, :meth:`reflected`). ``matrix``: 8
        per-sample values; any batch ``(N, H, W, C)`` (images, masks); the result is
        ``float32``. Gathers and arithmetic, as XLA compiles them (it has no
        ``ImageProjectiveTransformV3``)."""
        xp = self.xp
        rows, cols = self.grid(images)
        m = [xp.per_sample(v, 3) for v in matrix]
        k = m[6] * cols + m[7] * rows + 1.0
        x = (m[0] * cols + m[1] * rows + m[2]) / k
        y = (m[3] * cols + m[4] * rows + m[5]) / k
        if isinstance(fill, str):
            shape = xp.floats(xp.shape(images))
            x, y = self.reflected(x, shape[2]), self.reflected(y, shape[1])
        return self.sample(images, x, y, 0.0 if isinstance(fill, str) else float(fill), nearest)

    def elastic(
        self, images: Images, values: Any, grid: int, fill: float | str, nearest: bool
    ) -> Images:
        """An elastic distortion. ``values`` ``(N, 3 + G * G)``, ``G = grid``: per sample the
        node spacing in pixels, the images' height and width, then a periodic ``G x G`` grid of
        shifts, row by row. The shift ``s(x, y)`` of output pixel ``(x, y)`` is the grid
        interpolated bilinearly at ``(x / spacing, y / spacing)`` modulo ``G``; the output
        takes the input at ``(x + s, y + s)`` (:meth:`sample`; both axes move by the one
        shift, as in Keras' ``RandomElasticTransform``), outside the image by ``fill``: a
        constant, or the ``nearest`` or ``reflect`` pixel (:meth:`folded`). Any batch ``(N, H,
        W, C)``; ``float32``."""
        xp = self.xp
        values = xp.floats(xp.of_samples(values))
        nodes = xp.reshape(values[:, 3:], [-1, grid, grid])
        nodes = xp.concat([nodes, nodes[:, :1]], 1)
        nodes = xp.concat([nodes, nodes[:, :, :1]], 2)[..., None]
        rows, cols = self.grid(images)
        spacing = xp.reshape(values[:, 0], [-1, 1, 1])
        u = self.wrapped(cols / spacing, float(grid)) + 0.0 * rows
        v = self.wrapped(rows / spacing, float(grid)) + 0.0 * cols
        shift = self.sample(nodes, u, v, 0.0, False)[..., 0]
        shape = xp.floats(xp.shape(images))
        x = self.folded(cols + shift, shape[2], fill)
        y = self.folded(rows + shift, shape[1], fill)
        return self.sample(images, x, y, 0.0 if isinstance(fill, str) else float(fill), nearest)

    def clahe(self, images: Images, tiles: tuple[int, int], clip_limit: float) -> Images:
        """Keras' ``ContrastLimitedAdaptiveHistogramEqualization``, per channel: the image
        (static ``H x W``) padded at the bottom and right by mirroring (edge included) to whole
        tiles of ``ceil(H / rows) x ceil(W / cols)`` pixels (``tiles`` = rows, cols); per tile
        a 256-bin histogram of the values truncated to whole numbers, each bin cut at
        ``clip_limit * area / 256`` (when ``clip_limit > 0``) and the cut counts spread evenly
        over the 256 bins; the table ``(cdf - cdf[0]) * 255 / (area - cdf[0])`` (clipped to
        0..255); each pixel's value looked up in the tables of the four tiles whose centres
        surround it (the outer tiles' own beyond them) and blended bilinearly. ``float32``, not
        rounded."""
        xp = self.xp
        rows, cols = tiles
        n, (h, w, c) = xp.shape(images)[0], images.shape[1:4]
        th, tw = -(-h // rows), -(-w // cols)
        pads = [[0, 0], [0, th * rows - h], [0, tw * cols - w], [0, 0]]
        values = xp.clip(xp.index(xp.pad(images, pads, "symmetric")), 0, 255)
        tiled = xp.reshape(values, [-1, rows, th, cols, tw, c])
        tiled = xp.reshape(xp.transpose(tiled, [0, 1, 3, 5, 2, 4]), [-1, th * tw])
        count = xp.shape(tiled)[0]
        ids = tiled + 256 * xp.arange(count)[:, None]
        hist = xp.reshape(xp.counts(ids, count * 256), [count, 256])
        area = float(th * tw)
        if clip_limit > 0:
            cut = xp.minimum(hist, clip_limit * area / 256.0)
            hist = cut + xp.sum(hist - cut, 1, keepdims=True) / 256.0
        cdf = xp.cumsum(hist, 1)
        span = area - cdf[:, :1]
        lut = (cdf - cdf[:, :1]) * 255.0 / xp.where(span == 0.0, 1.0, span)
        lut = xp.reshape(xp.clip(lut, 0.0, 255.0), [-1, rows, cols, c, 256])
        lut = xp.concat([lut[:, :1], lut, lut[:, -1:]], 1)
        lut = xp.reshape(xp.concat([lut[:, :, :1], lut, lut[:, :, -1:]], 2), [-1])

        y0, y1, wy = (v[None, :, None, None] for v in clahe_neighbours(th * rows, th, rows))
        x0, x1, wx = (v[None, None, :, None] for v in clahe_neighbours(tw * cols, tw, cols))
        base = (xp.arange(n)[:, None, None, None] * (rows + 2) * (cols + 2) * c) * 256
        base = base + xp.arange(c)[None, None, None, :] * 256 + values

        def table(y: Any, x: Any) -> Any:
            return xp.gather(lut, base + (y * (cols + 2) * c + x * c) * 256)

        top = table(y0, x0) * (1.0 - wx) + table(y0, x1) * wx
        bottom = table(y1, x0) * (1.0 - wx) + table(y1, x1) * wx
        return (top * (1.0 - wy) + bottom * wy)[:, :h, :w, :]

    def mix(self, batch: Images, partner: Value, lam: Value) -> Images:
        """``lam * x + (1 - lam) * x[partner]`` per sample (MixUp), for images and soft
        targets (one-hot labels, one-hot masks) alike: any batch ``(N, ...)``; ``partner``
        holds batch indices (as floats)."""
        xp = self.xp
        other = xp.gather(batch, xp.index(partner))
        lam = xp.per_sample(lam, len(batch.shape))
        return xp.floats(lam * batch + (1.0 - lam) * other)

    def paste(
        self, batch: Images, partner: Value, y0: Value, x0: Value, h: Value, w: Value
    ) -> Images:
        """``x`` with the box (as in :meth:`erase`, but lying within the image: the host cuts
        it, DALI's ``multi_paste`` refuses one that does not) replaced by the same box of
        ``x[partner]`` (CutMix), for images and masks alike: any batch ``(N, H, W, ...)`` of
        any dtype (DALI: HWC samples). The label weight of the partner is the box's area over
        ``H * W``; mix the labels with :meth:`mix` and ``lam = 1 - h * w / (H * W)``."""
        xp = self.xp
        other = xp.gather(batch, xp.index(partner))
        inside = self.trailing(self.box(xp.shape(batch), y0, x0, h, w), len(batch.shape))
        return xp.where(inside, other, batch)

    def blend(self, batch: Images, partners: Sequence[Value], weights: Sequence[Value]) -> Images:
        """``weights[0] * x + weights[1] * x[partners[0]] + weights[2] * x[partners[1]] +
        ...`` per sample, summed in that order (Mosaic's labels): any batch ``(N, ...)``."""
        xp = self.xp
        rank = len(batch.shape)
        out = xp.per_sample(weights[0], rank) * batch
        for partner, weight in zip(partners, weights[1:], strict=True):
            out = out + xp.per_sample(weight, rank) * xp.gather(batch, xp.index(partner))
        return xp.floats(out)

    def scaled(self, images: Images, factor: Value) -> Images:
        """Each sample times its ``factor`` (unclipped)."""
        return images * self.xp.per_sample(factor, len(images.shape))

    def recolour(self, images: Images, entries: Sequence[Value]) -> Images:
        """RGB images through a per-sample colour map, clipped to 0..255: ``entries`` are ``[M
        | t]`` (3 x 4) then ``N`` (3 x 3), row by row; ``out = M @ rgb + t + N @ mean`` with
        ``mean`` each image's per-channel mean."""
        xp = self.xp
        e = [xp.per_sample(v, 4) for v in entries]
        mean = xp.mean(images, (1, 2), keepdims=True)
        out = []
        for c in range(3):
            value = e[4 * c + 3]
            for j in range(3):
                value = value + e[4 * c + j] * images[..., j : j + 1]
                value = value + e[12 + 3 * c + j] * mean[..., j : j + 1]
            out.append(value)
        return xp.clip(xp.concat(out, -1), 0.0, 255.0)
