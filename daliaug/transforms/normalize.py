"""Normalize: the last step, folded into the output stage."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from daliaug.fields import STRICT
from daliaug.transforms.base import Transform

Channels = float | list[float]
Positive = Annotated[float, Field(gt=0)]


class Normalization(BaseModel):
    """The fields of a normalization: ``(x - mean) / std`` or ``x * rescale``; ``std`` and
    ``rescale`` above 0, all of them finite."""

    model_config = STRICT

    mean: Channels | None = None
    std: Positive | list[Positive] | None = None
    rescale: Positive | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Normalization:
        if self.rescale is not None and (self.mean is not None or self.std is not None):
            raise ValueError("give either 'rescale' or 'mean'/'std', not both")
        return self

    @property
    def normalizes(self) -> bool:
        return any(v is not None for v in (self.mean, self.std, self.rescale))


class Normalize(Normalization, Transform):
    """``out = (in - mean) / std`` on the 0..255 scale, or ``out = in * rescale``.

    Accepted only as the last transform; the config moves it into ``output`` (where it can be
    written directly), so it runs fused with the dtype and layout conversion.
    """

    type: Literal["normalize"] = "normalize"

    @model_validator(mode="after")
    def _given(self) -> Normalize:
        if not self.normalizes:
            raise ValueError("give 'rescale' or 'mean' and/or 'std'")
        return self
