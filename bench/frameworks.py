"""The outputs per framework on one engine (DALI on the CPU): images/s of ``make_dataset`` on
TensorFlow (``tf.data``), JAX and PyTorch (Keras data adapters), workloads (a) and (b).

``python -m bench.frameworks --out bench/results``: each framework in a process of its own
(``KERAS_BACKEND`` set before Keras starts; TensorFlow made unimportable for JAX and PyTorch);
per repeat, a fresh epoch: ``warmup`` batches untimed, then ``batches`` timed. Writes
``frameworks-<date>.json`` and ``.md`` (median images/s and the ratio to TensorFlow).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FRAMEWORKS = ("tensorflow", "jax", "torch")
BATCHES = {"a": (3, 40), "b": (1, 6)}  # (warmup, timed) batches of 128 per repeat


def measure(spec: dict[str, Any]) -> list[float]:
    """Images/s of ``spec['repeats']`` epochs of one framework's ``make_dataset`` (run in the
    framework's own process)."""
    if spec["framework"] != "tensorflow":
        sys.modules["tensorflow"] = None  # type: ignore[assignment]
    import daliaug
    from bench.workloads import WORKLOADS, prepare

    data = prepare(spec["workload"], quick=False)
    config = WORKLOADS[spec["workload"]].daliaug_config(data)
    kwargs = dict(zip(("x", "y"), data.arrays_xy(), strict=True)) if data.arrays else {}
    dataset = daliaug.make_dataset(config, framework=spec["framework"], **kwargs)
    warmup, timed = BATCHES[spec["workload"]]
    rates = []
    for _ in range(spec["repeats"]):
        batches = iter(dataset)
        for _ in range(warmup):
            next(batches)
        start, images = time.perf_counter(), 0
        for _ in range(timed):
            images += len(next(batches)[1])
        rates.append(images / (time.perf_counter() - start))
        getattr(batches, "close", lambda: None)()  # a pass left unfinished (not tf.data's)
    return rates


def run(workload: str, framework: str, repeats: int) -> list[float]:
    spec = {"workload": workload, "framework": framework, "repeats": repeats}
    env = {**os.environ, "KERAS_BACKEND": framework, "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = subprocess.run(
        [sys.executable, "-m", "bench.frameworks", "--measure", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", nargs="+", default=["a", "b"], choices=sorted(BATCHES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure))))
        return
    results = {w: {f: run(w, f, args.repeats) for f in FRAMEWORKS} for w in args.workload}
    stamp = time.strftime("%Y%m%d-%H%M")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"frameworks-{stamp}.json").write_text(json.dumps(results, indent=1))
    lines = [
        "| workload | framework | images/s (median) | vs TensorFlow | repeats |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for w, rows in results.items():
        base = statistics.median(rows["tensorflow"])
        for f, rates in rows.items():
            median = statistics.median(rates)
            shown = ", ".join(f"{r:.0f}" for r in rates)
            lines.append(f"| ({w}) | {f} | {median:.0f} | {median / base:.2f}x | {shown} |")
    (args.out / f"frameworks-{stamp}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
