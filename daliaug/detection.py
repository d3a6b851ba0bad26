"""Detection targets per batch, made on the host from the same parameters as the pixels.

Every sample's warp is known on the host before any engine computes its pixels, so its boxes
and keypoints go through those very maps here (:meth:`Plan.point_maps`), once, in NumPy, and reach
every engine's graph as inputs it passes through (``boxes``, ``box_labels``, ``keypoints``).
Batch stages move them too (:meth:`BatchTransform.boxes`: ``mixup`` joins each image's boxes
with its partner's), with the partners the pixels use (:meth:`BatchTransform.partners`,
deterministic on the host).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from daliaug.algebra import Canvas
from daliaug.boxes import Rules, Targets
from daliaug.engine_spec import EngineSpec
from daliaug.errors import ConfigError, DataError, DataWarning, user_stacklevel
from daliaug.sources.annotations import in_pixels
from daliaug.sources.base import Samples
from daliaug.sources.sample_set import SampleSet
from daliaug.sources.yolo_labels import LabelColumn

COLUMNS = ("boxes", "box_labels", "keypoints")
"""The source columns of detection samples (ragged: one array per sample) and the graph
inputs made of them per batch (padded)."""


def box_names(samples: SampleSet) -> tuple[str, ...]:
    """The detection inputs a graph fed ``samples`` passes through (none without boxes)."""
    if not samples.has_boxes:
        return ()
    return tuple(name for name in COLUMNS if name in samples.columns)  # type: ignore[attr-defined]


def box_shapes(samples: SampleSet, max_boxes: int) -> dict[str, tuple[int, ...]]:
    """The per-sample shape of each detection input of ``samples`` (see :func:`box_names`):
    ``max_boxes`` rows, keypoints as many per box as the samples have."""
    n = max_boxes
    shapes = {"boxes": (n, 4), "box_labels": (n,)}
    if "keypoints" in box_names(samples):
        points = samples.columns["keypoints"]  # type: ignore[attr-defined]
        if isinstance(points, LabelColumn):  # (label files read late: as the data declares)
            count = points.files.keypoints_per_box
        else:
            count = max((p.shape[1] for p in points), default=0)
        shapes["keypoints"] = (n, count, 3)
    return {name: shapes[name] for name in box_names(samples)}


class BoxTargets:
    """The detection targets of a set of samples, one batch at a time: ``boxes`` (absolute
    ``xyxy`` per sample, object array; fractions of each image, scaled by the batch's sizes,
    where :attr:`Samples.normalised <daliaug.sources.base.Samples.normalised>`), ``labels``
    and optional ``keypoints`` columns, moved by the plan of ``spec`` (``fuse_roi``: the
    graph decodes windows, as :class:`~daliaug.engines.feed.WarpLayout` says) and padded to
    ``spec.max_boxes`` in ``spec.bounding_box_format``."""

    def __init__(self, spec: EngineSpec, samples: Samples, fuse_roi: bool) -> None:
        columns = samples.columns
        self.spec = spec
        self.shapes = box_shapes(samples, spec.max_boxes)
        self.boxes = columns["boxes"]
        self.labels = columns["box_labels"]
        self.keypoints = columns.get("keypoints")
        self.normalised = samples.normalised
        """Whether the columns hold fractions of each image (scaled by the sizes of a batch)."""
        self.fuse_roi = fuse_roi
        self.files = samples.paths
        self.rules = Rules(
            spec.min_area,
            spec.min_visibility,
            samples.flip_indices if spec.flip_indices is None else spec.flip_indices,
        )
        if self.keypoints is not None:
            self._check_keypoints()

    def _check_keypoints(self) -> None:
        """Every box has as many keypoints (``K``), which ``flip_indices`` (if given) names
        (label files read late are each parsed to the ``K`` the data declares)."""
        count = self.shapes["keypoints"][1]
        listed = () if isinstance(self.keypoints, LabelColumn) else self.keypoints
        for i, points in enumerate(listed):  # type: ignore[arg-type]
            if len(points) and points.shape[1] != count:
                name = self.files[i] if self.files else f"image {i}"
                raise DataError(
                    f"keypoints: {name} has {points.shape[1]} keypoints per box where others "
                    f"have {count}; give every box the same keypoints (invisible ones with "
                    "visibility 0)"
                )
        indices = self.rules.flip_indices
        if indices is not None and (len(indices) != count or max(indices) >= count):
            raise ConfigError(
                f"flip_indices: {list(indices)} for {count} keypoints per box; give {count} "
                f"indices, each below {count} (keypoint k becomes flip_indices[k] in a mirror)"
            )

    def batch(
        self,
        index: np.ndarray,
        params: Mapping[str, np.ndarray],
        sizes: np.ndarray,
        valid: np.ndarray,
        batch: int | None = None,
    ) -> dict[str, np.ndarray]:
        """The padded targets of the samples ``index`` (consecutive batches of ``batch``
        samples, default one batch) with ``params`` (by name, the partners paired within each
        batch: :meth:`Plan.paired <daliaug.plan.Plan.paired>`, as the pixels have them),
        source ``sizes`` and real positions ``valid``."""
        plan = self.spec.plan
        boxes = list(self.boxes[index])
        keypoints = None if self.keypoints is None else list(self.keypoints[index])
        if self.normalised:
            boxes, keypoints = in_pixels(boxes, keypoints, sizes)
        targets = Targets.of(
            boxes,
            list(self.labels[index]),
            keypoints,
            self.shapes.get("keypoints", (0, 0))[1],
        )
        source = Canvas(h=sizes[:, 0].astype(np.float64), w=sizes[:, 1].astype(np.float64))
        maps, mirrored = plan.point_maps(params, source, self.fuse_roi)
        targets = targets.through(maps, plan.image_size, mirrored, self.rules)
        for i, stage in plan.batch_stages:
            own = {name: params[f"{i}.{name}"] for name in stage.params}
            size = batch or max(len(index), 1)
            for name in stage.partner_params:  # within each batch, then within all of them
                own[name] = own[name].astype(np.int64) + np.arange(len(index)) // size * size
            targets = stage.boxes(targets, own, plan.image_size, self.rules)
        self._warn_cut(targets, index, valid)
        fmt = self.spec.bounding_box_format
        return targets.padded(self.spec.max_boxes, fmt, plan.image_size)

    def _warn_cut(self, targets: Targets, index: np.ndarray, valid: np.ndarray) -> None:
        over = np.flatnonzero(valid & (targets.count > self.spec.max_boxes))
        if not len(over):
            return
        worst = over[np.argmax(targets.count[over])]
        name = self.files[index[worst]] if self.files else f"sample {index[worst]}"
        warnings.warn(
            f"{len(over)} image(s) of a batch hold more boxes than max_boxes: "
            f"{self.spec.max_boxes} after augmentation (most: {targets.count[worst]}, "
            f"{name}); each keeps its first {self.spec.max_boxes}. Raise max_boxes to keep "
            "them all",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
