"""The one batch layout: what a batch holds, decided once from the samples and the config;
the order an engine's graph outputs it in, made from its tensors by name here and nowhere
else; and the batch every output hands the user.

A batch's target is one of :data:`Target`: the labels as ``label_mode`` says, the masks of a
segmentation source, the images themselves (``label_mode: input``), the detection inputs
(``boxes``, ``box_labels``[, ``keypoints``], moved on the host by :mod:`daliaug.detection`),
or none. Each graph fills a mapping of names (:attr:`BatchLayout.names`) to tensors and
:meth:`BatchLayout.flat` orders it: ``(images, *targets, [weights])``. The user gets
``(images, targets[, weights])`` with detection targets as Keras' ``bounding_boxes`` dict::

    >>> shapes = {"boxes": (8, 4), "box_labels": (8,)}  # per sample: max_boxes rows
    >>> layout = BatchLayout("boxes", boxes=shapes, weights=False)
    >>> layout.names
    ('images', 'boxes', 'box_labels')
    >>> layout.flat({"box_labels": "cls", "images": "img", "boxes": "xyxy"})
    ('img', 'xyxy', 'cls')
    >>> layout.nest(("img", "xyxy", "cls"))
    ('img', {'boxes': 'xyxy', 'labels': 'cls'})
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from daliaug.detection import box_shapes

if TYPE_CHECKING:
    from daliaug.sources.sample_set import SampleSet

Target = Literal["labels", "masks", "images", "boxes", "none"]
"""What a batch's targets are (see the module docstring)."""

MASK_COLUMNS = frozenset({"mask_path", "mask_encoded"})
"""The columns that make a sample set's targets masks (files, or shard members' bytes)."""

KERAS_NAMES = {"boxes": "boxes", "box_labels": "labels", "keypoints": "keypoints"}
"""Each detection input's key in the batches' targets (Keras' ``bounding_boxes`` dict)."""

T = TypeVar("T")


def target_of(columns: Collection[str], label_mode: str) -> Target:
    """The target of samples with these ``columns`` under ``label_mode``: the boxes or masks
    the samples carry, else what ``label_mode`` asks for."""
    if "boxes" in columns:
        return "boxes"
    if not MASK_COLUMNS.isdisjoint(columns):
        return "masks"
    return {"input": "images", "none": "none"}.get(label_mode, "labels")  # type: ignore[return-value]


@dataclass(frozen=True)
class BatchLayout:
    """A graph's flat outputs: ``images``, then the ``target`` (the detection inputs
    ``boxes``, by name with their per-sample shapes, else one ``targets`` output unless there
    is none), then ``weights`` if ``weights``."""

    target: Target
    boxes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    weights: bool = False

    @classmethod
    def of(
        cls, samples: SampleSet, label_mode: str, max_boxes: int, weights: bool = False
    ) -> BatchLayout:
        """The layout of ``samples`` under a config's ``label_mode`` and ``max_boxes``
        (``weights``: weighted batches)."""
        target = target_of(samples.column_names, label_mode)
        boxes = box_shapes(samples, max_boxes) if target == "boxes" else {}
        return cls(target, boxes, weights)

    @property
    def names(self) -> tuple[str, ...]:
        """The flat outputs' names, in order (DALI's framework iterators' ``output_map``)."""
        targets = () if self.target in ("boxes", "none") else ("targets",)
        return ("images", *self.boxes, *targets, *(("weights",) if self.weights else ()))

    def flat(self, named: Mapping[str, T]) -> tuple[T, ...]:
        """A graph's batch, given by name, as its flat outputs in the order of :attr:`names`
        (the one place that orders them)."""
        return tuple(named[name] for name in self.names)

    def nest(self, batch: tuple) -> tuple:
        """A flat ``(images, *outputs, *rest)`` batch as the user gets it: detection inputs
        as Keras' dict, the rest as it is. Any array type: only the structure changes."""
        if not self.boxes:
            return tuple(batch)
        count = len(self.boxes)
        images, found, rest = batch[0], batch[1 : 1 + count], batch[1 + count :]
        targets = {KERAS_NAMES[n]: t for n, t in zip(self.boxes, found, strict=True)}
        return (images, targets, *rest)
