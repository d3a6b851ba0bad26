"""The OpenCV engine's graph of one batch: from the feed protocol's batch (the samples'
indices, ``warp``, labels, moved boxes, weights) to finished ``(images, targets[, weights])``
NumPy batches, the DALI graph's and the TF engine's twin.

Each sample is read, decoded, cut to its window, warped, recoloured and clipped on a thread
of a pool sized from the cores this process may use (OpenCV and libjpeg-turbo release the GIL);
without pixel or batch stages the same thread writes it, normalized, into its row of the
batch's output array, allocated once per batch. With stages the samples land in a float32 batch
that the stages (:mod:`daliaug.engines.opencv.pixels`) then take whole. A batch is submitted
before the previous one is handed on, so the pool works while the consumer does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daliaug.batch_layout import BatchLayout
from daliaug.config import target_column
from daliaug.engine_spec import EngineSpec
from daliaug.engines.feed import READ_ON_HOST, WarpLayout
from daliaug.engines.opencv import image
from daliaug.engines.opencv.pixels import KERNELS
from daliaug.kernels.arrays import NUMPY
from daliaug.kernels.targets import label_target, mask_classes
from daliaug.sources.base import Samples
from daliaug.sources.segmentation import MaskTargets
from daliaug.transforms.base import fill_value

RESIZES = False
"""The engine takes warp matrices for every plan (one ``cv2.warpAffine`` per sample)."""

Batch = tuple[np.ndarray, ...]


def threads(spec: EngineSpec) -> int:
    """The pool's threads: ``num_threads``, else the cores this process may use."""
    if spec.num_threads is not None:
        return int(spec.num_threads)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class Graph:
    """The config's computation of a batch of ``samples`` (see the module docstring)."""

    spec: EngineSpec
    samples: Samples
    layout: WarpLayout
    batch: BatchLayout
    pool: ThreadPoolExecutor = field(init=False)
    _scratch: threading.local = field(init=False, default_factory=threading.local)

    def __post_init__(self) -> None:
        self.pool = ThreadPoolExecutor(threads(self.spec), thread_name_prefix="daliaug-cv")
        plan = self.spec.plan
        self.staged = bool(plan.stage_keys)
        self.fill = fill_value(self.spec.fill)
        self.nearest = self.spec.interpolation == "nearest"
        self.cut = self.spec.fill_edge == "cut"
        self.norm = image.normalizer(self.spec)
        self.unmoved = not plan.warps and "image" in self.samples.columns
        self.masks = self.batch.target == "masks"
        masks = self.spec.masks
        self.mask_fill = float(masks.mask_fill) if self.masks and masks is not None else 0.0

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, batch: dict[str, np.ndarray]) -> Callable[[], Batch]:
        """Start computing ``batch`` on the pool; the returned call waits and finishes it."""
        n = len(batch["index"])
        h, w = self.spec.image_size
        c = self.spec.channels
        floats = np.empty((n, h, w, c), np.float32) if self.staged else None
        out = image.output_array(self.spec, n)
        masks = (
            np.empty((n, h, w, 3 if self._colour_masks else 1), np.float32) if self.masks else None
        )
        futures: list[Future[None]] = [
            self.pool.submit(self._sample, batch, i, floats, out, masks) for i in range(n)
        ]

        def finished() -> Batch:
            for f in futures:
                f.result()
            return self._finish(batch, floats, out, masks)

        return finished

    @property
    def _colour_masks(self) -> bool:
        return self.spec.masks is not None and self.spec.masks.colour_coded

    def _encoded(
        self, batch: dict[str, np.ndarray], i: int, column: str = "path"
    ) -> bytes | np.ndarray:
        """Sample ``i``'s encoded image (``path``) or mask (``mask_path``): the bytes the host
        read (shard members, :data:`~daliaug.engines.feed.READ_ON_HOST`), else its file's."""
        read = READ_ON_HOST[column]
        if read in batch:
            return batch[read][i]
        with open(self.samples.files[column][int(batch["index"][i])], "rb") as f:
            return f.read()

    def _buffer(self) -> np.ndarray:
        """This thread's float32 image of the output's size (samples finished one at a time)."""
        buffer = getattr(self._scratch, "image", None)
        if buffer is None:
            h, w = self.spec.image_size
            buffer = self._scratch.image = np.empty((h, w, self.spec.channels), np.float32)
        return buffer

    def _sample(
        self,
        batch: dict[str, np.ndarray],
        i: int,
        floats: np.ndarray | None,
        out: np.ndarray,
        masks: np.ndarray | None,
    ) -> None:
        spec = self.spec
        inputs = self.layout.unpack(batch["warp"][i], np.reshape)
        if "image" in self.samples.columns:
            source = self.samples.columns["image"][int(batch["index"][i])]
        else:
            source = image.window(image.decode(self._encoded(batch, i), spec.channels), inputs)
        target = self._buffer() if floats is None else floats[i]
        if self.unmoved and source.shape[:2] == tuple(spec.image_size):
            target[...] = source
        else:
            size = spec.image_size
            image.warp(source, inputs["matrix"], size, self.fill, self.nearest, self.cut, target)
        image.recolour(target, inputs, spec.channels)
        if floats is None:
            image.to_output(target, self.norm, spec.output.layout, out[i])
        if masks is not None:
            mask = image.decode_mask(self._encoded(batch, i, "mask_path"), spec)
            size = spec.image_size
            image.warp(mask, inputs["mask_matrix"], size, self.mask_fill, True, out=masks[i])

    def _finish(
        self,
        batch: dict[str, np.ndarray],
        floats: np.ndarray | None,
        out: np.ndarray,
        masks: np.ndarray | None,
    ) -> Batch:
        spec, plan = self.spec, self.spec.plan
        column = _column(batch["warp"], self.layout)
        if floats is not None:
            floats = plan.pixels(floats, column, KERNELS)
            floats = plan.batch_images(floats, column, KERNELS)
            np.clip(floats, 0.0, 255.0, out=floats)
            layout = spec.output.layout
            for i in range(len(floats)):
                image.to_output(floats[i], self.norm, layout, out[i])
        named: dict[str, np.ndarray] = {"images": out}
        target = self.batch.target
        if target == "boxes":  # moved on the host (daliaug.detection): passed through
            named |= {name: batch[name] for name in self.batch.boxes}
        elif target == "masks":
            assert masks is not None
            named["targets"] = self._masks(masks, column)
        elif target == "images":
            named["targets"] = out
        elif target == "labels":
            label = batch.get(target_column(spec.label_mode))
            count = self.samples.num_classes
            targets = label_target(label, spec.label_mode, count, NUMPY)
            if plan.batch_stages:  # soft labels
                targets = plan.batch_targets(targets, column, KERNELS, masks=False)
            named["targets"] = targets
        if self.batch.weights:
            named["weights"] = batch["weight"]
        return self.batch.flat(named)

    def _masks(self, masks: np.ndarray, column: Callable[[Any], Any]) -> np.ndarray:
        """Warped masks through the pixel stages that move them, as classes, then the batch
        stages' cuts (in the output layout, as the TF engine's ``cut_masks``)."""
        plan = self.spec.plan
        if plan.moves_masks:
            masks = plan.mask_pixels(masks, column, KERNELS, self.mask_fill)
        source = self.spec.masks
        assert isinstance(source, MaskTargets)
        classes = mask_classes(masks, source, self.spec.output.layout, NUMPY)
        if not plan.batch_stages:
            return classes
        first = classes.ndim == 4 and self.spec.output.layout == "NCHW"
        if first:
            classes = classes.transpose(0, 2, 3, 1)
        classes = plan.batch_targets(classes, column, KERNELS, masks=True)
        return classes.transpose(0, 3, 1, 2) if first else classes


def _column(warp: np.ndarray, layout: WarpLayout) -> Callable[[Any], Any]:
    """The per-sample values of the plan's stage parameters (:meth:`Plan.pixels`)."""
    if "stages" not in layout.names:
        return lambda k: None
    stages = layout.unpack(warp, np.reshape, batched=True)["stages"]
    return lambda k: stages[:, k]
