"""Mosaic: four images of the batch in a 2x2 grid around a random centre, their labels weighed
by the area each shows, their boxes cut to their quadrants (the YOLO augmentation)."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import AfterValidator

from daliaug.algebra import Math, Random, add, div, mul, sub
from daliaug.boxes import PointMap, Rules, Targets
from daliaug.fields import bounded
from daliaug.kernels import Kernels
from daliaug.transforms.base import BatchTransform, Effects, Params, Probability, ordered

CenterRange = Annotated[
    tuple[float, float], AfterValidator(ordered), bounded(0.0, 1.0, "fractions of the side")
]
PARTNERS = ("top_right", "bottom_left", "bottom_right")
"""The parameters drawn for the three partners, in the kernel's order."""
QUADRANTS = ("top_left", *PARTNERS)
"""The four quadrants: the sample itself, then its partners."""


class Mosaic(BatchTransform):
    """When ``mosaic ~ Bernoulli(probability)`` is 1, the output is four images of the batch
    around the centre ``(cy, cx) = (round(y * H), round(x * W))`` whole pixels, ``y, x ~
    U(center_range)`` per sample: the sample itself above left of the centre, placed so that
    its bottom-right corner sits at the centre, a partner above right (its bottom-left corner
    there), one below left (its top-right corner there) and one below right (its top-left
    corner there); each is the image as the plan made it (the fused warp's output size, so no
    resizing here), and what falls outside the output is cut. The three partners are three
    independent random permutations of the batch's real samples (padding is never a partner;
    a sample may meet itself). Labels become the four images' labels weighed by the share of
    the output each shows (``label_mode`` categorical or binary); segmentation masks get the
    same grid; boxes move with their image, are cut to its quadrant and kept by ``min_area``
    and ``min_visibility``; keypoints outside the quadrant become invisible. When
    ``mosaic`` is 0 the sample is left as it is.

    This is Ultralytics' YOLO mosaic (``load_mosaic``, ``Mosaic._mosaic4``) as the output
    window its ``random_perspective`` then takes at scale 1: there the centre is uniform over
    the output, ``center_range: [0, 1]`` (the default keeps each quadrant at least a quarter of
    a side), each image keeps its aspect (grey where it does not reach; here each is the
    plan's output), and the sample's own quadrant is shuffled (here every image of the batch
    still lands in each quadrant, as some sample's partner).

    Example: ``{"type": "mosaic", "center_range": [0.25, 0.75], "probability": 1.0}``."""

    type: Literal["mosaic"] = "mosaic"
    center_range: CenterRange = (0.25, 0.75)
    probability: Probability = 1.0

    params: ClassVar[tuple[str, ...]] = (*PARTNERS, "mosaic", "y", "x")
    partner_params: ClassVar[tuple[str, ...]] = PARTNERS
    stage_params: ClassVar[tuple[str, ...] | None] = (
        *PARTNERS,
        "row",
        "column",
        *(f"{q}_share" for q in QUADRANTS),
    )
    effects: ClassVar[Effects] = Effects.all("follows")

    def draw(self, rng: Random) -> Params:
        return {
            **{name: rng.uniform(0.0, 1.0) for name in PARTNERS},
            "mosaic": rng.bernoulli(self.probability),
            "y": rng.uniform(*self.center_range),
            "x": rng.uniform(*self.center_range),
        }

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """Where each image is cut, ``row = H - cy`` and ``column = W - cx`` (0 when not drawn:
        the sample's own image whole), and each quadrant's share of the output."""
        height, width = float(size[0]), float(size[1])
        kept = sub(1.0, p["mosaic"])  # not drawn: the centre at the bottom-right corner
        top = m.round(add(mul(p["mosaic"], mul(p["y"], height)), mul(kept, height)))
        left = m.round(add(mul(p["mosaic"], mul(p["x"], width)), mul(kept, width)))
        row, column = sub(height, top), sub(width, left)
        area = height * width
        shares = [mul(a, b) for a in (top, row) for b in (left, column)]
        return {
            **{name: p[name] for name in PARTNERS},
            "row": row,
            "column": column,
            **{f"{q}_share": div(s, area) for q, s in zip(QUADRANTS, shares, strict=True)},
        }

    def images(self, images: Any, p: Params, ops: Kernels) -> Any:
        return ops.mosaic(images, [p[n] for n in PARTNERS], p["row"], p["column"])

    def targets(self, targets: Any, p: Params, ops: Kernels, masks: bool) -> Any:
        if masks:
            return self.images(targets, p, ops)
        return ops.blend(targets, [p[n] for n in PARTNERS], [p[f"{q}_share"] for q in QUADRANTS])

    def boxes(self, targets: Targets, p: Params, size: tuple[int, int], rules: Rules) -> Targets:
        """Each quadrant's image's targets shifted by its offset, cut to the quadrant and kept
        by ``rules``, joined in quadrant order (the sample's own first)."""
        values = self.stage(p, size, Math.of(np))
        h = np.full(len(values["row"]), size[0], np.float32)
        w = np.full(len(values["column"]), size[1], np.float32)
        top, left = h - values["row"], w - values["column"]
        zero = np.zeros_like(top)
        # per quadrant: its image's offset and its window, xyxy
        offsets = ((left - w, top - h), (left, top - h), (left - w, top), (left, top))
        windows = (
            (zero, zero, left, top),
            (left, zero, w, top),
            (zero, top, left, h),
            (left, top, w, h),
        )
        own = np.arange(len(top))
        indices = (own, *(p[name] for name in PARTNERS))
        mirrored = np.zeros(len(top), bool)
        out = None
        for index, offset, window in zip(indices, offsets, windows, strict=True):
            shift = PointMap(partial(np.add, np.stack(offset, -1)[:, None, :]), axis_aligned=True)
            moved = targets.gather(index).moved(shift, size, mirrored, rules, np.stack(window, -1))
            out = moved if out is None else out.joined(moved)
        assert out is not None
        return out
