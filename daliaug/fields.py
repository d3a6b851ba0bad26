"""Field types and limits shared by the config models: strict whole numbers, sizes, class names.

Every config model refuses NaN and infinities in its float fields (:data:`STRICT`), and every
count and size is a whole number of a bounded range (:func:`whole`): a bad value is a
validation error naming its field, never a failure (or a crash inside DALI or TensorFlow) at
the first batch.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""The model config of every config model: unknown keys, changes after validation, NaN and
infinite floats are all refused."""

MAX_SIDE = 16384
"""The longest image side, in pixels, that a size field takes (the side of the largest image
the sources accept, 2**28 pixels)."""
MAX_BATCH = 65536
MAX_THREADS = 1024
MAX_PREFETCH = 64
MAX_DEVICE = 255
MAX_SHARDS = 65536
MAX_CLASSES = 2**24
MAX_SEED = 2**63 - 1
MAX_BOXES = 65536
"""DALI's seeds are 64-bit signed integers; TensorFlow's stateless seeds take any of them."""


def whole_number(v: Any) -> Any:
    """Integers (NumPy's too) only: not ``True``, ``"32"`` or ``32.0``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"must be a whole number, not a {type(v).__name__}")
    return int(v)


def is_number(v: Any) -> bool:
    """Whether ``v`` is an int or a float (NumPy's too), not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def as_float(v: Any) -> float:
    """``float(v)``; a :class:`ValueError` (which names the field) for an integer beyond
    floats, not Python's ``OverflowError``."""
    try:
        return float(v)
    except OverflowError:
        raise ValueError("is too large for a floating-point number") from None


def real_number(v: Any) -> Any:
    """Numbers only (NumPy's too): not ``True`` or ``"0.5"``."""
    if not is_number(v):
        raise ValueError(f"must be a number, not a {type(v).__name__}")
    return as_float(v)


Share = Annotated[float, Field(ge=0.0, le=1.0), BeforeValidator(real_number)]
"""A fraction of a whole, from 0 to 1."""


NumberOrRange = float | tuple[float, float]
"""What a range field takes in a config (its JSON Schema): one number, which the field reads as
a range (``[-a, a]``, ``[0, a]``, ...), or ``[low, high]``."""


def whole(ge: int, le: int) -> Any:
    """The annotated type of a whole number from ``ge`` to ``le``."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(whole_number)]


def _square(v: Any) -> Any:
    """A single whole number ``n`` means ``[n, n]``."""
    if isinstance(v, (bool, np.bool_, str, float, np.floating)):
        raise ValueError(
            f"must be a whole number of pixels or [height, width], not a {type(v).__name__}"
        )
    return (v, v) if isinstance(v, (int, np.integer)) else v


BatchSize = whole(1, MAX_BATCH)
Threads = whole(1, MAX_THREADS)
Prefetch = whole(1, MAX_PREFETCH)
DeviceId = whole(0, MAX_DEVICE)
Seed = whole(0, MAX_SEED)
ShardId = whole(0, MAX_SHARDS - 1)
ShardCount = whole(1, MAX_SHARDS)
ClassCount = whole(1, MAX_CLASSES)
MaskClassCount = whole(1, 255)
"""Classes of 8-bit index masks."""
MaskValue = whole(0, 255)
Side = whole(1, MAX_SIDE)
BoxCount = whole(1, MAX_BOXES)
Pixels = Annotated[float, Field(ge=0.0, le=float(MAX_SIDE) ** 2), BeforeValidator(real_number)]
"""An area in pixels."""
Size = Annotated[
    tuple[Side, Side], BeforeValidator(_square, json_schema_input_type=Side | tuple[Side, Side])
]
"""``[height, width]`` in pixels (each 1 to :data:`MAX_SIDE`); a single integer means a
square."""


def _distinct(names: list[str]) -> list[str]:
    if not names:
        raise ValueError("lists no class; give at least one name, or leave class_names out")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"names each class once; repeated: {repeated}")
    return names


ClassNames = Annotated[list[str], AfterValidator(_distinct)]
"""A non-empty list of distinct class names (index = position)."""


@dataclasses.dataclass(frozen=True)
class Bounded(AfterValidator):
    """An after-validator whose range values lie within ``[low, high]``, and which says so in
    the config's JSON Schema: each value of the range's list form gets that ``minimum`` and
    ``maximum`` (a single number is read differently by each field: ``[-a, a]``, ``[0, a]``)."""

    low: float = -math.inf
    high: float = math.inf

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        shown = handler.resolve_ref_schema(handler(schema))
        for form in shown.get("anyOf", [shown]):
            items = form.get("prefixItems", [form["items"]] if "items" in form else [])
            for item in items:
                item.update(minimum=self.low, maximum=self.high)
        return shown


def bounded(low: float, high: float, what: str) -> Bounded:
    """A check that every value of a range lies within ``[low, high]``."""

    def check(r: tuple[float, ...]) -> tuple[float, ...]:
        if r and (min(r) < low or max(r) > high):
            raise ValueError(f"{what} must lie within [{low:g}, {high:g}], got {list(r)}")
        return r

    return Bounded(check, low, high)


PathOrUrl = TypeVar("PathOrUrl", Path, str)


def _no_nul(path: PathOrUrl) -> PathOrUrl:
    if "\0" in str(path):
        raise ValueError(f"a path cannot hold a NUL character, got {str(path)!r}")
    return path


FilePath = Annotated[Path, AfterValidator(_no_nul)]
"""A file or folder path (``~`` is expanded where it is used)."""
S3Url = Annotated[str, Field(pattern=r"^s3://[^/]+"), AfterValidator(_no_nul)]
"""An ``s3://bucket/key`` object or ``s3://bucket/prefix`` (see :mod:`daliaug.sources.storage`)."""
Location = S3Url | FilePath
"""A local path or an ``s3://`` URL."""


LIBRARY_INTERPOLATIONS = {"bilinear": "linear", "nearest": "nearest"}
"""The interpolations Keras and torchvision name that daliaug's warp samples, as the config's
``interpolation`` names them."""


def warp_interpolation(name: str, who: str, error: type[Exception]) -> str:
    """The config's ``interpolation`` for a library's ``name``; ``error`` naming ``who`` (a layer
    or transform) for one daliaug's warp does not sample."""
    if name not in LIBRARY_INTERPOLATIONS:
        raise error(
            f"{who}: interpolation={name!r}; daliaug's warp samples 'bilinear' or 'nearest'"
        )
    return LIBRARY_INTERPOLATIONS[name]
