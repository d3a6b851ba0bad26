"""Soak: a long ``model.fit`` on the demo data, host memory and live DALI pipelines per epoch.

    python -m bench.soak [--epochs 50] [--backend cpu tf] [--out bench/results]

Each backend trains in a process of its own: the demo config and data (800 training and 200
validation images), training and validation datasets from ``make_dataset``, a small model (the
pipeline, not the model, is under test). After every epoch it records the process's resident
memory (``/proc/self/status``) and the DALI worker threads alive (threads named ``[DALI]...``,
a fixed number per live pipeline). Writes ``soak-<date>.json``, ``.md`` and ``.png`` with the
growth from epoch 5 to the last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from importlib.resources import files
from pathlib import Path

from bench import machine

WARM = 5
"""Epochs after which memory should be flat."""


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def dali_threads() -> int:
    tasks = Path("/proc/self/task")
    names = []
    for task in tasks.iterdir():
        try:
            names.append((task / "comm").read_text())
        except OSError:
            continue
    return sum(name.startswith("[DALI]") for name in names)


def soak(backend: str, epochs: int) -> dict:
    """One backend, in this process."""
    import keras

    from daliaug.config import load_config
    from daliaug.outputs.dataset import make_dataset
    from daliaug.tools.demo_sources import demo_sources

    config = load_config(str(files("daliaug.pipelines") / "demo.yaml"), {"backend": backend})
    train_source, val_source = demo_sources(config.source)
    train = make_dataset(config.model_copy(update={"source": train_source}))
    val = make_dataset(config.evaluation_twin().model_copy(update={"source": val_source}))
    h, w = config.image_size
    model = keras.Sequential(
        [
            keras.Input((h, w, config.channels)),
            keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )
    model.compile("adam", "sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    records: list[dict] = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            records.append(
                {
                    "epoch": epoch + 1,
                    "rss_mib": rss_mib(),
                    "dali_threads": dali_threads(),
                    "seconds": time.perf_counter() - start,
                }
            )

    start = time.perf_counter()
    model.fit(
        train, validation_data=val, epochs=epochs, verbose=0, callbacks=[Record()], shuffle=False
    )
    return {"backend": backend, "epochs": records}


def growth(records: list[dict], key: str) -> float:
    first = next(r for r in records if r["epoch"] == WARM)[key]
    return (records[-1][key] - first) / first if first else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--backend", nargs="+", default=["cpu", "tf"])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(soak(args.worker, args.epochs)))
        return
    runs = []
    for backend in args.backend:
        runs.append(
            machine.run_worker("bench.soak", "--worker", backend, "--epochs", str(args.epochs))
        )
        print(backend, f"RSS growth {growth(runs[-1]['epochs'], 'rss_mib'):+.1%}", file=sys.stderr)
    write(runs, args.out)


def write(runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = out / f"soak-{stamp}"
    described = machine.describe()
    base.with_suffix(".json").write_text(json.dumps({"machine": described, "runs": runs}))
    names = {"cpu": "DALI on the CPU", "gpu": "DALI on the GPU", "tf": "TensorFlow backend"}
    lines = [
        f"# Soak: {len(runs[0]['epochs'])} epochs of model.fit on the demo data",
        "",
        f"- Machine: {described['cpu']}, {described['cores']} cores, GPU: {described['gpu']}; "
        f"commit {described['commit']}. Training and validation datasets from make_dataset, a "
        "small model; resident memory and DALI worker threads after each epoch.",
        "",
        f"| backend | RSS epoch {WARM} MiB | RSS last MiB | growth | DALI threads epoch {WARM} "
        "| DALI threads last | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for run in runs:
        records = run["epochs"]
        at = next(r for r in records if r["epoch"] == WARM)
        last = records[-1]
        lines.append(
            f"| {names[run['backend']]} | {at['rss_mib']:,.0f} | {last['rss_mib']:,.0f} | "
            f"{growth(records, 'rss_mib'):+.1%} | {at['dali_threads']} | {last['dali_threads']} "
            f"| {last['seconds']:,.0f} |"
        )
        ax.plot(
            [r["epoch"] for r in records],
            [r["rss_mib"] for r in records],
            label=names[run["backend"]],
        )
    ax.set(xlabel="epoch", ylabel="resident memory (MiB)", title="soak: memory per epoch")
    ax.legend()
    fig.tight_layout()
    fig.savefig(base.with_suffix(".png"), dpi=100)
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
