"""The OpenCV engine against its decode ceiling on the classification row of
:mod:`bench.opencv_engine` ((b)'s JPEGs, random resized crop 224, flip, brightness and
contrast, normalize, batch 32), and where the rest of its time goes.

    python -m bench.opencv_ceiling [--old CHECKOUT] [--repeats 3] [--seconds 8] [--out DIR]

* The rates: ``engine`` (``backend: opencv``, NumPy output) and ``decode`` (the same files
  read and decoded whole by the engine's decoder on as many threads, nothing else: the
  ceiling), each in a process of its own (``python -m bench.opencv_engine --measure``); with
  ``--old``, ``engine`` of that checkout too (``git archive`` of the commit before a change),
  all alternated repeat by repeat. Medians.
* The stages: the engine on one thread in this process, each step of a sample timed in the
  thread's own CPU time (``time.thread_time``, steadier than wall time on a shared machine):
  read, decode, cut the window, warp (resample), recolour, normalize into the batch; what is
  left of the process's CPU time is the feed, the pool's dispatch and the batch's assembly.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine

STEPS = ("decode", "window", "warp", "recolour", "to_output")
"""The functions of :mod:`daliaug.engines.opencv.image` a sample goes through, timed."""


def _rate(root: Path, tool: str, seconds: float) -> dict[str, Any]:
    """One measurement of ``tool`` (``opencv-cls`` or ``decode-cls``) by ``root``'s code."""
    args = ("--measure", tool, "--seconds", str(seconds))
    return machine.run_worker("bench.opencv_engine", *args, root=root)


def _timing(f: Callable[..., Any], label: str, spent: dict[str, float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - start

    return timed


def stages(images: int = 640) -> dict[str, float]:
    """CPU ms per image of each step of the engine on one thread (see the module docstring)."""
    import cv2

    from bench.opencv_engine import _config
    from daliaug.engines.opencv import image
    from daliaug.outputs.cv_loader import CvLoader

    cv2.setNumThreads(1)
    loader = CvLoader({**_config("cls"), "num_threads": 1})
    spent: dict[str, float] = defaultdict(float)
    graph = loader.graph
    originals = {name: getattr(image, name) for name in STEPS}
    for name, f in originals.items():
        setattr(image, name, _timing(f, name, spent))
    graph._encoded = _timing(graph._encoded, "read", spent)  # type: ignore[method-assign]
    graph._sample = _timing(graph._sample, "sample", spent)  # type: ignore[method-assign]
    count, cpu = 0, time.process_time()
    try:
        while count < images:
            for batch in loader:
                count += len(batch[0])
                if count >= images:
                    break
    finally:
        cpu = time.process_time() - cpu
        loader.close()
        for name, f in originals.items():
            setattr(image, name, f)
    per = {k: 1000 * v / count for k, v in spent.items()}
    steps = sum(per[k] for k in ("read", *STEPS))
    per["sample, rest"] = per.pop("sample") - steps
    per["feed, dispatch, batch"] = 1000 * cpu / count - steps - per["sample, rest"]
    per["total"] = 1000 * cpu / count
    return per


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.opencv_ceiling", description=__doc__)
    parser.add_argument("--old", type=Path, help="a checkout to compare the engine with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tools = [("new", machine.ROOT, "opencv-cls"), ("decode", machine.ROOT, "decode-cls")]
    if args.old:
        tools.append(("old", args.old.resolve(), "opencv-cls"))
    rates: dict[str, list[float]] = defaultdict(list)
    for repeat in range(args.repeats):
        for name, root, tool in tools if repeat % 2 == 0 else tools[::-1]:
            rates[name].append(_rate(root, tool, args.seconds)["images_per_s"])
            print(f"{name}: {rates[name][-1]:,.1f} images/s", file=sys.stderr)
    per = stages()
    text = report(rates, per, machine.describe(), args)
    print(text)
    if args.out:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
        base = args.out / f"opencv-ceiling-{stamp}"
        base.with_suffix(".md").write_text(text)
        base.with_suffix(".json").write_text(json.dumps({"rates": rates, "stages": per}, indent=1))


def report(
    rates: dict[str, list[float]],
    per: dict[str, float],
    described: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    med = {k: median(v) for k, v in rates.items()}
    lines = [
        "# The OpenCV engine against its decode ceiling (classification row)",
        "",
        f"Machine: {described['cpu']} ({described['cores']} cores), "
        f"{described.get('gpu') or 'no GPU'}; commit {described['commit']}; load average "
        + " / ".join(f"{v:.2f}" for v in os.getloadavg())
        + f"; medians of {args.repeats} alternated repeats of {args.seconds:g} s, each a "
        "process of its own.",
        "",
        "| measured | images/s (median) | repeats | x ceiling |",
        "|---|---:|---|---:|",
    ]
    for name, title in (
        ("decode", "decode alone (the ceiling)"),
        ("new", "engine, this tree"),
        ("old", f"engine, {args.old}"),
    ):
        if name in med:
            each = ", ".join(f"{v:,.0f}" for v in rates[name])
            ratio = med[name] / med["decode"]
            lines.append(f"| {title} | {med[name]:,.0f} | {each} | {ratio:.2f}x |")
    if "old" in med:
        lines.append(f"\nThis tree against the old: {med['new'] / med['old']:.2f}x images/s.")
    lines += [
        "",
        "Where the engine's CPU time goes (one thread, CPU ms per image, thread CPU time):",
        "",
        "| step | CPU ms/image | share |",
        "|---|---:|---:|",
    ]
    total = per["total"]
    for step, value in per.items():
        share = "" if step == "total" else f"{100 * value / total:.0f} %"
        lines.append(f"| {step} | {value:.3f} | {share} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
