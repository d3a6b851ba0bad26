"""Find what bounds training: the input pipeline alone, the model alone, model.fit fed by both.

Measures (i) images/s of the config's pipeline alone, (ii) the model's training steps on a
synthetic batch already in memory, (iii) model.fit fed by the pipeline, each over --steps
batches after --warmup untimed ones, and says which of (i) and (ii) bounds (iii) and by how
much. The CPU use of this process (and of any workers it starts), as a share of all cores, is
sampled throughout (and GPU utilisation through NVML where nvidia-ml-py and a GPU are present);
--timeline writes it as a PNG with the phases marked.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from daliaug.cli.common import (
    add_config_argument,
    add_data_argument,
    config_from_args,
    console,
    positive_int,
)


def register(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument(
        "--model", default="small", help="small (default), resnet50, or a saved Keras model file"
    )
    parser.add_argument(
        "--steps", type=positive_int, default=20, help="timed steps per phase (default 20)"
    )
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--timeline", type=Path, help="write a utilisation timeline PNG here")
    parser.add_argument(
        "--backend", choices=["auto", "gpu", "cpu", "tf"], help="override the config"
    )
    add_data_argument(parser)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.backend:
        config = config.model_copy(update={"backend": args.backend})
    with console.status("measuring: pipeline alone, model alone, then model.fit"):
        from daliaug.engines.select import placed
        from daliaug.outputs.dataset import DatasetEngine
        from daliaug.tools.doctor import diagnose, plot_timeline

        result = diagnose(config, args.model, args.steps, args.warmup)
    engine = placed(result.device)  # type: ignore[arg-type]
    augments = str(DatasetEngine(engine.engine, engine.device))
    table = Table(title=f"model {result.model}, batch {result.batch_size}, {augments}")
    for column in ("phase", "images/s", "steps", "CPU (this process)", "GPU"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    names = {
        "pipeline": "(i) pipeline alone",
        "model": "(ii) model alone, synthetic batch",
        "fit": "(iii) model.fit fed by the pipeline",
    }
    for p in result.phases:
        table.add_row(
            names[p.name],
            f"{p.images_per_s:,.0f}",
            str(p.steps),
            _percent(p.cpu_percent),
            _percent(p.gpu_percent),
        )
    console.print(table)
    console.print(result.verdict, style="bold")
    for note in result.notes:
        console.print(f"note: {note}")
    if args.timeline:
        plot_timeline(result, args.timeline)
        console.print(f"wrote the utilisation timeline to {args.timeline}")
    return 0
