"""The operators of daliaug's GPU graphs against DALI's own hand-written pipelines doing the
same work, counted per device without a GPU (DALI defines a GPU graph without CUDA):

    python -m bench.graph_ops --out bench/results

Each CPU operator runs once per batch on DALI's CPU stage, one after another (DALI 2.4's
executor runs one operator per stage at a time), so their count bounds the graph's CPU time
per batch on a GPU host. Workloads (b) and (c) of ``workloads.py`` on small JPEGs: daliaug's
``build_pipeline`` (what ``DaliLoader`` and DALI's JAX and PyTorch iterators run) against
``dali-rn50`` (``bench/tools/gpu_tools.py``) and DALI's ``auto_aug`` pipeline
(``bench/tools/policies.py``). Writes ``graph-ops-<date>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench import machine
from bench.tools import gpu_tools, policies
from bench.workloads import WORKLOADS, Data

DEVICES = ("cpu", "mixed", "gpu")
THEIRS: dict[str, tuple[str, Callable[..., Any]]] = {
    "b": ("DALI's rn50-style pipeline", gpu_tools.dali_rn50),
    "c": ("DALI's auto_aug RandAugment pipeline", policies.dali_pipeline),
}


class _Defined(Exception):
    """Raised instead of building: the graph is defined, its operators counted."""


def _operators(pipe: Any) -> dict[str, int]:
    """Operators per device of a defined (not built) DALI pipeline."""
    pipe._build_graph()
    found = Counter(op._op.device for op in pipe._ops)
    return {device: found[device] for device in DEVICES}


def _built(define: Callable[[], Any]) -> dict[str, int]:
    """Operators per device of the GPU graph that ``define`` builds (stopped before CUDA)."""
    from nvidia.dali.pipeline import Pipeline

    seen = []

    def build(pipe: Pipeline) -> None:
        seen.append(_operators(pipe))
        raise _Defined

    with (
        mock.patch.object(Pipeline, "build", build),
        mock.patch("daliaug.engines.select.dali_gpu_count", lambda: 1),
        contextlib.suppress(_Defined),
    ):
        define()
    return seen[0]


def count(workload: str, folder: Path) -> dict[str, Any]:
    """daliaug's and DALI's own operators per device for ``workload`` over ``folder``."""
    from daliaug.outputs.dali_loader import build_pipeline
    from daliaug.prepare import prepare_samples

    work = WORKLOADS[workload]
    data = Data(None, folder, 1)
    config = work.daliaug_config(data, backend="auto")
    samples = prepare_samples(config)  # listed, not decode-checked (no GPU here)
    name, theirs = THEIRS[workload]
    return {
        "daliaug": _operators(build_pipeline(config, "gpu", samples=samples)),
        "theirs": _built(lambda: theirs(work, data, None, "gpu")),
        "theirs_name": name,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        "# GPU graphs' operators per device, daliaug against DALI's own pipelines",
        "",
        f"- Commit {result['machine'].get('commit', '?')}, DALI's graph defined without a GPU, "
        f"{result['date']}.",
        "",
        "| workload | pipeline | CPU | mixed | GPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for workload, found in result["workloads"].items():
        for who, label in (("daliaug", "daliaug (build_pipeline)"), ("theirs", None)):
            ops = found[who]
            label = label or found["theirs_name"]
            lines.append(f"| {workload} | {label} | {ops['cpu']} | {ops['mixed']} | {ops['gpu']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m bench.graph_ops")
    parser.add_argument("--workload", nargs="+", choices=sorted(THEIRS), default=["b", "c"])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    from daliaug.tools.demo_data import write_classification_dataset

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_classification_dataset(Path(tmp) / "jpegs", per_class=4, size=(60, 80))
        workloads = {w: count(w, folder) for w in args.workload}
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    result = {"machine": machine.describe(), "date": now, "workloads": workloads}
    text = table(result)
    print(text)
    return machine.write_record(args.out, "graph-ops", result, text)


if __name__ == "__main__":
    main()
