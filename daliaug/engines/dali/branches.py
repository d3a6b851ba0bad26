"""Per-sample branches in daliaug's DALI graphs: an operation computed only for the samples
that chose it (:func:`where`), by DALI's conditional execution.

DALI runs the body of an ``if`` on a per-sample boolean ``DataNode`` for the samples where it
holds only (the batch is split by the predicate and merged back; every operator has a CPU and
a GPU implementation of both), in a pipeline made by ``pipeline_def(enable_conditionals=True)``,
which rewrites the definition's ``if`` statements with DALI's fork of AutoGraph. AutoGraph also
rewrites every function the definition calls, and some of daliaug's code does not survive that
(its ``zip(..., strict=True)``, for one), so :func:`conditional_pipeline` keeps the rewriting to
one ``if``: the definition holds that ``if`` in a nested function and calls the graph through a
function marked ``do_not_convert``, which makes the nested function the branch of the graph
being defined (:data:`_BRANCH`); :func:`where` uses it there.

Outside such a graph (a plain ``Pipeline``) :func:`where` computes the operation for every
sample and keeps it where the predicate holds: the same values, more work.
``ag_pass_through`` (see :func:`_define`) is AutoGraph's own attribute, read in DALI 2.4's
fork (``_autograph/impl/api.py``), the release ``pyproject.toml`` pins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from nvidia.dali import fn, types
from nvidia.dali.pipeline import DataNode, Pipeline, do_not_convert, pipeline_def

Op = Callable[[DataNode], DataNode]
Branch = Callable[[DataNode, Op, DataNode], DataNode]
"""``branch(predicate, op, data)``: ``op(data)`` where the boolean ``predicate`` holds, else
``data``, per sample."""

_BRANCH: ContextVar[Branch | None] = ContextVar("daliaug_dali_branch", default=None)
"""The branch of the conditional graph being defined, if one is."""


@do_not_convert
def _call(op: Op, data: DataNode) -> DataNode:
    """``op(data)``, called from the rewritten ``if`` without AutoGraph rewriting ``op``."""
    return op(data)


@contextmanager
def _branching(branch: Branch) -> Iterator[None]:
    token = _BRANCH.set(branch)
    try:
        yield
    finally:
        _BRANCH.reset(token)


@do_not_convert
def _define(graph: Callable[[], tuple[DataNode, ...]], branch: Branch) -> tuple[DataNode, ...]:
    """``graph()`` with ``branch`` as its branch, not rewritten by AutoGraph; an error it
    raises leaves as it is (AutoGraph would raise a copy whose message starts "in user code:"
    and ends with the original, unless the error carries ``ag_pass_through``)."""
    try:
        with _branching(branch):
            return graph()
    except Exception as e:
        e.ag_pass_through = True  # type: ignore[attr-defined]
        raise


def conditional_pipeline(graph: Callable[[], tuple[DataNode, ...]], **args: Any) -> Pipeline:
    """A pipeline (``Pipeline(**args)``) whose outputs ``graph()`` defines, in which
    :func:`where` runs an operation only for the samples that chose it."""

    def definition() -> tuple[DataNode, ...]:
        def branch(predicate: DataNode, op: Op, data: DataNode) -> DataNode:
            if predicate:  # rewritten by AutoGraph: DALI's per-sample `if`
                data = _call(op, data)
            return data

        return _define(graph, branch)

    return pipeline_def(definition, enable_conditionals=True, **args)()


def where(predicate: DataNode | bool, op: Op, data: DataNode) -> DataNode:
    """Per sample, ``op(data)`` where the boolean ``predicate`` (a per-sample scalar, or a
    bool) holds, else ``data``: ``op`` runs only for the samples where it holds in a
    :func:`conditional_pipeline`; elsewhere it runs for all of them and the results are
    blended (exact for finite values: a product with 0 or 1 and a sum with 0 round nothing)."""
    if not isinstance(predicate, DataNode):
        return op(data) if predicate else data
    branch = _BRANCH.get()
    if branch is not None:
        return branch(predicate, op, data)
    chosen = op(data)
    on = fn.cast(predicate, dtype=types.FLOAT)
    on = on.gpu() if chosen.device == "gpu" else on
    return chosen * on + data * (1.0 - on)
