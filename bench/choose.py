"""Which engine ``backend: auto`` should run without a GPU: ``make_dataset`` with DALI on the
CPU, the TensorFlow backend and the OpenCV engine, for every source kind and for plans with
pixel stages, through ``tf.data`` and through the NumPy output (which the JAX and PyTorch
outputs share: the same loaders, the arrays then handed to the framework).

    python -m bench.choose [--repeats 3] [--seconds 4] [--out bench/results] [--quick]
        [--kinds KIND ...] [--outputs tensorflow numpy]

Each source kind gets workload (b)'s transforms (random resized crop, flip, colour jitter,
normalize) on its own data: the JPEG folder of workload (b) read as a ``directory``, as a
``file_list`` and converted to PNGs, to TFRecords and to WebDataset shards (read from a
folder, and from ``rclone serve s3`` on the loopback address: ``webdataset-s3``); workload
(a)'s arrays and transforms for ``arrays``; the demo's segmentation data (96x96, masks warped
with their images) with the shipped ``segmentation.yaml`` pipeline. Two more cases vary the
plan on (b)'s folder: ``pixel`` adds two per-sample pixel stages (sharpness, solarize) to (b),
``policy`` is workload (c) (RandAugment and MixUp). ``detection`` is (b)'s transforms on the
COCO JPEGs with boxes of :mod:`bench.detection`. Every case (a source kind through one output
on one engine: :data:`CASES`) runs in a process of its own (as :mod:`bench.worker`), repeats
interleaved; images/s and CPU ms/image are medians. The OpenCV engine does not read TFRecords
(:data:`REFUSED`). The rule in :func:`daliaug.engines.select.cpu_placement` follows from the
result (``choose-*.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine
from bench.worker import cpu_ms
from bench.workloads import BATCH_SIZE, WORKLOADS, prepare
from daliaug.cache import build_folder_atomically, default_cache_dir

KINDS = (
    "arrays",
    "directory",
    "file_list",
    "png",
    "tfrecord",
    "webdataset",
    "webdataset-s3",
    "segmentation",
    "pixel",
    "policy",
    "detection",
)
PIXEL_STAGES = [{"type": "sharpness"}, {"type": "solarize"}]
"""The ``pixel`` kind: workload (b) with two per-sample pixel stages before its normalize."""
CASES = {
    "tensorflow": ("cpu", "tf", "opencv"),
    "numpy": ("cpu", "opencv"),
}
"""The backends measured through each output: ``tf.data``, and NumPy (JAX's and PyTorch's
loaders: the TensorFlow backend serves ``tf.data`` alone)."""
NAMES = {"cpu": "DALI-CPU", "tf": "TF", "opencv": "OpenCV"}
REFUSED = {("tfrecord", "opencv")}
"""Cases an engine cannot run (the OpenCV engine has no TFRecord reader)."""


def _png_folder(folder: Path) -> Path:
    """``folder``'s class folders with every JPEG re-encoded as PNG (cached)."""
    from PIL import Image

    def write(tmp: Path) -> None:
        for jpeg in sorted(folder.rglob("*.jpg")):
            target = tmp / jpeg.relative_to(folder).with_suffix(".png")
            target.parent.mkdir(parents=True, exist_ok=True)
            Image.open(jpeg).save(target, compress_level=1)

    return build_folder_atomically(folder.with_name(folder.name + "-png"), write)


def _file_list(folder: Path) -> Path:
    from daliaug.sources.directory import DirectorySource

    out = folder.with_name(folder.name + "-list.csv")
    if not out.is_file():
        samples = DirectorySource(path=folder).samples()
        rows = [
            f"{p},{samples.class_names[label]}\n"
            for p, label in zip(samples.paths, samples.labels, strict=True)
        ]
        tmp = out.with_name(f".{out.name}.{os.getpid()}")  # workers write side by side
        tmp.write_text("path,label\n" + "".join(rows))
        tmp.replace(out)
    return out


def _records(folder: Path) -> Path:
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    def write(tmp: Path) -> None:
        write_tfrecords(DirectorySource(path=folder).samples(), tmp, shards=4)

    return build_folder_atomically(folder.with_name(folder.name + "-tfrecord"), write)


def _shards(folder: Path) -> Path:
    """``folder``'s images as WebDataset shards of 250 samples (cached)."""
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_webdataset

    def write(tmp: Path) -> None:
        write_webdataset(DirectorySource(path=folder).samples(), tmp, shard_size=250)

    return build_folder_atomically(folder.with_name(folder.name + "-wds"), write)


@contextlib.contextmanager
def s3_server(shards: Path) -> Iterator[dict[str, str]]:
    """``rclone serve s3`` on 127.0.0.1 with ``shards`` as ``s3://bench/wds``: the AWS
    variables that reach it."""
    root = Path(tempfile.mkdtemp(prefix="daliaug-s3-"))
    (root / "bench" / "wds").mkdir(parents=True)
    for shard in shards.iterdir():
        os.link(shard, root / "bench" / "wds" / shard.name)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    keys = {"AWS_ACCESS_KEY_ID": "daliaugbench", "AWS_SECRET_ACCESS_KEY": "daliaugbenchsecret"}
    rclone = [str(Path(sys.executable).parent / "rclone"), "serve", "s3", str(root)]
    auth = f"{keys['AWS_ACCESS_KEY_ID']},{keys['AWS_SECRET_ACCESS_KEY']}"
    server = subprocess.Popen([*rclone, "--addr", f"127.0.0.1:{port}", "--auth-key", auth])
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        yield {**keys, "AWS_ENDPOINT_URL": url, "AWS_DEFAULT_REGION": "us-east-1"}
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(root)


def case_config(kind: str, backend: str, quick: bool) -> tuple[dict[str, Any], Any]:
    """The config of one source kind (and arrays to pass as ``x``/``y``, or ``None``)."""
    if kind == "arrays":
        data = prepare("a", quick)
        return {**WORKLOADS["a"].config, "backend": backend}, data.arrays_xy()
    if kind == "detection":
        from bench.detection import dataset_root

        root = dataset_root()
        coco = {
            "type": "coco",
            "annotations": str(root / "annotations.json"),
            "images": str(root / "images"),
        }
        return {**WORKLOADS["b"].config, "source": coco, "backend": backend}, None
    if kind == "segmentation":
        import yaml

        from daliaug.parity.examples import shipped_pipelines
        from daliaug.tools.demo_data import write_segmentation_dataset

        root = write_segmentation_dataset(
            default_cache_dir() / "bench" / "segmentation", count=64 if quick else 1000
        )
        path = next(p for p in shipped_pipelines() if p.stem == "segmentation")
        shipped = yaml.safe_load(path.read_text())
        source = {**shipped["source"], "images": str(root / "images"), "masks": str(root / "masks")}
        return {**shipped, "source": source, "batch_size": BATCH_SIZE, "backend": backend}, None
    folder = prepare("b", quick).directory
    assert folder is not None
    if kind in ("pixel", "policy"):  # (b)'s folder with pixel stages, or workload (c) (a policy)
        directory = {"type": "directory", "path": str(folder)}
        config = WORKLOADS["b" if kind == "pixel" else "c"].config
        transforms = config["transforms"]
        if kind == "pixel":
            transforms = [*transforms[:-1], *PIXEL_STAGES, transforms[-1]]
        return {**config, "source": directory, "transforms": transforms, "backend": backend}, None
    source: dict[str, Any] = {
        "directory": {"type": "directory", "path": str(folder)},
        "png": {"type": "directory", "path": str(_png_folder(folder))},
        "file_list": {"type": "file_list", "path": str(_file_list(folder))},
        "tfrecord": {"type": "tfrecord", "path": str(_records(folder))},
        "webdataset": {"type": "webdataset", "path": str(_shards(folder))},
        "webdataset-s3": {"type": "webdataset", "path": "s3://bench/wds"},
    }[kind]
    return {**WORKLOADS["b"].config, "source": source, "backend": backend}, None


def _epoch(
    kind: str, backend: str, quick: bool, framework: str = "tensorflow"
) -> Callable[[], Iterator[int]]:
    """A fresh run over ``make_dataset``'s batches through ``framework``'s output (epoch after
    epoch) per call: batch sizes."""
    from daliaug.outputs.dataset import make_dataset

    config, arrays = case_config(kind, backend, quick)
    x, y = arrays if arrays is not None else (None, None)
    dataset = make_dataset(config, x=x, y=y, framework=framework)

    def epoch() -> Iterator[int]:
        while True:
            for batch in dataset:
                yield int(batch[0].shape[0])

    return epoch


def run_case(kind: str, case: str, repeats: int, seconds: float, quick: bool) -> None:
    """One case (``framework/backend``) in this process: one JSON line of measurements per
    repeat read on stdin."""
    from bench.worker import measure

    framework, backend = case.split("/")
    epoch = _epoch(kind, backend, quick, framework)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for _ in sys.stdin:
        result = measure(epoch, 2, 1.0, seconds, 10**9)
        out.write(json.dumps(result) + "\n")
        out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.choose", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--outputs", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--case", nargs=2, metavar=("KIND", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_case(*args.case, args.repeats, args.seconds, args.quick)
        return
    seconds = 0.3 if args.quick else args.seconds
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    server = contextlib.ExitStack()
    if "webdataset-s3" in args.kinds:
        env |= server.enter_context(s3_server(_shards(prepare("b", args.quick).directory)))
    for kind in args.kinds:
        cases = [
            f"{framework}/{backend}"
            for framework in args.outputs
            for backend in CASES[framework]
            if (kind, backend) not in REFUSED
        ]
        workers = {}
        for case in cases:
            command = [sys.executable, "-m", "bench.choose", "--case", kind, case]
            command += ["--seconds", str(seconds)] + (["--quick"] if args.quick else [])
            workers[case] = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sys.stderr,  # a worker that dies says why
                text=True,
                cwd=machine.ROOT,
                env=env,
            )
        for case, worker in workers.items():  # started side by side, measured one at a time
            if not worker.stdout.readline():
                sys.exit(f"bench.choose: the {kind} {case} worker exited {worker.wait()}")
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
        for r in range(args.repeats):
            for case in cases if r % 2 == 0 else reversed(cases):
                worker = workers[case]
                worker.stdin.write("measure\n")
                worker.stdin.flush()
                runs[case].append(json.loads(worker.stdout.readline()))
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
        results[kind] = runs
        print(f"{kind}: " + ", ".join(f"{c} {_rate(runs[c]):,.0f} images/s" for c in cases))
    server.close()
    report = render(results, machine.describe(), args)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    name = f"choose-quick-{stamp}" if args.quick else f"choose-{stamp}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(results, indent=1))
    (args.out / f"{name}.md").write_text(report)
    print(report)


def _rate(runs: list[dict[str, Any]]) -> float:
    return median(r["images_per_s"] for r in runs)


def _cpu_ms(runs: list[dict[str, Any]]) -> float:
    return median(cpu_ms(r) for r in runs)


def render(results: dict[str, Any], described: dict[str, Any], args: argparse.Namespace) -> str:
    """Two markdown tables (images/s, CPU ms/image): per source kind, each engine through each
    output, and the fastest per output."""
    command = f"python -m bench.choose --repeats {args.repeats}"
    command += f" --kinds {' '.join(args.kinds)} --outputs {' '.join(args.outputs)}"
    lines = [
        "# Which engine is fastest on the CPU, per source kind and output",
        "",
        f"- Machine: {described['cpu']}, {described['cores_usable']} cores, "
        f"{described['memory_gib']} GiB, GPU: {described['gpu'] or 'none'}; "
        f"{described['date']}; load average after: "
        + " / ".join(f"{v:.2f}" for v in os.getloadavg()),
        f"- Commit {described['commit']}; command: `{command}{' --quick' if args.quick else ''}`",
        "- `make_dataset` with `backend: cpu` (DALI's CPU operators), `backend: tf` (`tf.data` "
        "only) and `backend: opencv`, through `tf.data` and through the NumPy output (the JAX "
        "and PyTorch outputs' loaders); workload (b)'s transforms (arrays: workload (a)'s), "
        f"batch 128; medians of {args.repeats} interleaved repeats; - where an engine cannot "
        "run the source.",
        "",
    ]
    columns = [(f, b) for f in args.outputs for b in CASES[f]]
    head = " | ".join(f"{_OUTPUT[f]} {NAMES[b]}" for f, b in columns)
    fastest = " | ".join(f"fastest, {_OUTPUT[f]}" for f in args.outputs)
    for title, value, digits in (("images/s", _rate, 0), ("CPU ms/image", _cpu_ms, 3)):
        ranked = digits == 0  # the images/s table names the fastest engine per output
        lines += [
            f"{title}:",
            "",
            f"| source kind | {head}" + (f" | {fastest} |" if ranked else " |"),
            "|---" + "|---:" * len(columns) + ("|---" * len(args.outputs) if ranked else "") + "|",
        ]
        for kind, runs in results.items():
            cells = [
                f"{value(runs[f'{f}/{b}']):,.{digits}f}" if f"{f}/{b}" in runs else "-"
                for f, b in columns
            ]
            if ranked:
                cells += [_fastest(runs, f) for f in args.outputs]
            lines.append(f"| {kind} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


_OUTPUT = {"tensorflow": "tf.data", "numpy": "NumPy"}


def _fastest(runs: dict[str, Any], framework: str) -> str:
    """The fastest engine through ``framework``'s output, and by how much over the next."""
    rates = sorted(
        ((_rate(r), c.split("/")[1]) for c, r in runs.items() if c.startswith(f"{framework}/")),
        reverse=True,
    )
    if len(rates) < 2:
        return NAMES[rates[0][1]] if rates else "-"
    return f"{NAMES[rates[0][1]]} ({rates[0][0] / rates[1][0]:.2f}x)"


if __name__ == "__main__":
    main()
