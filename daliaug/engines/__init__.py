"""Engines: how pixels are computed. Each one runs the feed protocol's batches with its own
primitives and knows nothing of the framework the batches go to (that is :mod:`daliaug.outputs`).

An engine is a folder with the same modules (``math``: the plan's primitives, ``image``: decode,
resample, recolour, normalize and the targets, ``pixels``: the per-sample pixel stages and the
batch stages, ``pipeline``: the graph of one batch, ``verify``: its decode check) and one object
implementing :class:`Engine`. What they share sits beside them: :mod:`~daliaug.engines.feed`
(the feed protocol and its host side) and :mod:`~daliaug.engines.select` (which engine and
device a config gets: :func:`~daliaug.engines.select.choose`); the full decode check that
calls their ``undecodable`` is :mod:`daliaug.sources.checks`. Importing this package imports
neither TensorFlow nor DALI.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, ClassVar

from daliaug.engine_names import ENGINE_NAMES, Device, EngineName

if TYPE_CHECKING:
    from daliaug.config import Config

NAMES = ENGINE_NAMES


class Engine(ABC):
    """What an engine is beyond its graph: its name, the device it runs on, what it cannot run
    and its decoder's check. Everything outside this package asks the engine object these,
    never its name (the bridges out of an engine are :mod:`daliaug.outputs.bridges`)."""

    name: ClassVar[EngineName]
    title: ClassVar[str]
    """How reports and messages name it."""

    def label(self, device: Device) -> str:
        """How a report names this engine on ``device``."""
        return self.title

    def device(self, requested: str, device_id: int = 0) -> Device:
        """Where it runs when ``requested`` (a ``backend`` value or ``--device``) asks: a host
        engine on the CPU whatever was asked."""
        return "cpu"

    def lacks(self, config: Config, device: Device) -> list[str]:
        """The transforms of ``config`` it cannot run on ``device``, each named by its field."""
        return []

    @abstractmethod
    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        """The files of ``paths`` this engine cannot decode on ``device`` (GPU ``device_id``
        for ``gpu``), with the reason (the full check, :mod:`daliaug.sources.checks`)."""


def undecodable_in_threads(
    reason: Callable[[str], str | None], paths: Sequence[str]
) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` for which ``reason`` (a decoder that releases the GIL, run in a
    thread pool) gives why they do not decode."""
    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        for path, why in zip(paths, pool.map(reason, paths), strict=True):
            if why is not None:
                yield path, why


def engine(name: str) -> Engine:
    """The engine called ``name`` (imports it, and with it its framework)."""
    if name not in NAMES:
        raise ValueError(f"no engine {name!r}; engines: {', '.join(NAMES)}")
    return importlib.import_module(f"daliaug.engines.{name}").ENGINE
