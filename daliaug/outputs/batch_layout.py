"""The one batch layout: what an engine's graph outputs, in order, and the batch every output
hands the user, made from it here and nowhere else.

Every engine's graph yields flat batches ``(images, *targets, [weights], [params])``: the
targets are one tensor (labels, masks, or the images themselves) or, with boxes, the detection
inputs it passes through (``boxes``, ``box_labels``[, ``keypoints``], moved on the host by
:mod:`daliaug.detection`). The user gets ``(images, targets[, weights])`` with detection
targets as Keras' ``bounding_boxes`` dict::

    >>> shapes = {"boxes": (8, 4), "box_labels": (8,)}  # per sample: max_boxes rows
    >>> layout = BatchLayout(boxes=shapes, targets=False, weights=False)
    >>> layout.names
    ('images', 'boxes', 'box_labels')
    >>> layout.nest(("img", "xyxy", "cls"))
    ('img', {'boxes': 'xyxy', 'labels': 'cls'})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from daliaug.detection import box_shapes

if TYPE_CHECKING:
    from daliaug.sources.sample_set import SampleSet

KERAS_NAMES = {"boxes": "boxes", "box_labels": "labels", "keypoints": "keypoints"}
"""Each detection input's key in the batches' targets (Keras' ``bounding_boxes`` dict)."""


@dataclass(frozen=True)
class BatchLayout:
    """A graph's flat outputs: ``images``, the detection inputs ``boxes`` (their per-sample
    shapes by name; none without boxes), else one ``targets`` output unless ``targets`` is
    false (``label_mode: none``), then ``weights`` if ``weights``."""

    boxes: dict[str, tuple[int, ...]]
    targets: bool
    weights: bool

    @classmethod
    def of(
        cls, samples: SampleSet, label_mode: str, max_boxes: int, weights: bool = False
    ) -> BatchLayout:
        """The layout of ``samples`` under a config's ``label_mode`` and ``max_boxes``
        (``weights``: weighted batches)."""
        boxes = box_shapes(samples, max_boxes)
        return cls(boxes, not boxes and label_mode != "none", weights)

    @property
    def names(self) -> tuple[str, ...]:
        """The flat outputs' names, in order (DALI's framework iterators' ``output_map``)."""
        targets = ("targets",) if self.targets else ()
        return ("images", *self.boxes, *targets, *(("weights",) if self.weights else ()))

    def nest(self, batch: tuple) -> tuple:
        """A flat ``(images, *outputs, *rest)`` batch as the user gets it: detection inputs
        as Keras' dict, the rest as it is. Any array type: only the structure changes."""
        if not self.boxes:
            return tuple(batch)
        count = len(self.boxes)
        images, found, rest = batch[0], batch[1 : 1 + count], batch[1 + count :]
        targets = {KERAS_NAMES[n]: t for n, t in zip(self.boxes, found, strict=True)}
        return (images, targets, *rest)
