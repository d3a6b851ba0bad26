"""Colour degeneration: blend each image towards its greyscale version (Keras'
``RandomColorDegeneration``)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from daliaug.algebra import ColourMatrix, Math, Random
from daliaug.transforms.base import ColourTransform, Params, SymmetricRange
from daliaug.transforms.grayscale import towards_grey


def _within_one(r: tuple[float, float]) -> tuple[float, float]:
    if r[0] < -1 or r[1] > 1:
        raise ValueError(f"factors must lie within [-1, 1], got {list(r)}")
    return r


class ColorDegeneration(ColourTransform):
    """``out = in + factor * (grey(in) - in)`` with ``factor ~ U(factor)`` and Keras' grey
    ``0.2989 R + 0.587 G + 0.114 B``: 0 keeps the image, 1 makes it grey, negative factors
    push colours away from grey. As in Keras' code, a single number ``f`` means ``[-f, f]``
    (its docstring says ``[0, f]``); factors lie within ``[-1, 1]``."""

    type: Literal["color_degeneration"] = "color_degeneration"
    factor: Annotated[SymmetricRange, AfterValidator(_within_one)]

    params: ClassVar[tuple[str, ...]] = ("factor",)
    needs_rgb: ClassVar[bool] = True

    def draw(self, rng: Random) -> Params:
        return {"factor": rng.uniform(*self.factor)}

    def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
        return towards_grey(p["factor"])
