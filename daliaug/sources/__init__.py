"""Data sources: each module defines one ``source.type`` and how to list its samples (``base``
holds what they share, ``listing`` finds image files in folders, ``prepare`` checks a source's
samples against the whole config)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Union

from pydantic import Field

from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.sample_set import SampleSet

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "listing", "prepare"):
        importlib.import_module(f"{__name__}.{_module.name}")

AnySource = Annotated[Union[tuple(SourceConfig.registry.values())], Field(discriminator="type")]  # noqa: UP007


__all__ = ["AnySource", "SampleSet", "Samples", "SourceConfig"]
