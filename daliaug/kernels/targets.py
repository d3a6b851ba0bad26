"""The target encoders written once, over an array namespace
(:class:`~daliaug.kernels.arrays.Arrays`): labels as ``label_mode`` says, a batch of warped
masks as class indices or one-hot in the output's layout, and the test of which source points a
``fill_edge: cut`` keeps. The TensorFlow and OpenCV engines call them with their namespace; DALI's
graph writes its own (:mod:`daliaug.engines.dali.image`), with its operators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daliaug.kernels.arrays import Arrays
from daliaug.transforms.base import CUT_TOLERANCE

if TYPE_CHECKING:
    from daliaug.sources.segmentation import MaskTargets

COLOUR_KEY = (65536.0, 256.0, 1.0)
"""An RGB colour as one number, ``65536 r + 256 g + b`` (exact in float32 for 0..255)."""


def label_target(label: Any, label_mode: str, num_classes: int, xp: Arrays) -> Any:
    """A sample's (or a batch's) label (or ``raw`` target) as ``label_mode`` says: one-hot
    (``categorical``), one float per sample (``binary``, with a unit axis), float (``float``),
    else as it is."""
    if label_mode == "categorical":
        return xp.one_hot(label, num_classes)
    if label_mode == "binary":
        return xp.floats(label)[..., None]
    if label_mode == "float":
        return xp.floats(label)
    return label


def mask_classes(masks: Any, source: MaskTargets, layout: str, xp: Arrays) -> Any:
    """A batch of warped masks (float32 ``(N, H, W, C)``: one channel of class indices, or RGB
    for colour-coded masks) as the source says: class indices in its ``mask_dtype``, or float32
    one-hot in ``layout`` (``NHWC`` or ``NCHW``). A colour outside the source's table (the
    fill) is ``ignore_index``."""
    table = source.class_table()
    if table is None:
        index = xp.ints(masks[..., 0])
    else:
        r, g, b = COLOUR_KEY
        key = masks[..., 0] * r + masks[..., 1] * g + masks[..., 2] * b
        hits = xp.ints(key[..., None] == xp.floats(table.keys))
        classes = xp.ints(xp.arange(len(table.keys))) - source.ignore_index
        index = source.ignore_index + xp.ints(xp.sum(hits * classes, -1))
    if source.mask_output == "index":
        return xp.cast(index, source.mask_dtype)
    one_hot = xp.one_hot(index, len(source.mask_classes()))
    return one_hot if layout == "NHWC" else xp.transpose(one_hot, [0, 3, 1, 2])


def within(x: Any, y: Any, height: Any, width: Any) -> Any:
    """Whether each source point ``(x, y)`` (index coordinates) lies within the outermost pixel
    centres of a ``height`` x ``width`` image, ``[0, width - 1] x [0, height - 1]``, give or
    take :data:`~daliaug.transforms.base.CUT_TOLERANCE`: the points SciPy's ``constant`` mode
    (``fill_edge: cut``) samples; the rest take the fill."""
    low = -CUT_TOLERANCE
    inside_x = (x >= low) & (x <= width - 1 + CUT_TOLERANCE)
    return inside_x & (y >= low) & (y <= height - 1 + CUT_TOLERANCE)
