"""Check a DALI graph against DALI's device rules without a GPU.

Building a pipeline (``Pipeline.build``) needs CUDA; defining its graph in Python does not. So
the GPU graph is defined (``Pipeline._build_graph``, which applies DALI's own definition-time
checks) and its operators are walked:

* every operator is registered for the device it runs on (``nvidia.dali.backend``'s
  ``RegisteredCPUOps``, ``RegisteredMixedOps``, ``RegisteredGPUOps``);
* every argument input (a per-sample argument given as a ``DataNode``) is a CPU node;
* every input of a ``mixed`` or CPU operator is a CPU node;
* every output of the pipeline is on the GPU.

This reads DALI's private graph API (``Pipeline._build_graph``, ``Pipeline._ops``, each
operator's ``_op.device`` and ``_op.schema``), which may change between DALI releases; it is
pinned to :data:`DALI_VERSION`, the release ``pyproject.toml`` pins (a test keeps the two
equal), and refuses to run on another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import nvidia.dali
from nvidia.dali import backend
from nvidia.dali.pipeline import Pipeline

from daliaug.errors import BackendError, first_line

DALI_VERSION = "2.4"
"""The DALI release whose private graph API this module reads."""


@dataclass(frozen=True)
class Problem:
    """One broken rule: the operator (or output) and what is wrong."""

    where: str
    rule: str

    def __str__(self) -> str:
        return f"{self.where}: {self.rule}"


def _registered() -> dict[str, set[str]]:
    """The operators DALI has for each device, its internal ones included (read after a graph
    is built: DALI registers them as their modules load)."""
    return {
        "cpu": set(backend.RegisteredCPUOps(True)),
        "mixed": set(backend.RegisteredMixedOps(True)),
        "gpu": set(backend.RegisteredGPUOps(True)),
    }


def graph_problems(define: Callable[[], Pipeline]) -> list[Problem]:
    """What breaks DALI's device rules in the graph of the pipeline ``define`` returns (meant
    to run on the GPU); an exception from DALI's own checks while the graph is defined is
    reported as a problem too."""
    if not nvidia.dali.__version__.startswith(f"{DALI_VERSION}."):
        raise BackendError(
            f"the graph check reads DALI {DALI_VERSION}'s private graph API; this is DALI "
            f"{nvidia.dali.__version__}"
        )
    try:
        pipeline = define()
        pipeline._build_graph()
    except Exception as e:  # DALI raises several types for a graph it refuses
        return [Problem("graph definition", f"{type(e).__name__}: {first_line(e)}")]
    registered = _registered()
    problems = []
    for op in pipeline._ops:
        device, name = op._op.device, op._op.schema.Name()
        where = f"{device} operator {name} ({op.name})"
        spec = op.spec
        if name not in registered[device]:
            problems.append(Problem(where, f"DALI has no {device} implementation"))
        for i in range(spec.NumInput()):
            argument = i >= spec.NumRegularInput()
            if spec.InputDevice(i) == "cpu" or not (argument or device in ("cpu", "mixed")):
                continue
            kind = "argument input" if argument else f"input of a {device} operator"
            problems.append(Problem(where, f"{kind} {spec.InputName(i)} is a GPU node"))
    for i, output in enumerate(pipeline._graph_outputs):
        if output.device != "gpu":
            problems.append(Problem(f"output {i} ({output.name})", "is on the CPU"))
    return problems
