"""The GPU path's host side alone, per image: what Python does for each batch of a DALI
pipeline fed by daliaug, measured without a GPU.

    python -m bench.host_cost [--workload b c d] [--repeats 7] [--quick] [--out bench/results]

On the GPU the images never touch the host's cores, but every batch's inputs are made there,
on the feed's thread, a few batches ahead of the thread that runs DALI (``DaliLoader``, the JAX
and PyTorch outputs): the epoch's order, the parameter rows, the plan evaluated into each
sample's inputs (``plan``: evaluated and cut into the parts the graph takes), the files read
and checked unchanged as they are read (``files``), and for (d), detection, each chunk's boxes
moved (``boxes``: the feed's chunks of :data:`FEED_CHUNK` samples with their box inputs alone,
the parameter rows drawn again and paired, the boxes moved once for the chunk's batches).
``total, feed thread`` runs exactly what that thread runs (:meth:`EpochFeed.batches
<daliaug.engines.feed.EpochFeed.batches>` over whole epochs, as wall time and as the thread's
CPU time); ``total, pipeline thread CPU`` is what the thread that runs DALI spends taking the
batches from the feed (:class:`daliaug.outputs.dali_loader._Source`'s external sources, called as
DALI calls them); the other rows time the parts one by one, in one thread.
Each repeat is a fresh epoch (new order and draws); medians of the repeats, microseconds per
image. Writes ``host-cost-<date>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any

from bench import detection, machine
from bench.workloads import WORKLOADS, prepare
from daliaug.engines.feed import FEED_CHUNK

TARGET_US = 5.0
"""Issue 31's target for (b): at most this many microseconds of host time per image."""
DETECTION_TARGET_US = 100.0
"""Issue 53's target for (d): at most this many microseconds of the feed thread's CPU per image."""


def _feed(name: str, quick: bool) -> Any:
    """Workload ``name``'s feed as ``DaliLoader`` builds it on the GPU (samples checked)."""
    from daliaug.engine_names import Choice
    from daliaug.engines.dali.pipeline import RESIZES, feed_form
    from daliaug.engines.feed import EpochFeed
    from daliaug.prepare import prepare as prepare_config

    data = detection.prepare(quick) if name == "d" else prepare(name, quick)
    workload = detection.gpu_workload() if name == "d" else WORKLOADS[name]
    config = workload.daliaug_config(data, backend="gpu")
    run = prepare_config(config, Choice("dali", "cpu"), samples=data.samples())
    samples = run.samples
    form = feed_form(config.plan, samples.column_names, "gpu")
    return EpochFeed(run.spec, samples, resizes=RESIZES, form=form)


def _parts(feed: Any, epoch: int) -> dict[str, float]:
    """Seconds per part of ``feed``'s work for one epoch, as :meth:`EpochFeed.batches` does it."""
    parts = ("order", "parameters", "plan", "files")
    spent = dict.fromkeys((*parts, "boxes") if feed.boxes is not None else parts, 0.0)

    @contextmanager
    def timed(part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        spent[part] += time.perf_counter() - t0

    with timed("order"):
        batches = feed.epochs.batches(epoch)
    with timed("parameters"):
        rows = feed.epochs.rows(feed.plan, epoch)
    for (start, stop), index in zip(feed.epochs.bounds, batches, strict=True):
        with timed("parameters"):
            params = rows[start:stop]
        with timed("plan"):
            sizes = feed.samples.sizes[index]
            feed._parts(feed.plan.paired(params, feed.epochs.valid(start, stop)), sizes)
        with timed("files"):
            feed.samples.read("path", index)
    if feed.boxes is not None:
        with timed("boxes"):
            for _ in feed.chunks(epoch, tuple(feed.boxes.shapes), FEED_CHUNK):
                pass
    return spent


def _total(feed: Any, epoch: int) -> tuple[float, float]:
    """Seconds of the feed thread's work over one whole epoch (:meth:`EpochFeed.batches` with
    the inputs ``DaliLoader`` asks for): wall time, and this thread's CPU time."""
    names = ("params", *feed.inputs)
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in feed.batches(epoch, names, True):
        pass
    return time.perf_counter() - t0, time.thread_time() - c0


def _taken(feed: Any, epoch: int) -> float:
    """CPU seconds the thread that runs DALI spends over one epoch taking each batch from
    :class:`~daliaug.outputs.dali_loader._Source` (each external source's part called once per
    batch, as DALI calls them; the batches made on the feed's thread)."""
    from daliaug.outputs.dali_loader import _Source

    source = _Source(feed, epoch)
    parts = [source.part([name]) for name in feed.inputs]
    c0 = time.thread_time()
    try:
        while True:
            for part in parts:
                part()
            source.params.popleft()  # the pipeline's output drains them
    except StopIteration:
        pass
    return time.thread_time() - c0


def measure(name: str, repeats: int, quick: bool) -> dict[str, Any]:
    """Microseconds per image of each part and of the total, every repeat kept."""
    feed = _feed(name, quick)
    images = feed.epochs.positions
    _total(feed, 10**6)  # warm-up: imports, caches
    samples: dict[str, list[float]] = {}
    for repeat in range(repeats):
        for part, seconds in _parts(feed, repeat).items():
            samples.setdefault(part, []).append(1e6 * seconds / images)
        wall, cpu = _total(feed, repeats + repeat)
        samples.setdefault("total, feed thread, wall", []).append(1e6 * wall / images)
        samples.setdefault("total, feed thread CPU", []).append(1e6 * cpu / images)
        taken = _taken(feed, 2 * repeats + repeat)
        samples.setdefault("total, pipeline thread CPU", []).append(1e6 * taken / images)
    return {
        "images_per_epoch": images,
        "batch_size": feed.epochs.batch_size,
        "warp_width": feed.layout.width,
        "us_per_image": {part: median(values) for part, values in samples.items()},
        "samples": samples,
    }


def table(result: dict[str, Any]) -> str:
    """Markdown: parts down, workloads across (µs/image, medians; a part a workload has not:
    blank)."""
    described, runs = result["machine"], result["workloads"]
    named = dict.fromkeys(part for run in runs.values() for part in run["us_per_image"])
    parts = sorted(named, key=lambda part: part.startswith("total"))  # the totals last
    lines = [
        "# The GPU path's host side alone (µs per image, one thread)",
        "",
        f"- Machine: {described['cpu']}, {described['cores']} cores, GPU: {described['gpu']}; "
        f"commit {described['commit']}; {result['repeats']} epochs per workload, medians; "
        f"1-minute load average {result['loadavg_before'][0]:.1f} before, "
        f"{result['loadavg_after'][0]:.1f} after (the machine is shared).",
        f"- Target: (b) total at most {TARGET_US:g} µs/image (issue 31), (d) the feed thread's "
        f"CPU at most {DETECTION_TARGET_US:g} µs/image (issue 53); the feed's thread makes the "
        "batches a few ahead of the thread that runs DALI, which only takes them; (d)'s boxes "
        f"are timed a chunk of {FEED_CHUNK:,} samples at a time, as the feed makes them.",
        "",
        "| part | "
        + " | ".join(f"({w}), {runs[w]['images_per_epoch']:,} images" for w in runs)
        + " |",
        "| --- |" + " ---: |" * len(runs),
    ]
    for part in parts:
        spent = [runs[w]["us_per_image"].get(part) for w in runs]
        cells = ["" if us is None else f"{us:.2f}" for us in spent]
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m bench.host_cost")
    parser.add_argument("--workload", nargs="+", choices=["b", "c", "d"], default=["b", "c"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="tiny data (smoke test)")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "machine": machine.describe(),
        "repeats": args.repeats,
        "quick": args.quick,
        "loadavg_before": os.getloadavg(),
        "workloads": {w: measure(w, args.repeats, args.quick) for w in args.workload},
        "loadavg_after": os.getloadavg(),
    }
    text = table(result)
    print(text)
    return machine.write_record(
        args.out, f"host-cost{'-quick' if args.quick else ''}", result, text
    )


if __name__ == "__main__":
    main()
