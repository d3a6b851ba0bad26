"""The transform catalogue: every module in this package defines one transform.

Importing this package registers them all; :data:`AnyTransform` is the tagged union the
config validates ``transforms`` entries against (tag: ``type``).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Union

from pydantic import Field

from daliaug.transforms.base import (
    ColourTransform,
    CropTransform,
    GeometricTransform,
    Transform,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

TRANSFORMS: dict[str, type[Transform]] = dict(sorted(Transform.registry.items()))
AnyTransform = Annotated[Union[tuple(TRANSFORMS.values())], Field(discriminator="type")]  # noqa: UP007

__all__ = [
    "TRANSFORMS",
    "AnyTransform",
    "ColourTransform",
    "CropTransform",
    "GeometricTransform",
    "Transform",
]
