"""Scaling over replicas: images/s of ``model.fit`` under ``MirroredStrategy`` with one daliaug
pipeline per replica, for 1, 2, 3 replicas (logical CPU devices where there is no GPU).

    python -m bench.replicas [--replicas 1 2 3] [--backend cpu tf] [--epochs 3]
                             [--out bench/results]

Each setting runs in a process of its own (logical devices are fixed when TensorFlow starts):
the demo config and data with each ``--backend`` (default DALI on the CPU, whose per-replica
pipelines are under test, and the TensorFlow backend), the demo's small CNN, one untimed
epoch, then ``--epochs`` timed ones; the global batch is the config's batch times the
replicas. Writes ``replicas-<date>.json``, ``.md`` and ``.png``. On a CPU-only machine the
logical replicas share its cores, so this measures the overhead of the per-replica pipelines
and the all-reduce, not a speed-up. ``--backend gpu`` runs ``R`` replicas on the first ``R``
GPUs (the multi-GPU scaling curve of ``bench/gpu_suite.sh``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

from bench import machine

NAMES = {"auto": "auto", "cpu": "DALI on the CPU", "gpu": "DALI on the GPU", "tf": "TF backend"}


def measure(replicas: int, backend: str, epochs: int) -> dict:
    """One setting, in this process: images/s of each timed epoch."""
    from daliaug.config import load_config
    from daliaug.outputs.dataset import make_dataset
    from daliaug.tools.demo import mirrored
    from daliaug.tools.demo_sources import demo_sources
    from daliaug.tools.models import model_for

    strategy = mirrored(replicas) if backend != "gpu" else first_gpus(replicas)
    config = load_config(str(files("daliaug.pipelines") / "demo.yaml"), {"backend": backend})
    train, _ = demo_sources(config.source)
    n = replicas * config.batch_size
    config = config.model_copy(update={"source": train, "batch_size": n})
    dataset = make_dataset(config, strategy=strategy)
    with strategy.scope():
        model = model_for(config, 4)
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # warm-up: graphs, pipelines
    count = len(config.source.samples())
    rates = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.fit(dataset, epochs=1, verbose=0, shuffle=False)
        rates.append(count / (time.perf_counter() - start))
    devices = list(strategy.extended.worker_devices)
    return {
        "replicas": replicas,
        "backend": backend,
        "devices": devices,
        "global_batch": n,
        "images_per_s": rates,
    }


def first_gpus(replicas: int) -> Any:
    """A ``MirroredStrategy`` over the first ``replicas`` GPUs (the GPU scaling curve)."""
    import tensorflow as tf

    available = len(tf.config.list_physical_devices("GPU"))
    if replicas > available:
        raise SystemExit(f"{replicas} replicas asked for, {available} GPU(s) visible")
    return tf.distribute.MirroredStrategy([f"/gpu:{i}" for i in range(replicas)])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--backend", nargs="+", default=["cpu", "tf"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(measure(args.worker, args.backend[0], args.epochs)))
        return
    results = []
    for backend, replicas in ((b, r) for b in args.backend for r in args.replicas):
        command = ["--worker", str(replicas), "--backend", backend, "--epochs", str(args.epochs)]
        results.append(machine.run_worker("bench.replicas", *command))
        print(backend, replicas, results[-1]["images_per_s"], file=sys.stderr)
    write(results, args)


def write(results: list[dict], args: argparse.Namespace) -> None:
    from statistics import median

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = args.out / f"replicas-{stamp}"
    described = machine.describe()
    base.with_suffix(".json").write_text(json.dumps({"machine": described, "runs": results}))
    where = "GPUs" if "GPU" in results[-1]["devices"][0] else "logical CPU devices"
    lines = [
        f"# Replicas: model.fit under MirroredStrategy, one daliaug pipeline per replica ({where})",
        "",
        f"- Machine: {described['cpu']}, {described['cores']} cores, GPU: {described['gpu']}; "
        f"commit {described['commit']}; demo config and data, the demo CNN, global batch = 32 x "
        f"replicas; median of {args.epochs} epochs after one untimed.",
        "- Logical CPU replicas share the machine's cores: this shows the cost of one pipeline "
        "per replica and of the all-reduce, not a speed-up.",
        "",
        "| backend | replicas | global batch | images/s (median) | per replica |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        rate = median(r["images_per_s"])
        lines.append(
            f"| {NAMES.get(r['backend'], r['backend'])} | {r['replicas']} | {r['global_batch']} "
            f"| {rate:,.0f} | {rate / r['replicas']:,.0f} |"
        )
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for backend in dict.fromkeys(r["backend"] for r in results):
        runs = [r for r in results if r["backend"] == backend]
        rates = [median(r["images_per_s"]) for r in runs]
        ax.plot([r["replicas"] for r in runs], rates, "o-", label=NAMES.get(backend, backend))
    ax.legend()
    ax.set(xlabel="replicas", ylabel="images/s (model.fit)", title=f"MirroredStrategy, {where}")
    ax.set_xticks([r["replicas"] for r in results])
    fig.tight_layout()
    fig.savefig(base.with_suffix(".png"), dpi=100)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
