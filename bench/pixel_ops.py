"""What each pixel operation costs per image on each CPU engine: the floor under a stage made of
them (AugMix's chains: one resampling, one colour pass and a few pixel ops per chain, then the
blend).

    python -m bench.pixel_ops [--quick] [--out bench/results]

Every operation of :mod:`daliaug.engines.dali.pixels` and its twin in
:mod:`daliaug.engines.tf.pixels`, on one batch of random float32 224x224 RGB images: DALI's CPU
operators in a conditional pipeline (two threads, as daliaug builds them), and TensorFlow's in one
XLA-compiled function (as the TF engine runs a stage). ``where 30%`` is the per-sample branch
(:func:`~daliaug.engines.dali.branches.where`) around ``sharpness`` with 30% of the samples
choosing it. CPU milliseconds per image (the process's CPU time over the images), the source
itself (DALI's ``external_source``, TensorFlow's copy back to NumPy) subtracted. Writes
``pixel-ops-<date>.json`` and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine

SIZE = 224
MATRIX = [1.0, 0.1, 2.0, 0.05, 1.0, 1.0, 0.0, 0.0]
"""A shear and a shift (destination to source), for the resamplings."""


def operations(ops: Any, factor: Any, flag: Any) -> dict[str, Callable[[Any], Any]]:
    """The operations timed, by name, written once for both engines' ``pixels`` modules:
    ``factor`` a per-sample value in 0.5..1.5, ``flag`` 1 for 30% of the samples."""
    colour = [factor, 0.1, 0.1, 3.0, 0.1, factor, 0.1, 2.0, 0.1, 0.1, factor, 1.0] + [0.01] * 9
    return {
        "source": lambda x: x,
        "scaled": lambda x: ops.scaled(x, factor),
        "add_clipped": lambda x: ops.add_clipped(x, 0.0),
        "recolour": lambda x: ops.recolour(x, colour),
        "perspective, reflect": lambda x: ops.perspective(x, MATRIX, "reflect", False),
        "perspective, fill 0": lambda x: ops.perspective(x, MATRIX, 0.0, False),
        "sharpness": lambda x: ops.sharpness(x, factor),
        "equalize": lambda x: ops.equalize(x),
        "posterize": lambda x: ops.posterize(x, factor * 4.0),
        "solarize": lambda x: ops.solarize(x, factor * 100.0),
        "auto_contrast": lambda x: ops.auto_contrast(x),
        "where 30%": lambda x: ops.select(flag, lambda y: ops.sharpness(y, factor), x),
    }


def _inputs(batch: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    images = [rng.uniform(0, 255, (SIZE, SIZE, 3)).astype(np.float32) for _ in range(batch)]
    factors = rng.uniform(0.5, 1.5, batch).astype(np.float32)
    flags = (rng.random(batch) < 0.3).astype(np.float32)
    return images, factors, flags


def _cpu_ms(run: Callable[[], Any], batch: int, repeats: int) -> float:
    run()
    run()
    start = time.process_time()
    for _ in range(repeats):
        run()
    return 1000.0 * (time.process_time() - start) / (repeats * batch)


def dali_costs(batch: int, repeats: int) -> dict[str, float]:
    """CPU ms per image of each operation on DALI's CPU operators."""
    from nvidia.dali import fn, types

    from daliaug.engines.dali import pixels
    from daliaug.engines.dali.branches import conditional_pipeline

    images, factors, flags = _inputs(batch)
    costs = {}
    for name in operations(pixels, 0.0, 0.0):

        def graph(name: str = name) -> tuple:
            x = fn.external_source(lambda: images, batch=True, dtype=types.FLOAT, layout="HWC")
            v = fn.external_source(lambda: list(factors), batch=True, dtype=types.FLOAT)
            f = fn.external_source(lambda: list(flags), batch=True, dtype=types.FLOAT)
            return (operations(pixels, v, f)[name](x),)

        pipe = conditional_pipeline(
            graph, batch_size=batch, num_threads=2, device_id=None, prefetch_queue_depth=1
        )
        pipe.build()
        costs[name] = _cpu_ms(pipe.run, batch, repeats)
        del pipe
    return costs


def tf_costs(batch: int, repeats: int) -> dict[str, float]:
    """CPU ms per image of each operation on TensorFlow, XLA-compiled."""
    import tensorflow as tf

    from daliaug.engines.tf import pixels

    images, factors, flags = _inputs(batch)
    x, v, f = tf.constant(np.stack(images)), tf.constant(factors), tf.constant(flags)
    costs = {}
    for name, op in operations(pixels.KERNELS, v, f).items():
        compiled = tf.function(op, jit_compile=True)
        costs[name] = _cpu_ms(lambda compiled=compiled: compiled(x).numpy(), batch, repeats)
    return costs


def net(costs: dict[str, float]) -> dict[str, float]:
    """Each operation's cost above the source's."""
    return {name: cost - costs["source"] for name, cost in costs.items() if name != "source"}


def report(result: dict[str, Any]) -> str:
    """Markdown: one row per operation, both engines."""
    dali, tf = result["dali_cpu"], result["tf_xla"]
    lines = [
        "# Pixel operations: CPU ms per image on each CPU engine",
        "",
        f"- Machine: {result['machine'].get('cpu', '?')}; load average "
        f"{result['load'][0]:.1f} before, {result['load'][1]:.1f} after.",
        f"- One batch of {result['batch']} random float32 {SIZE}x{SIZE} RGB images, "
        f"{result['repeats']} run(s); the source's own cost subtracted. See bench/pixel_ops.py.",
        "",
        "| operation | DALI CPU operators | TensorFlow, XLA |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {name} | {dali[name]:.2f} | {tf[name]:.2f} |" for name in dali]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pixel_ops", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="8 images, one run")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    batch, repeats = (8, 1) if args.quick else (128, 5)
    before = os.getloadavg()[0]
    result: dict[str, Any] = {
        "machine": machine.describe(),
        "batch": batch,
        "repeats": repeats,
        "dali_cpu": net(dali_costs(batch, repeats)),
        "tf_xla": net(tf_costs(batch, repeats)),
    }
    result["load"] = (before, os.getloadavg()[0])
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"pixel-ops-{stamp}.json").write_text(json.dumps(result, indent=1))
    text = report(result)
    (args.out / f"pixel-ops-{stamp}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
