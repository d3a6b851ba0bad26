"""Compare DALI with the TensorFlow backend on the same images and parameters.

Runs each transform of CONFIG alone and the whole pipeline on DALI (the GPU when DALI sees
one, else the CPU) and on the TensorFlow backend, with the same explicit random parameters,
and prints per comparison the max and mean absolute difference and the share of values more
than 2 apart on the 0..255 scale (a 1-pixel band along each source border is skipped). Without
--images it uses built-in images (gradients, edges, texture, text) as lossless PNGs; the JPEG
decoders are compared on their own. --engine opencv compares the OpenCV engine instead of DALI
(backend: opencv). --check-reference REF compares DALI with stored TensorFlow
outputs instead (needs no TensorFlow: for hosts with DALI alone); --write-reference OUT stores
them (needs TensorFlow). Exit code 0 when all are within tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from daliaug.cli.common import console, positive_int
from daliaug.config import load_config
from daliaug.errors import ConfigError
from daliaug.parity.reference import SHIPPED


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="pipeline config (YAML or JSON)")
    parser.add_argument("--images", type=Path, help="folder of your images (default: built-in)")
    parser.add_argument(
        "--limit", type=positive_int, default=16, help="most images to use (default 16)"
    )
    parser.add_argument("--seed", type=int, help="parameter seed (default: a fresh one)")
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="where DALI runs (default: the GPU if DALI sees one)",
    )
    parser.add_argument(
        "--engine",
        choices=["dali", "opencv"],
        default="dali",
        help="the engine compared with the TF engine: DALI (default) or OpenCV (backend: opencv)",
    )
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    stored = parser.add_mutually_exclusive_group()
    stored.add_argument(
        "--check-reference",
        type=Path,
        nargs="?",
        const=SHIPPED,
        metavar="REF",
        help="compare DALI with a stored reference (default: the one shipped with daliaug)",
    )
    stored.add_argument(
        "--write-reference", type=Path, metavar="OUT", help="store TensorFlow's outputs here"
    )


def run(args: argparse.Namespace) -> int:
    from daliaug.engines import engine
    from daliaug.epoch import resolve_seed
    from daliaug.parity import (
        builtin_inputs,
        check_reference,
        run_parity,
        table,
        user_inputs,
        write_reference,
    )

    seed = resolve_seed(args.seed)
    if args.write_reference:
        with console.status("running the TensorFlow backend on every case"):
            path = write_reference(args.write_reference, seed)
        console.print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, seed {seed})")
        return 0
    if args.check_reference:
        with console.status(f"running {args.engine} on the stored cases"):
            device = engine(args.engine).device(args.device)
            report = check_reference(args.check_reference, device, engine=args.engine)
    else:
        if args.config is None:
            raise ConfigError("parity: give a CONFIG, --check-reference REF or --write-reference")
        config = load_config(args.config)
        device = engine(args.engine).device(args.device, config.device_id)
        running = f"running {args.engine} and TensorFlow"
        with tempfile.TemporaryDirectory() as tmp, console.status(running):
            if args.images is None:
                inputs = builtin_inputs(Path(tmp))
            else:
                inputs = user_inputs(args.images, Path(tmp), args.limit)
            report = run_parity(config, inputs, seed, device, args.engine)
    console.print(table(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=2))
    return 0 if report.passed else 1
