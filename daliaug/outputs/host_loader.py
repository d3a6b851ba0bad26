"""What the engines' host loaders (``DaliLoader``, ``CvLoader``) share: where one starts
(:class:`LoaderStart`) and how one is made (:class:`HostLoader`): over a run it prepares itself
(its constructor, a front door) or over a run prepared already (:meth:`HostLoader.over`, the
bridges' loaders). Imports no framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from daliaug.config import Config, load_config
from daliaug.engine_names import Choice, Device
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions
from daliaug.prepare import prepare
from daliaug.run import Run
from daliaug.sources.sample_set import SampleSet


@dataclass(frozen=True)
class LoaderStart:
    """Where a host loader starts and what it yields beside the batches: the first epoch
    ``initial_epoch`` from its batch ``first_batch``, run as ``options`` say; ``params`` (one
    row of ``plan.param_keys`` per sample) replaces the random draws; ``return_params`` also
    yields each batch's parameter rows; ``checkpoint`` restores DALI's own reader (its
    :class:`~daliaug.resume.Readers`' checkpoint for this shard) at ``first_batch``."""

    params: np.ndarray | None = None
    return_params: bool = False
    initial_epoch: int = 0
    options: DatasetOptions = DEFAULT_OPTIONS
    first_batch: int = 0
    checkpoint: bytes | None = None


class HostLoader:
    """A config run by one engine over its samples, yielding NumPy batches epoch after epoch.

    ``config`` is anything :func:`~daliaug.config.load_config` takes; ``samples`` replaces its
    source (for example in-memory arrays); ``device`` asks for a device (default: where the
    loader's engine runs the config here, :meth:`choice`); ``params``, one row of
    :attr:`Plan.param_keys <daliaug.plan.Plan.param_keys>` per sample, replaces the random
    draws; ``return_params`` also yields the parameters each sample got; ``initial_epoch`` is
    the first epoch iterated (epochs then count up from it, as in ``make_dataset``), from its
    batch ``first_batch`` (a resumed epoch, :mod:`daliaug.resume`; column sources only)."""

    def __init__(
        self,
        config: Any,
        *,
        samples: SampleSet | None = None,
        device: Device | None = None,
        params: np.ndarray | None = None,
        return_params: bool = False,
        initial_epoch: int = 0,
        options: DatasetOptions = DEFAULT_OPTIONS,
        first_batch: int = 0,
    ) -> None:
        config = load_config(config)
        run = prepare(config, self.choice(config, device), samples=samples)
        self._open(run, LoaderStart(params, return_params, initial_epoch, options, first_batch))

    @classmethod
    def over(
        cls,
        run: Run,
        *,
        params: np.ndarray | None = None,
        initial_epoch: int = 0,
        options: DatasetOptions = DEFAULT_OPTIONS,
        first_batch: int = 0,
        checkpoint: bytes | None = None,
    ) -> Self:
        """The loader of a prepared ``run`` (its samples checked); nothing is prepared
        again."""
        loader = cls.__new__(cls)
        start = LoaderStart(params, False, initial_epoch, options, first_batch, checkpoint)
        loader._open(run, start)
        return loader

    @staticmethod
    def choice(config: Config, device: Device | None) -> Choice:
        """The engine and device this loader runs ``config`` on (``device``: as asked)."""
        raise NotImplementedError

    def _open(self, run: Run, start: LoaderStart) -> None:
        """Open the loader's pipeline over ``run`` from ``start``."""
        raise NotImplementedError
