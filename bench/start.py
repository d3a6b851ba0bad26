"""Time to the first batch over a class-folder tree of N files (issue 59), against DALI's
``fn.readers.file`` and tf.data's ``list_files`` over the same folder, in the same run.

    python -m bench.start [--files 10000 100000] [--imagenet] [--coco] [--yolo] [--voc] \
        [--profile 100000] --out bench/results

The tree is ``<class>/<i>.jpg`` hard links to a few real small JPEGs (``os.link``: N entries
cost folder entries, not image bytes), 1,000 files per class (ImageNet's 1,281 per class is
near), kept under ``$DALIAUG_CACHE/bench/start-<N>`` between runs. ``--imagenet`` adds
N = 1,281,167. Each start is a fresh process (imports not timed): ``make_dataset(config)`` then
the first batch, for ``check: full`` (the default), ``background`` and ``headers``; the *first
start* has a fresh, empty ``DALIAUG_CACHE`` (only the tree is kept elsewhere), *later starts*
keep that cache (a ``background`` start's check is let finish after the first batch, untimed,
as a first epoch would). DALI's reader: ``readers.file(file_root)`` + CPU decode + resize,
built and run once; tf.data: ``list_files`` + its first element. The file system's own cost is
``os.scandir`` over the tree. ``--coco`` adds a COCO file over the same tree (one box per
image, each image's size declared, written once beside it): daliaug's ``coco`` source (``check:
background``) against DALI's ``fn.readers.coco`` + CPU decode + resize. ``--yolo`` adds a
YOLO folder over the same images (``images/`` a link to the tree, ``labels/`` one box per image,
hard links to one label file, ``data.yaml`` naming the class: the check reads the label files):
daliaug's ``yolo`` source (``check: background``) against DALI's
``readers.file`` above (DALI has no YOLO reader; it reads no label file) and the file system's
part of a YOLO listing (``os.scandir`` of ``labels/`` and every label file read). ``--voc``
adds a Pascal VOC folder over them (``JPEGImages`` a link to the tree, an XML file an image
naming it, its size declared and one box): daliaug's ``voc`` source (``check: background``)
against the same ``readers.file`` (DALI has no VOC reader). The clock
stops at the first batch: each tool's iterator or pipeline is torn down after (records before
2026-12-07 11:30 timed the teardown too). The tree is in the page cache throughout (it was
just written or listed): these are warm-file-system times. ``--profile N`` runs one later start
and one first start of daliaug under cProfile and records the top functions. Writes
``start-<date>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine

IMAGENET = 1_281_167
PER_CLASS = 1000
SIZE = 32
BATCH = 32
SOURCES = 4
"""Real JPEGs the tree's files are hard links to."""
CHECKS = ("full", "background", "headers")
"""The ``source.check`` modes timed: the full check first, beside training, headers only."""
MAX_LINKS = 50_000
"""Hard links per source file at most (ext4 takes 65,000 to an inode)."""
FINISH_BELOW = 500_000
"""Trees below this many files have their background check let finish (untimed) after the
first start; at ImageNet's size it would decode 1.28 million files (about half an hour here)."""
BOXES = ("coco", "yolo", "voc")
"""The box sources a run may time beside the class folders."""


def tree(root: Path, n: int) -> Path:
    """The tree of ``n`` hard links under ``root`` (made once; a marker says it is whole)."""
    folder = root / f"start-{n}"
    marker = folder / ".whole"
    if marker.exists():
        return folder / "train"
    import numpy as np
    from PIL import Image

    shutil.rmtree(folder, ignore_errors=True)
    sources = folder / "sources"
    sources.mkdir(parents=True)
    rng = np.random.default_rng(0)
    originals = []
    for i in range(_sources(n)):
        path = sources / f"{i}.jpg"
        pixels = rng.integers(0, 256, (96 + 8 * (i % SOURCES), 128, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path, quality=85)
        originals.append(str(path))
    train = folder / "train"
    for c in range(-(-n // PER_CLASS)):
        klass = train / f"n{c:08d}"
        klass.mkdir(parents=True)
        for i in range(c * PER_CLASS, min(n, (c + 1) * PER_CLASS)):
            os.link(originals[i % len(originals)], klass / f"{i:08d}.jpg")
    marker.touch()
    return train


def _sources(n: int) -> int:
    """How many JPEGs a tree of ``n`` links points to: :data:`SOURCES`, or more where a file
    would pass :data:`MAX_LINKS`."""
    return max(SOURCES, -(-n // MAX_LINKS))


def config(train: Path, check: str) -> dict[str, Any]:
    return {
        "source": {"type": "directory", "path": str(train), "check": check},
        "image_size": SIZE,
        "batch_size": BATCH,
        "shuffle": True,
        "seed": 0,
        "label_mode": "int",
    }


def coco_config(train: Path, check: str) -> dict[str, Any]:
    source = {"type": "coco", "annotations": str(annotations(train)), "images": str(train)}
    return {**config(train, check), "source": {**source, "check": check}, "label_mode": "none"}


def yolo_config(train: Path, check: str) -> dict[str, Any]:
    return folder_config(train, check, "yolo", yolo_root(train))


def voc_config(train: Path, check: str) -> dict[str, Any]:
    return folder_config(train, check, "voc", voc_root(train))


def folder_config(train: Path, check: str, kind: str, root: Path) -> dict[str, Any]:
    """The config of a ``kind`` box source over the folder ``root`` made beside the tree."""
    source = {"type": kind, "path": str(root), "check": check}
    return {**config(train, check), "source": source, "label_mode": "none"}


def made_beside(train: Path, name: str, images: str, fill: Callable[[Path], None]) -> Path:
    """The folder ``name`` beside the tree, made once: ``images`` in it a link to the tree,
    the rest written by ``fill``."""
    root = train.parent / name
    marker = root / ".whole"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        (root / images).symlink_to(train, target_is_directory=True)
        fill(root)
        marker.touch()
    return root


VOC_XML = (
    "<annotation><filename>{name}</filename><size><width>128</width><height>{height}</height>"
    "<depth>3</depth></size><object><name>a</name><bndbox><xmin>5</xmin><ymin>5</ymin>"
    "<xmax>24</xmax><ymax>24</ymax></bndbox></object></annotation>\n"
)
"""A VOC annotation file: its image (``<filename>``, under ``JPEGImages``), its size and one
box."""


def voc_root(train: Path) -> Path:
    """A Pascal VOC folder over the tree (made once beside it): ``JPEGImages`` a link to the
    tree, ``Annotations/<class>/<i>.xml`` one file an image (each names its own), declaring
    the size of the JPEG its image links to, as the COCO file does."""

    def fill(root: Path) -> None:
        files = sorted(str(p.relative_to(train)) for p in train.glob("*/*.jpg"))
        sources = _sources(len(files))
        for i, name in enumerate(files):
            xml = root / "Annotations" / Path(name).with_suffix(".xml")
            xml.parent.mkdir(parents=True, exist_ok=True)
            xml.write_text(VOC_XML.format(name=name, height=96 + 8 * (i % sources % SOURCES)))

    return made_beside(train, "voc", "JPEGImages", fill)


def yolo_root(train: Path) -> Path:
    """A YOLO folder over the tree (made once beside it): ``images`` a link to the tree,
    ``labels/<class>/<i>.txt`` hard links to one box line (a file per :data:`MAX_LINKS`)."""

    def fill(root: Path) -> None:
        (root / "data.yaml").write_text("names: [a]\n")
        line = root / "line.txt"
        count = 0
        for folder in sorted(train.iterdir()):
            labels = root / "labels" / folder.name
            labels.mkdir(parents=True)
            for image in sorted(folder.iterdir()):
                if count % MAX_LINKS == 0:
                    line = root / f"line-{count // MAX_LINKS}.txt"
                    line.write_text("0 0.5 0.5 0.25 0.25\n")
                os.link(line, labels / f"{image.stem}.txt")
                count += 1

    return made_beside(train, "yolo", "images", fill)


def annotations(train: Path) -> Path:
    """A COCO file over the tree (written once beside it): one box per image, each image's
    size declared (the size of the JPEG its file links to)."""
    path = train.parent / "annotations.json"
    if path.exists():
        return path
    files = sorted(str(p.relative_to(train)) for p in train.glob("*/*.jpg"))
    sources = _sources(len(files))
    images = [
        {"id": i, "file_name": name, "width": 128, "height": 96 + 8 * (i % sources % SOURCES)}
        for i, name in enumerate(files)
    ]
    boxes = [
        {"id": i, "image_id": i, "category_id": 1, "bbox": [4, 4, 20, 20], "iscrowd": 0}
        for i in range(len(files))
    ]
    data = {"images": images, "annotations": boxes, "categories": [{"id": 1, "name": "a"}]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)
    return path


def child(tool: str, train: str, check: str, profile: str | None, finish: bool) -> dict[str, Any]:
    """One start of ``tool`` in this (fresh) process: seconds to the first batch."""
    if tool.startswith("daliaug"):
        import daliaug

        _import_all()
        configs = {
            "daliaug coco": coco_config,
            "daliaug yolo": yolo_config,
            "daliaug voc": voc_config,
        }
        made = configs.get(tool, config)(Path(train), check)

        def start() -> Any:
            iterator = iter(daliaug.make_dataset(made))
            return iterator, next(iterator)
    elif tool.startswith("dali"):
        from nvidia.dali import fn, pipeline_def

        @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)
        def reader() -> Any:
            files, labels = fn.readers.file(file_root=train, random_shuffle=True, seed=0)
            images = fn.resize(fn.decoders.image(files), size=(SIZE, SIZE))
            return images, labels

        @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)
        def coco_reader() -> Any:
            files, boxes, labels = fn.readers.coco(
                file_root=train,
                annotations_file=str(annotations(Path(train))),
                ltrb=True,
                random_shuffle=True,
                seed=0,
            )
            images = fn.resize(fn.decoders.image(files), size=(SIZE, SIZE))
            return images, boxes, labels

        def start() -> Any:
            pipe = (coco_reader if tool == "dali coco" else reader)()
            pipe.build()
            return pipe, pipe.run()
    elif tool == "tf.data":
        import tensorflow as tf

        def start() -> Any:
            iterator = iter(tf.data.Dataset.list_files(f"{train}/*/*.jpg", shuffle=False))
            return iterator, next(iterator)
    elif tool == "yolo labels":  # the file system's part of a YOLO listing

        def start() -> Any:
            labels = yolo_root(Path(train)) / "labels"
            return [_read(f.path) for d in os.scandir(labels) for f in os.scandir(d.path)]
    else:  # the file system alone

        def start() -> Any:
            return [list(os.scandir(entry.path)) for entry in os.scandir(train)]

    t0, cpu0 = time.perf_counter(), time.process_time()
    if profile:
        profiler = cProfile.Profile()
        started = profiler.runcall(start)
    else:
        started = start()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    del started  # (the iterator or pipeline torn down once the clock has stopped)
    result: dict[str, Any] = {"seconds": seconds, "cpu": cpu, "max_rss_mib": _max_rss_mib()}
    if profile:
        profiler.dump_stats(profile)
    if tool == "daliaug" and check == "background" and finish:
        _finish_check(Path(train))
    return result


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _finish_check(train: Path) -> None:
    """The background check let finish (untimed), as the first epoch of a training run would
    let it, so that a later start finds every file's result in the cache."""
    from daliaug.config import load_config
    from daliaug.engines.select import choose
    from daliaug.prepare import prepare

    made = load_config(config(train, "background"))
    check = prepare(made, choose(made)).samples.background
    assert check is not None
    check.begin()
    check.done.wait()


def _import_all() -> None:
    """Keras, TensorFlow, DALI and every daliaug module imported (imports are not timed)."""
    import importlib
    import pkgutil

    import keras  # noqa: F401
    import nvidia.dali  # noqa: F401
    import tensorflow  # noqa: F401

    import daliaug

    for module in pkgutil.walk_packages(daliaug.__path__, "daliaug."):
        if module.name.endswith("__main__"):
            continue
        with contextlib.suppress(ImportError):  # an optional framework (torch, jax)
            importlib.import_module(module.name)


def _max_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(
    tool: str, train: Path, cache: Path, check: str = "full", profile: str = "", finish: bool = True
) -> dict:
    """``tool``'s start in a fresh process with ``DALIAUG_CACHE=cache`` (``finish``: a
    background check let finish after the timed start)."""
    env = {**os.environ, "DALIAUG_CACHE": str(cache), "TF_CPP_MIN_LOG_LEVEL": "3"}
    args = ["--child", tool, "--train", str(train), "--check", check]
    args += [] if finish else ["--unfinished"]
    if profile:
        args += ["--profile-to", profile]
    done = subprocess.run(
        [sys.executable, "-m", "bench.start", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=machine.ROOT,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{tool} {check} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def listed_memory(train: Path, cache: Path, check: str) -> dict[str, float]:
    """Bytes per sample the samples listed with ``check`` hold (tracemalloc), measured in a
    fresh process on a later start (the cache kept)."""
    code = (
        "import tracemalloc, sys, json, daliaug\n"
        "from daliaug.config import load_config\n"
        "from bench.start import config\n"
        "from pathlib import Path\n"
        "c = load_config(config(Path(sys.argv[1]), sys.argv[2]))\n"
        "tracemalloc.start()\n"
        "s = c.source.samples(c.seed)\n"
        "now, peak = tracemalloc.get_traced_memory()\n"
        "print(json.dumps({'per_sample_bytes': now / len(s), 'peak_per_sample_bytes': "
        "peak / len(s), 'samples': len(s)}))\n"
    )
    env = {**os.environ, "DALIAUG_CACHE": str(cache), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(train), check],
        env=env,
        capture_output=True,
        text=True,
        cwd=machine.ROOT,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    n: int,
    root: Path,
    repeats: int,
    checks: tuple[str, ...] = CHECKS,
    boxes: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Every tool's first and later starts over the tree of ``n`` files, daliaug's with each
    of ``checks``; a background check is let finish after its first start below
    :data:`FINISH_BELOW` files (else its later starts find the decode results of the first
    batches only: the start itself reads no other). ``boxes``: daliaug's box sources among
    :data:`BOXES` too, and DALI's COCO reader with COCO (daliaug's check not let finish: its
    later starts find the first batches' results only)."""
    t0 = time.perf_counter()
    train = tree(root, n)
    row: dict[str, Any] = {"files": n, "tree_seconds": time.perf_counter() - t0}
    coco = "coco" in boxes
    if coco:
        annotations(train)
    if "yolo" in boxes:
        yolo_root(train)
    if "voc" in boxes:
        voc_root(train)
    tools = ("scandir", "dali", "tf.data", *(("dali coco",) if coco else ()))
    tools += ("yolo labels",) if "yolo" in boxes else ()
    starts = [(f"daliaug {c}", "daliaug", c) for c in checks]
    starts += [(f"daliaug {kind} background", f"daliaug {kind}", "background") for kind in boxes]
    with tempfile.TemporaryDirectory(prefix="daliaug-start-") as scratch:
        for tool in tools:
            runs = [run(tool, train, Path(scratch) / "x") for _ in range(repeats)]
            row[tool] = {
                "first": runs[0]["seconds"],
                "later": median(r["seconds"] for r in runs),
                "later_cpu": median(r["cpu"] for r in runs),
            }
        for name, tool, check in starts:
            cache = Path(scratch) / name
            finish = n < FINISH_BELOW and tool == "daliaug"
            first = run(tool, train, cache, check, finish=finish)
            later = [run(tool, train, cache, check, finish=False) for _ in range(repeats)]
            row[name] = {
                "first": first["seconds"],
                "first_cpu": first["cpu"],
                "later": median(r["seconds"] for r in later),
                "later_cpu": median(r["cpu"] for r in later),
                "max_rss_mib": max(r["max_rss_mib"] for r in later),
            }
            print(f"{n}: {name} {row[name]}", flush=True)
        row["memory"] = {c: listed_memory(train, Path(scratch) / f"daliaug {c}", c) for c in checks}
        row["check_finished"] = n < FINISH_BELOW
    return row


def profiled(n: int, root: Path, out: Path, stamp: str) -> dict[str, Any]:
    """cProfile of daliaug's first and later start (``check: full``) at ``n`` files: the top
    functions by cumulative and by own time, written as ``.prof`` text tables too."""
    train = tree(root, n)
    record: dict[str, Any] = {"files": n}
    with tempfile.TemporaryDirectory(prefix="daliaug-start-") as scratch:
        cache = Path(scratch) / "cache"
        for start in ("first", "later"):
            stats_file = str(Path(scratch) / f"{start}.prof")
            seconds = run("daliaug", train, cache, "full", stats_file)["seconds"]
            tables = {}
            for key in ("cumulative", "tottime"):
                text = io.StringIO()
                pstats.Stats(stats_file, stream=text).strip_dirs().sort_stats(key).print_stats(25)
                tables[key] = text.getvalue()
            record[start] = {"seconds": seconds, **tables}
    return record


def _extrapolate(small: dict[str, Any], big: dict[str, Any], n: int) -> dict[str, Any]:
    """Each time at ``n`` files on the line through the two largest measured N (a fixed cost
    plus a cost per file), as a row of the report (labelled as extrapolated there)."""
    row: dict[str, Any] = {"files": n, "extrapolated": True}
    for key, times in big.items():
        if isinstance(times, dict) and "later" in times and key in small:
            row[key] = {
                start: times[start]
                + (times[start] - small[key][start])
                / (big["files"] - small["files"])
                * (n - big["files"])
                for start in ("first", "later")
                if start in times
            }
    return row


def _cell(times: dict[str, float] | None, start: str, dali: float | None = None) -> str:
    if times is None or start not in times:
        return "not run"
    return f"{times[start] / dali:.1f}x" if dali else f"{times[start]:.2f}"


def report(rows: list[dict[str, Any]], profile: dict[str, Any] | None, extrapolated: dict) -> str:
    """The record's text: every start at every N, and each daliaug start against DALI's."""
    head = ["N", "scandir", "DALI readers.file", "tf.data list_files"]
    for c in CHECKS:
        head += [f"daliaug {c} first", f"daliaug {c} later"]
    head += [f"{c} {start} / DALI" for c in CHECKS for start in ("first", "later")]
    head += [f"bytes per sample listed ({c})" for c in ("background", "headers")]
    lines = [
        "# Time to the first batch (issue 59)",
        "",
        f"Class-folder tree of N hard links to {SOURCES} JPEGs (more above "
        f"{SOURCES * MAX_LINKS:,} files: {MAX_LINKS:,} links each at most; 96-120 x 128), "
        f"{PER_CLASS} per "
        f"class, image_size {SIZE}, batch {BATCH}; seconds from `make_dataset` (or the "
        "reader's build) to the first batch (its iterator or pipeline torn down after the "
        "clock stops), imports excluded, each start a fresh process. "
        "First start: fresh `DALIAUG_CACHE`; later: the median of the later starts. Warm page "
        f"cache. Below {FINISH_BELOW:,} files the background check is let finish after the "
        "first start (untimed); above, the later starts find the decode results of the first "
        "batches only (a start reads no other). `not run`: that check was not timed at that N.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in [*rows, *extrapolated.values()]:
        dali = r["dali"]["later"]
        label = f"{r['files']:,}" + (" (extrapolated)" if r.get("extrapolated") else "")
        cells = [label] + [f"{r[t]['later']:.3f}" for t in ("scandir", "dali", "tf.data")]
        for c in CHECKS:
            cells += [_cell(r.get(f"daliaug {c}"), start) for start in ("first", "later")]
        for c in CHECKS:
            cells += [_cell(r.get(f"daliaug {c}"), s, dali) for s in ("first", "later")]
        memory = r.get("memory", {})
        for c in ("background", "headers"):
            found = memory.get(c)
            cells.append(f"{found['per_sample_bytes']:.0f}" if found else "not run")
        lines.append("| " + " | ".join(cells) + " |")
    for table in BOX_TABLES:
        lines += _box_table(rows, *table)
    labels = [r for r in rows if "yolo labels" in r]
    if labels:
        lines += [
            "",
            "Reading every label file (`labels/` listed, each file opened and read):",
        ]
        lines += [""] + [f"- {r['files']:,}: {r['yolo labels']['later']:.3f} s" for r in labels]
    if profile:
        for start in ("first", "later"):
            p = profile[start]
            lines += [
                "",
                f"## cProfile, daliaug `check: full`, {start} start, "
                f"{profile['files']:,} files ({p['seconds']:.2f} s under the profiler)",
                "",
                "```",
                p["cumulative"].strip()[-6000:],
                "```",
            ]
    return "\n".join(lines) + "\n"


BOX_TABLES = (
    (
        "coco",
        "COCO (one box per image, sizes declared) over the same trees",
        "dali coco",
        "readers.coco",
        "DALI's `readers.coco` (+ decode + resize)",
    ),
    (
        "yolo",
        "YOLO (one box per image, its classes named in `data.yaml`) over the same images",
        "dali",
        "readers.file",
        "DALI's `readers.file` over the same images (DALI has no YOLO reader; it reads no "
        "label file)",
    ),
    (
        "voc",
        "Pascal VOC (one box per image, sizes declared) over the same images",
        "dali",
        "readers.file",
        "DALI's `readers.file` over the same images (DALI has no VOC reader; it reads no XML file)",
    ),
)
"""Each box source's table: its kind, heading, the DALI tool it is set against, that tool's
reader, and what the tool is."""


def _box_table(
    rows: list[dict[str, Any]], kind: str, heading: str, dali_tool: str, reader: str, against: str
) -> list[str]:
    """The lines of the table of daliaug's ``kind`` source against ``dali_tool`` (none where
    the run did not time it)."""
    timed = [r for r in rows if f"daliaug {kind} background" in r]
    if not timed:
        return []
    lines = [
        "",
        f"## {heading}",
        "",
        f"daliaug's `{kind}` source with `check: background` (its check not let finish), "
        f"against {against}.",
        "",
        f"| N | DALI {reader} | daliaug first | daliaug later | first / DALI | later / DALI |",
        "|---|---|---|---|---|---|",
    ]
    for r in timed:
        dali, ours = r[dali_tool]["later"], r[f"daliaug {kind} background"]
        cells = [f"{r['files']:,}", f"{dali:.3f}"]
        cells += [_cell(ours, s) for s in ("first", "later")]
        cells += [_cell(ours, s, dali) for s in ("first", "later")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--imagenet", action="store_true", help=f"add N = {IMAGENET:,}")
    parser.add_argument(
        "--imagenet-checks",
        nargs="+",
        default=["background"],
        choices=CHECKS,
        help="the checks timed at ImageNet's N (the full check of 1.28M files takes ~25 min)",
    )
    parser.add_argument("--coco", action="store_true", help="time COCO readers too")
    parser.add_argument("--yolo", action="store_true", help="time daliaug's YOLO source too")
    parser.add_argument("--voc", action="store_true", help="time daliaug's VOC source too")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="cProfile daliaug at this N")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--train", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--check", default="full", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--unfinished", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        finish = not args.unfinished
        print(json.dumps(child(args.child, args.train, args.check, args.profile_to, finish)))
        return
    from daliaug.cache import default_cache_dir

    root = default_cache_dir() / "bench"
    boxes = tuple(kind for kind in BOXES if getattr(args, kind))
    rows = [measure(n, root, args.repeats, boxes=boxes) for n in args.files]
    if args.imagenet:
        checks = tuple(args.imagenet_checks)
        rows.append(measure(IMAGENET, root, args.repeats, checks, boxes))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    profile = profiled(args.profile, root, args.out or root, stamp) if args.profile else None
    extrapolated = {}
    if not args.imagenet and len(rows) > 1:
        extrapolated[IMAGENET] = _extrapolate(rows[-2], rows[-1], IMAGENET)
    text = report(rows, profile, extrapolated)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        record = {
            "machine": machine.describe(),
            "rows": rows,
            "profile": profile,
            "extrapolated": {str(k): v for k, v in extrapolated.items()},
        }
        (args.out / f"start-{stamp}.json").write_text(json.dumps(record, indent=1))
        (args.out / f"start-{stamp}.md").write_text(text)


if __name__ == "__main__":
    main()
