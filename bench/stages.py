"""Where daliaug's CPU time goes: its DALI graph cut after each stage, one DALI thread.

    python -m bench.stages [--workload a b] [--quick]

Each stage list builds partial pipelines with the operators and arguments daliaug uses
(:mod:`daliaug.engines.dali.image`): read, decode (whole image, then the random-resized-crop
window), the one resampling (a ``resize`` of a source window for axis-aligned, border-clamped
plans, else ``warp_affine``), the ``coord_transform`` colour pass, and ``crop_mirror_normalize``.
The decode windows and matrices come from the workload's plan, evaluated with NumPy as
``DaliLoader`` does. With one thread, CPU milliseconds per image add up stage by stage; the
difference between consecutive stages is that stage's cost. Comparison rows show the whole-image
decode and, for a resizing plan, what ``warp_affine`` would cost instead (with a clamped border,
and with daliaug's former constant fill 0). DALI only: runs without TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from statistics import median
from typing import Any, TextIO

import numpy as np

from bench.workloads import QUICK_BATCH_SIZE, WORKLOADS, Data, prepare
from daliaug.config import Config

Stage = Callable[[dict[str, Any]], Any]


def _feed(config: Config, data: Data) -> tuple[Callable[[], tuple], tuple[str, ...]]:
    """A batch source of the sample column (file names or arrays) and the plan's inputs, as
    ``DaliLoader`` computes them; with a resizing plan also the equivalent warp ``matrix``."""
    from daliaug.engines.feed import NUMPY, WarpLayout
    from daliaug.epoch import draw_rows

    samples = data.samples()
    column = "path" if "path" in samples.columns else "image"
    plan = config.plan
    layouts = [WarpLayout.of(plan, (column,), resizes) for resizes in (True, False)]
    names = layouts[0].names + (() if "matrix" in layouts[0].names else ("matrix",))
    rng = np.random.default_rng(0)
    batch = config.batch_size
    valid = np.ones(batch, dtype=bool)  # every position a real sample (batch stages ask)

    def feed() -> tuple:
        idx = rng.integers(0, len(samples), batch)
        rows, sizes = draw_rows(plan, rng, batch), samples.sizes[idx]
        warp = {}
        for layout in reversed(layouts):  # the resizing layout's inputs win
            flat = layout.evaluate(plan.paired(rows, valid), sizes, NUMPY)
            warp.update(layout.unpack(flat, np.reshape, True))
        return (samples.columns[column][idx], *(np.ascontiguousarray(warp[n]) for n in names))

    return feed, (column, *names)


def _stages(config: Config, inputs: tuple[str, ...]) -> dict[str, Stage]:
    """Cumulative partial graphs, each a function of the input nodes."""
    import nvidia.dali.math as dmath
    from nvidia.dali import fn, types

    from daliaug.engine_spec import EngineSpec
    from daliaug.engines.dali.image import finish, resample

    spec = EngineSpec.of(config, "cpu", 0, 0, config.batch_size)
    size = [float(s) for s in config.image_size]
    mean, std = config.output.mean_std(config.channels)
    resizes = "resize_start" in inputs

    def decoded(n: dict[str, Any]) -> Any:
        if "image" in n:
            return n["image"]
        return fn.decoders.image_slice(
            fn.io.file.read(n["path"]),
            n["crop_start"],
            n["crop_shape"],
            normalized_anchor=False,
            normalized_shape=False,
            axis_names="WH",
            output_type=types.RGB,
            adjust_orientation=False,
        )

    def resampled(n: dict[str, Any]) -> Any:
        return resample(decoded(n), n, "", spec, nearest=False, fill=spec.fill)

    def coloured(n: dict[str, Any]) -> Any:
        image = resampled(n)
        if "colour" not in n:
            return image
        return dmath.clamp(fn.coord_transform(image, MT=n["colour"], dtype=types.FLOAT), 0.0, 255.0)

    def normalized(image: Any, **per_sample: Any) -> Any:
        fields = {"mean": mean, "std": std, **per_sample}
        return fn.crop_mirror_normalize(image, dtype=types.FLOAT, output_layout="HWC", **fields)

    def factor() -> Any:  # a per-sample draw, as the workload's jitter
        return fn.random.uniform(range=[0.6, 1.4])

    low = [-m / d for m, d in zip(mean, std, strict=True)]
    high = [(255 - m) / d for m, d in zip(mean, std, strict=True)]
    alternatives: dict[str, Stage] = {  # other ways to recolour and normalize (not used)
        # the same operator with a normalizing matrix costs the same as with the plan's
        "colour matrix with normalization folded in, clamp per channel": lambda n: dmath.clamp(
            fn.coord_transform(resampled(n), MT=n["colour"], dtype=types.FLOAT),
            types.Constant(low),
            types.Constant(high),
        ),
        "fn.color_twist (per-sample factors) + crop_mirror_normalize": lambda n: normalized(
            fn.color_twist(
                resampled(n), brightness=factor(), contrast=factor(), saturation=factor()
            )
        ),
        "fn.hsv + fn.brightness_contrast + crop_mirror_normalize": lambda n: normalized(
            fn.brightness_contrast(
                fn.hsv(resampled(n), saturation=factor()), brightness=factor(), contrast=factor()
            )
        ),
        "crop_mirror_normalize alone, per-sample mean/std (a diagonal map)": lambda n: normalized(
            resampled(n),
            mean=fn.random.uniform(range=[0, 50], shape=[3]),
            std=fn.random.uniform(range=[0.6, 1.4], shape=[3]),
        ),
    }

    stages: dict[str, Stage] = {}
    if config.source.type == "directory":
        stages["read files"] = lambda n: fn.io.file.read(n["path"])
        stages["(compare) decode whole image"] = lambda n: fn.decoders.image(
            fn.io.file.read(n["path"]), output_type=types.RGB, adjust_orientation=False
        )
        stages["decode crop window (ROI)"] = decoded
    else:
        stages["feed arrays"] = decoded
    stages["+ resize of the window" if resizes else "+ warp_affine"] = resampled
    if resizes:
        for label, border in (("clamped border", {}), ("constant fill 0", {"fill_value": 0.0})):
            stages[f"(compare) warp_affine instead, {label}"] = lambda n, border=border: (
                fn.warp_affine(
                    decoded(n),
                    matrix=n["matrix"],
                    size=size,
                    interp_type=types.INTERP_LINEAR,
                    **border,
                )
            )
    if "colour" in inputs:
        stages["+ coord_transform colour, clamp"] = coloured
    stages["+ crop_mirror_normalize (full: daliaug's finish)"] = lambda n: finish(
        resampled(n), n, spec, spec.plan
    )
    if "colour" in inputs:
        stages.update({f"(compare) {label}": graph for label, graph in alternatives.items()})
    return stages


def _time(step: Callable[[], object], batch: int, seconds: float) -> dict[str, float]:
    """images/s and CPU ms/image of ``step`` (one batch) run for ``seconds`` (twice at least)."""
    t0, c0 = time.perf_counter(), time.process_time()
    runs = 0
    while time.perf_counter() - t0 < seconds or runs < 2:
        step()
        runs += 1
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"images_per_s": runs * batch / elapsed, "cpu_ms_per_image": 1000 * cpu / (runs * batch)}


def medians(
    steps: dict[str, Callable[[], object]], batch: int, repeats: int, seconds: float, warmup: int
) -> list[dict[str, Any]]:
    """Each stage's ``step`` timed ``repeats`` times, stages interleaved (``warmup`` untimed
    steps before each timing); median CPU ms/image and images/s per stage."""
    runs: dict[str, list[dict[str, float]]] = {stage: [] for stage in steps}
    for _ in range(repeats):
        for stage, step in steps.items():
            for _ in range(warmup):
                step()
            runs[stage].append(_time(step, batch, seconds))
    return [
        {
            "stage": stage,
            "cpu_ms_per_image": median(r["cpu_ms_per_image"] for r in samples),
            "images_per_s": median(r["images_per_s"] for r in samples),
        }
        for stage, samples in runs.items()
    ]


def profile(name: str, quick: bool, repeats: int, seconds: float) -> list[dict[str, Any]]:
    """Median CPU ms/image and images/s of each stage of workload ``name``, one DALI thread."""
    from nvidia.dali import fn, types

    from daliaug.engines.dali.branches import conditional_pipeline

    data = prepare(name, quick)
    workload = WORKLOADS[name].at_batch(QUICK_BATCH_SIZE if quick else None)
    config = workload.daliaug_config(data, num_threads=1)
    feed, inputs = _feed(config, data)
    dtypes = [types.UINT8] + [types.FLOAT] * (len(inputs) - 1)
    layouts = ["HWC" if i == "image" else None for i in inputs]
    pipes = {}
    for stage, graph in _stages(config, inputs).items():

        def pipeline(graph: Stage = graph) -> Any:
            nodes = fn.external_source(
                source=feed, num_outputs=len(inputs), dtype=dtypes, layout=layouts, batch=True
            )
            return graph(dict(zip(inputs, nodes, strict=True)))

        # as daliaug's own graphs: per-sample operations only on the samples that chose them
        pipes[stage] = conditional_pipeline(
            pipeline, batch_size=config.batch_size, num_threads=1, device_id=None, seed=0
        )
        pipes[stage].build()
    steps = {stage: pipe.run for stage, pipe in pipes.items()}
    return medians(steps, config.batch_size, repeats, seconds, warmup=2)


def profile_all(args: argparse.Namespace, log: TextIO) -> dict[str, Any]:
    """Run the profile in a fresh process (DALI only) for the run's workloads."""
    command = [sys.executable, "-m", "bench.stages", "--workload", *args.workload]
    if args.quick:
        command.append("--quick")
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.stages", description=__doc__)
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["a", "b"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats, seconds = (1, 0.05) if args.quick else (3, 1.5)
    result = {
        "threads": 1,
        "loadavg_before": os.getloadavg(),
        "workloads": {w: profile(w, args.quick, repeats, seconds) for w in args.workload},
        "loadavg_after": os.getloadavg(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
