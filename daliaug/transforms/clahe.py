"""CLAHE: contrast limited adaptive histogram equalization (Keras'), for a random share of the
samples."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from daliaug.algebra import Random
from daliaug.kernels import Kernels
from daliaug.transforms.base import Params, PixelTransform, Probability

MAX_TILES = 64
"""The most tiles along a side."""
NOT_IN_DALI = (
    "DALI's fn.clahe is OpenCV's CLAHE, whose tables do not start at each tile's lowest value, "
    "and on the GPU equalizes an RGB image's luminance only; Keras equalizes each channel"
)

Tiles = Annotated[int, Field(ge=1, le=MAX_TILES)]


class Clahe(PixelTransform):
    """Keras' ``ContrastLimitedAdaptiveHistogramEqualization`` on each channel when ``clahe ~
    Bernoulli(probability)`` is 1, else ``out = in``: the image cut into a ``tile_grid_size``
    (rows, columns) grid of tiles (padded by mirroring at the bottom and right to whole
    tiles), each tile's 256-bin histogram of the values truncated to whole numbers cut at
    ``clip_limit * tile area / 256`` (0: no cut) with the cut counts spread evenly, its
    table ``(cdf - cdf[0]) * 255 / (area - cdf[0])``, and each pixel looked up in the four
    nearest tiles' tables, blended bilinearly (not rounded). Keras applies it always, at
    inference too (``probability`` 1). DALI's ``fn.clahe`` computes OpenCV's tables instead,
    so the TensorFlow engine runs it (``backend: auto`` picks it, with a ``BackendWarning``
    where DALI would have run).

    Example: ``{"type": "clahe", "clip_limit": 4.0, "tile_grid_size": [8, 8]}``."""

    type: Literal["clahe"] = "clahe"
    tile_grid_size: tuple[Tiles, Tiles] = (8, 8)
    clip_limit: Annotated[float, Field(ge=0.0, le=256.0)] = 4.0
    probability: Probability = 1.0

    params: ClassVar[tuple[str, ...]] = ("clahe",)
    dali_lacks: ClassVar[dict[str, str]] = {"cpu": NOT_IN_DALI, "gpu": NOT_IN_DALI}

    def draw(self, rng: Random) -> Params:
        return {"clahe": rng.bernoulli(self.probability)}

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if self.tile_grid_size[0] > size[0] or self.tile_grid_size[1] > size[1]:
            return [
                f"tile_grid_size: {list(self.tile_grid_size)} tiles do not fit the output's "
                f"{list(size)} pixels"
            ]
        return []

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        equalize = partial(ops.clahe, tiles=self.tile_grid_size, clip_limit=self.clip_limit)
        return ops.select(p["clahe"], equalize, images)
