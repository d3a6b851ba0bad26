"""TensorFlow's pixel operations for per-sample pixel stages and batch stages: the kernels written
once (:class:`~daliaug.kernels.formulas.ArrayKernels`) bound to TensorFlow (:data:`KERNELS`), and
those written in TensorFlow's own terms, each saying why. The twins of
:mod:`daliaug.engines.dali.pixels` (same names, same arguments, same results).

Images are batches ``(N, H, W, C)`` of ``float32`` on the 0..255 scale; every per-sample
parameter is a tensor of shape ``(N,)`` (a Python number means the same value for every
sample). Everything here compiles with XLA (``tf.function(jit_compile=True)``): static
shapes, no data-dependent control flow. The semantics are stated in each function and in
:mod:`daliaug.kernels.formulas`: these are the definitions every engine is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from daliaug.engines.tf.math import TF_ARRAYS
from daliaug.kernels import MIN_SIGMA, SMOOTH_DETAIL
from daliaug.kernels.formulas import ArrayKernels

Value = tf.Tensor | float
Op = Callable[[tf.Tensor], tf.Tensor]


class TfKernels(ArrayKernels):
    """The kernels on TensorFlow tensors, XLA-compiled."""

    def equalize(self, images: tf.Tensor) -> tf.Tensor:
        """Histogram equalization of each channel of each image rounded to ``uint8``, by
        OpenCV's ``equalizeHist`` (DALI's ``fn.equalize``, Keras' ``Equalization``): with
        ``cdf`` the cumulative histogram and ``first`` the count of the lowest value present,
        ``lut[v] = round_half_even((cdf[v] - first) * (255 / (H * W - first)))`` in
        ``float32``; a channel with one value keeps it. (PIL and torchvision use another table;
        see NOTES.) Each value's bin is ``256 * (sample * C + channel) + value``: one histogram
        and one table per channel of each sample, in the images' own layout. Written here, not
        once: OpenCV's engine calls ``equalizeHist`` itself."""
        shape = tf.shape(images)
        n, h, w, c = shape[0], shape[1], shape[2], shape[3]
        rows = n * c
        channel = tf.reshape(256 * tf.range(rows), [n, 1, 1, c])
        ids = tf.cast(self.quantized(images), tf.int32) + channel
        hist = tf.math.unsorted_segment_sum(tf.ones_like(ids), ids, rows * 256)
        hist = tf.reshape(hist, [rows, 256])
        cdf = tf.cumsum(hist, axis=1)
        first = tf.reduce_min(tf.where(hist > 0, cdf, h * w), axis=1, keepdims=True)
        span = h * w - first
        scale = 255.0 / tf.cast(tf.maximum(span, 1), tf.float32)
        lut = tf.clip_by_value(tf.round(tf.cast(cdf - first, tf.float32) * scale), 0.0, 255.0)
        lut = tf.where(span > 0, lut, tf.range(256, dtype=tf.float32)[None, :])
        return tf.gather(tf.reshape(lut, [-1]), ids)

    def sharpness(self, images: tf.Tensor, factor: Value) -> tf.Tensor:
        """PIL's ``ImageEnhance.Sharpness``: ``smooth + factor * (x - smooth)``, clipped to
        0..255, where ``smooth`` is ``x`` correlated with ``ImageFilter.SMOOTH`` inside the
        image and ``x`` itself on the one-pixel border. 0 gives the smoothed image, 1 the
        input, > 1 sharpens. Written here, not once: OpenCV's engine filters with
        ``filter2D``."""
        h, w = tf.shape(images)[1], tf.shape(images)[2]
        taps = [
            weight / 13.0 * images[:, dy : dy + h - 2, dx : dx + w - 2]
            for dy, row in enumerate(SMOOTH_DETAIL)
            for dx, weight in enumerate(row)
        ]
        # smooth - x; 0 on the border
        detail = tf.pad(tf.add_n(taps), [[0, 0], [1, 1], [1, 1], [0, 0]])
        detail = detail[:, :h, :w]  # a side of 1 pixel is all border: no taps, padded to 2
        factor = self.xp.per_sample(factor, 4)
        return tf.clip_by_value(images + (1.0 - factor) * detail, 0.0, 255.0)

    def gaussian_blur(self, images: tf.Tensor, sigma: Value, size: int) -> tf.Tensor:
        """Correlate each image with a normalized ``size`` x ``size`` Gaussian of its own
        ``sigma`` (``size`` odd, the same for every sample; sigmas below :data:`MIN_SIGMA` act
        as it), mirroring the image at its border without repeating the edge pixel
        (``dcb|abcd``: DALI's ``reflect_101``, torchvision's ``reflect``, SciPy's ``mirror``).
        ``size`` must be smaller than twice the image's height and width. Written here, not
        once: OpenCV's engine filters with ``sepFilter2D``."""
        if size < 1 or size % 2 == 0:
            raise ValueError(f"gaussian_blur needs an odd kernel size, got {size}")
        radius = size // 2
        offsets = tf.range(-radius, radius + 1, dtype=tf.float32)[None, :]
        s = tf.maximum(tf.reshape(tf.cast(sigma, tf.float32), [-1, 1]), MIN_SIGMA)
        weights = tf.exp(-0.5 * tf.square(offsets / s))
        weights = weights / tf.reduce_sum(weights, axis=1, keepdims=True)  # (N or 1, size)
        padded = tf.pad(images, [[0, 0], [radius, radius], [radius, radius], [0, 0]], "REFLECT")
        h, w = tf.shape(images)[1], tf.shape(images)[2]
        taps = [self.xp.per_sample(weights[:, k], 4) for k in range(size)]
        rows = tf.add_n([taps[k] * padded[:, k : k + h] for k in range(size)])
        return tf.add_n([taps[k] * rows[:, :, k : k + w] for k in range(size)])

    def keras_saturation(
        self, images: tf.Tensor, factor: Value, low: float, high: float
    ) -> tf.Tensor:
        """Keras' ``RandomSaturation``: in HSV (``tf.image.rgb_to_hsv`` of the 0..255 values),
        ``S' = clip(factor * S, low, high)``, back to RGB, clipped to 0..255. Written here, not
        once: TensorFlow's HSV conversion is Keras' own."""
        hsv = tf.image.rgb_to_hsv(images)
        s = tf.clip_by_value(hsv[..., 1] * self.xp.per_sample(factor, 3), low, high)
        rgb = tf.image.hsv_to_rgb(tf.stack([hsv[..., 0], s, hsv[..., 2]], -1))
        return tf.clip_by_value(rgb, 0.0, 255.0)

    def keras_hue(self, images: tf.Tensor, shift: Value) -> tf.Tensor:
        """Keras' ``RandomHue``: in HSV, ``H' = H + shift`` turns (``shift`` within [-0.5,
        0.5]), minus one turn above 1 and plus one below 0, back to RGB, clipped to 0..255.
        Written here, not once: TensorFlow's HSV conversion is Keras' own."""
        hsv = tf.image.rgb_to_hsv(images)
        h = hsv[..., 0] + self.xp.per_sample(shift, 3)
        h = tf.where(h > 1.0, h - 1.0, h)
        h = tf.where(h < 0.0, h + 1.0, h)
        rgb = tf.image.hsv_to_rgb(tf.stack([h, hsv[..., 1], hsv[..., 2]], -1))
        return tf.clip_by_value(rgb, 0.0, 255.0)

    def _rolled(self, index: tf.Tensor, cut: Value) -> tf.Tensor:
        """``(N, L)`` source indices along a mosaic axis of length ``L`` cut at ``cut``: ``i +
        cut`` for the first ``L - cut`` (the part from the cut on), then ``i - (L - cut)``."""
        cut = self.xp.per_sample(cut, 2)
        first = tf.cast(tf.shape(index)[-1], tf.float32) - cut
        return tf.cast(tf.where(index < first, index + cut, index - first), tf.int32)

    def mosaic(
        self, batch: tf.Tensor, partners: Sequence[Value], row: Value, column: Value
    ) -> tf.Tensor:
        """Four images of the batch in a 2x2 grid (Mosaic): each of ``x``, ``x[partners[0]]``,
        ``x[partners[1]]``, ``x[partners[2]]`` (``a``, ``b``, ``c``, ``d``) cut at the whole
        row ``row`` and column ``column`` (per sample), the output is ``[[a[row:, column:],
        b[row:, :column]], [c[:row, column:], d[:row, :column]]]``: its centre ``H - row`` rows
        from the top and ``W - column`` columns from the left, where the four images' corners
        meet. Images and masks alike: any batch ``(N, H, W, ...)`` of any dtype (DALI: HWC
        samples). Written here, not once: selects and gathers that XLA fuses, where NumPy
        copies the four quarters."""
        b, c, d = (tf.gather(batch, tf.cast(p, tf.int32)) for p in partners)
        shape, rank = tf.shape(batch), batch.shape.rank
        rows = tf.range(shape[1], dtype=tf.float32)[None, :]
        cols = tf.range(shape[2], dtype=tf.float32)[None, :]
        # the grid laid out where each image's pixels are, then each axis rolled to the centre
        lower = (rows >= self.xp.per_sample(row, 2))[:, :, None]
        righter = (cols >= self.xp.per_sample(column, 2))[:, None, :]
        grid = tf.where(
            self.trailing(lower & righter, rank),
            batch,
            tf.where(
                self.trailing(lower & ~righter, rank),
                b,
                tf.where(self.trailing(righter & ~lower, rank), c, d),
            ),
        )
        grid = tf.gather(grid, self._rolled(rows, row), axis=1, batch_dims=1)
        return tf.gather(grid, self._rolled(cols, column), axis=2, batch_dims=1)

    def select(self, flag: Value, op: Op, images: tf.Tensor) -> tf.Tensor:
        """Per sample, ``op(images)`` where ``flag`` (0 or 1) is 1, else ``images``: on a
        batch, ``op`` runs for every sample and XLA fuses the choice into it; within
        :meth:`each_sample`, it runs only where chosen (``tf.cond``)."""
        return self.choose([(flag, op)], images)

    def choose(self, options: Sequence[tuple[Value, Op]], images: tf.Tensor) -> tf.Tensor:
        """Per sample, ``op(images)`` for the option ``(flag, op)`` whose flag (0 or 1, at most
        one 1) is 1, else ``images``. On a batch every ``op`` runs for every sample and XLA
        fuses the choices into them; within :meth:`each_sample` only the chosen one runs:
        nested ``tf.cond``s on the chosen option's number, the outer one asking whether any was
        chosen (an untaken ``tf.cond`` still cost about 15 us per 224 x 224 image here, so one
        per option cost more than the cheap operations themselves)."""
        xp = self.xp
        if TF_ARRAYS.sample.get() is None:
            for flag, op in options:
                chosen = xp.per_sample(flag, images.shape.rank) > 0.5
                images = tf.where(chosen, op(images), images)
            return images
        if not options:
            return images
        picked = [
            (k + 1.0) * tf.reshape(tf.cast(xp.of_samples(flag), tf.float32), [])
            for k, (flag, _) in enumerate(options)
        ]
        index = tf.cast(tf.round(tf.add_n(picked)), tf.int32)

        def from_option(k: int) -> tf.Tensor:
            """The result for a sample that chose option ``k`` or a later one."""
            op = options[k][1]
            if k == len(options) - 1:
                return op(images)
            return tf.cond(tf.equal(index, k + 1), lambda: op(images), lambda: from_option(k + 1))

        return tf.cond(tf.equal(index, 0), lambda: images, lambda: from_option(0))

    def each_sample(self, op: Op, images: tf.Tensor) -> tf.Tensor:
        """``op(images)`` computed one sample at a time (``tf.map_fn``: a loop under XLA), each
        per-sample parameter that sample's, and :meth:`select` computing only the operation
        the sample chose: for stages that pick among many operations per sample (AugMix's
        chains), which on the whole batch would compute every operation for every sample."""

        def one(i: tf.Tensor) -> tf.Tensor:
            token = TF_ARRAYS.sample.set(i)
            try:
                return op(images[i][None])[0]
            finally:
                TF_ARRAYS.sample.reset(token)

        return tf.map_fn(one, tf.range(tf.shape(images)[0]), fn_output_signature=images.dtype)


KERNELS = TfKernels(TF_ARRAYS)
"""The TF engine's :class:`~daliaug.kernels.Kernels`."""
