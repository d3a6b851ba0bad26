"""What a result was measured on: machine, load, package versions, date and commit (stdlib)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from daliaug.tools.monitor import Nvml

PACKAGES = (
    "tensorflow",
    "keras",
    "nvidia-dali-cuda120",
    "nvidia-dali-cuda130",
    "nvidia-dali-tf-plugin-cuda120",
    "numpy",
    "scipy",
    "pillow",
    "nvidia-ml-py",
    "nvidia-nvimgcodec-cu12",
    "nvidia-nvimgcodec-cu13",
    "nvidia-nvjpeg-cu12",
    "nvidia-nvjpeg-cu13",
    "jax",
    "jaxlib",
    "daliaug",
)
ROOT = Path(__file__).parents[1]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _gpu() -> str | None:
    nvml = Nvml()
    if not nvml.available:
        return None
    name = nvml.nvml.nvmlDeviceGetName(nvml.handle)
    memory = nvml.nvml.nvmlDeviceGetMemoryInfo(nvml.handle).total / 2**30
    return f"{name.decode() if isinstance(name, bytes) else name}, {memory:.0f} GiB"


def describe() -> dict[str, Any]:
    """The machine and software a run happens on."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": _memory_gib(),
        "gpu": _gpu(),
        "platform": platform.platform(),
        "versions": versions(),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "uncommitted": _git("diff", "--name-only", "HEAD").splitlines(),
    }


def _first_on_path(root: Path) -> str:
    """``PYTHONPATH`` with ``root`` first (what the caller's path held stays after it)."""
    return os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))


def run_worker(*args: str, root: Path = ROOT, env: dict[str, str] | None = None) -> Any:
    """``python -m ARGS`` in a process of its own (from the checkout ``root``, whose ``bench``
    and ``daliaug`` it imports; TensorFlow's info logs off; ``env`` added to its
    environment); the JSON its last line of output holds (a ``RuntimeError`` with the end of
    its stderr where it fails)."""
    run = subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={
            **os.environ,
            **(env or {}),
            "PYTHONPATH": _first_on_path(root),
            "TF_CPP_MIN_LOG_LEVEL": "2",
        },
        check=False,
    )
    if run.returncode:
        raise RuntimeError(f"python -m {' '.join(args)} failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def timed(tool: str, batch_sizes: Iterator[int], seconds: float, warmup: int) -> dict[str, Any]:
    """One measurement of ``tool``: ``warmup`` batches untimed, then the images of
    ``seconds`` of batches (``batch_sizes`` yields each batch's size)."""
    for _ in range(warmup):
        next(batch_sizes)
    images, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        images += next(batch_sizes)
    elapsed = time.perf_counter() - start
    return {"tool": tool, "images": images, "seconds": elapsed, "images_per_s": images / elapsed}


def alternated(module: str, tools: Sequence[str], repeats: int, seconds: float) -> list[Any]:
    """Each tool measured ``repeats`` times by ``python -m module --measure TOOL --seconds S``
    in a process of its own, the order reversed every other repeat; each sample as its worker
    printed it (progress on stderr)."""
    samples = []
    for repeat in range(repeats):
        for tool in tools if repeat % 2 == 0 else tools[::-1]:
            sample = run_worker(module, "--measure", tool, "--seconds", str(seconds))
            print(f"{tool}: {sample['images_per_s']:,.1f} images/s", file=sys.stderr)
            samples.append(sample)
    return samples


def interleaved_main(
    module: str,
    doc: str,
    tools: Sequence[str],
    measure: Callable[[str, float], dict[str, Any]],
    report: Callable[[list[Any], dict[str, Any]], str],
    defaults: tuple[int, float],
    subsets: bool = False,
) -> None:
    """The command of an interleaved comparison (``python -m module``): ``--repeats`` and
    ``--seconds`` (``defaults``), ``--out`` (writes ``<name>-<date>.md`` with ``report``'s
    table and ``.json`` with the machine and samples; the name is the module's, dashed);
    ``--measure TOOL`` is one worker's measurement (:func:`alternated`). With ``subsets``
    (``report`` takes the samples of some tools only), ``--tools`` measures those alone."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=defaults[0])
    parser.add_argument("--seconds", type=float, default=defaults[1])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", choices=tools, help=argparse.SUPPRESS)
    if subsets:
        parser.add_argument("--tools", nargs="+", choices=tools, default=list(tools))
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.seconds)))
        return
    chosen = [t for t in tools if t in args.tools] if subsets else tools
    samples = alternated(module, chosen, args.repeats, args.seconds)
    described = describe()
    text = report(samples, described)
    print(text)
    if args.out:
        name = module.rsplit(".", 1)[-1].replace("_", "-")
        write_record(args.out, name, {"machine": described, "samples": samples}, text)


def write_record(out: Path, name: str, result: dict[str, Any], text: str) -> Path:
    """``result`` as ``<out>/<name>-<date>.json`` and ``text`` (its table) beside it as
    ``.md``; the two files' path without the suffix."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    base = out / f"{name}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".json").write_text(json.dumps(result, indent=1))
    base.with_suffix(".md").write_text(text)
    return base
