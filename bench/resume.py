"""Time to the first batch after restoring a state at batch k (issue 56): flat in k, since a
restore seeks (no batch before k made, no file before it read).

    python -m bench.resume [--files 100000] [--file-list] [--check full] --out bench/results
    python -m bench.resume --records --files 20000 --out bench/results

Over ``bench.start``'s class-folder tree of N hard links (made once, kept in the cache), or
with ``--file-list`` a file list of the first N files of its ImageNet-sized tree, listed with
``source.check: --check``, in one process: the NumPy output of ``make_dataset`` (batch 32,
shuffled, the engine ``auto`` picks), then for each k, ``set_state`` to the state after k
batches of epoch 0 and the time to the first batch that follows (median of ``--repeats``);
beside it, one batch's time in a running epoch, so the cost of replaying k batches instead is
k times that. Then, in fresh processes, ``make_dataset(config, state=...)`` and its first batch
for the first and the last k (the listing's later start included: the tree's checks are cached
by the first). Writes ``resume-<date>.json`` and ``.md``.

With ``--records``, the same files as TFRecords (``daliaug convert``'s, made once), read by
DALI's own reader on the CPU (random-resized crop and flip drawn in its graph): its states hold
the reader's checkpoints, so they are taken while one epoch runs through (each the state after
batch k), and a restore is DALI's (it skips the records before k unread and refills its
shuffle buffer); also the time ``Pipeline.checkpoint()`` takes after a batch.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine
from bench.start import IMAGENET, config, tree

RECORDS = "records-"
"""The name of a folder of TFRecords (``records-<N>``)."""


def source(train: Path, check: str) -> dict[str, Any]:
    """The config over ``train``: a class-folder tree, a file list (``.csv``) or TFRecords (a
    ``records-<N>`` folder: DALI's own reader on the CPU, crops and flips in its graph)."""
    if train.name.startswith(RECORDS):
        chain = [{"type": "random_resized_crop"}, {"type": "flip"}]
        records = {"type": "tfrecord", "path": str(train), "index_dir": str(train)}
        return {**config(train, check), "source": records, "backend": "cpu", "transforms": chain}
    made = config(train.parent if train.suffix == ".csv" else train, check)
    if train.suffix == ".csv":
        made["source"] = {"type": "file_list", "path": str(train), "check": check}
    return made


def file_list(root: Path, n: int) -> Path:
    """A file list (``path,label``) of the first ``n`` files of the ImageNet-sized tree."""
    train = tree(root, IMAGENET)
    listed = train.parent / f"list-{n}.csv"  # paths relative to it: train/<class>/<file>
    if not listed.exists():
        lines = ["path,label"]
        for c, klass in enumerate(sorted(train.iterdir())):
            names = sorted(p.name for p in klass.iterdir())
            lines += [f"{train.name}/{klass.name}/{name},{c}" for name in names]
            if len(lines) > n:
                break
        listed.with_suffix(".tmp").write_text("\n".join(lines[: n + 1]) + "\n")
        listed.with_suffix(".tmp").rename(listed)
    return listed


def records(root: Path, n: int) -> Path:
    """The first ``n`` files of the ImageNet-sized tree as TFRecords (made once)."""
    folder = root / f"{RECORDS}{n}"
    if not (folder / ".whole").exists():
        from daliaug.sources.file_list import FileListSource
        from daliaug.tools.convert import write_tfrecords

        samples = FileListSource(path=file_list(root, n)).samples()
        write_tfrecords(samples, folder, shards=max(1, n // 10_000), overwrite=True)
        (folder / ".whole").touch()
    return folder


def in_process_records(folder: Path, repeats: int) -> dict[str, Any]:
    """As :func:`in_process` over TFRecords: the states taken as one epoch runs through."""
    import daliaug
    from daliaug.outputs.dali_loader import DaliLoader

    started = time.perf_counter()
    ds = daliaug.make_dataset(source(folder, "full"), framework="numpy")
    made = time.perf_counter() - started
    batches = len(ds)
    ks = sorted({1, 10, 100, 1000, batches // 2, batches - 1} & set(range(1, batches)))
    states, t = {}, time.perf_counter()
    for k, _ in enumerate(ds, 1):
        if k in ks:
            states[k] = ds.get_state()
    per = (time.perf_counter() - t) / batches
    rows = []
    for k in ks:
        times = []
        for _ in range(repeats):
            ds.set_state(states[k])
            t = time.perf_counter()
            next(iter(ds))
            times.append(time.perf_counter() - t)
        rows.append({"k": k, "seconds": median(times), "all": times})
    loader = DaliLoader(source(folder, "full"))
    costs = []
    for i, _ in enumerate(loader):
        t = time.perf_counter()
        loader.pipeline.checkpoint()
        costs.append(time.perf_counter() - t)
        if i == 50:
            break
    return {
        "engine": str(daliaug.describe(ds)),
        "batches": batches,
        "make_dataset_s": made,
        "set_state": rows,
        "batch_running_s": per,
        "checkpoint_s": median(costs),
        "state_bytes": len(states[ks[-1]].to_json()),
        "states": {k: states[k].to_json() for k in (ks[0], ks[-1])},
    }


def in_process(train: Path, check: str, repeats: int) -> dict[str, Any]:
    """Seconds to the first batch after ``set_state`` at each k, and per batch running."""
    import daliaug

    started = time.perf_counter()
    ds = daliaug.make_dataset(source(train, check), framework="numpy")
    made = time.perf_counter() - started
    batches = len(ds)
    ks = sorted({0, 1, 10, 100, 1000, batches // 2, batches - 1} & set(range(batches)))
    rows = []
    for k in ks:
        times = []
        for _ in range(repeats):
            ds.set_state(ds.stream.state(0, k))
            t = time.perf_counter()
            next(iter(ds))
            times.append(time.perf_counter() - t)
        rows.append({"k": k, "seconds": median(times), "all": times})
    ds.set_state(ds.stream.state(0, 0))
    running = iter(ds)
    next(running)
    per_batch = []
    for _ in range(5):
        t = time.perf_counter()
        next(running)
        per_batch.append(time.perf_counter() - t)
    return {
        "engine": str(daliaug.describe(ds)),
        "batches": batches,
        "make_dataset_s": made,
        "set_state": rows,
        "batch_running_s": median(per_batch),
        "state_bytes": len(ds.stream.state(0, ks[-1]).to_json()),
    }


def child(train: str, check: str, state: str) -> dict[str, float]:
    """In this fresh process: ``make_dataset(config, state=...)`` and its first batch."""
    import daliaug

    t = time.perf_counter()
    ds = daliaug.make_dataset(source(Path(train), check), framework="numpy", state=state)
    made = time.perf_counter() - t
    next(iter(ds))
    return {"make_dataset_s": made, "first_batch_s": time.perf_counter() - t}


def fresh(train: Path, check: str, state: str) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.resume", "--child", str(train), "--state", state]
    command += ["--check", check]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _what_start(check: str) -> str:
    if check == "background":
        return "the listing; its files are checked beside the batches, on a thread of its own"
    return "the listing and its checks; the fresh processes below find them cached"


def report(n: int, result: dict[str, Any]) -> str:
    per = result["batch_running_s"]
    what = "A file list of" if result["file_list"] else "Class-folder tree of"
    if result.get("records"):
        what = "TFRecords (daliaug convert) of"
    lines = [
        f"# Time to the first batch after a restore at batch k, {n:,} files",
        "",
        f"{what} {n:,} hard links (bench.start), `check: {result['check']}`, batch 32, "
        "shuffled, "
        f"{result['engine']}, NumPy output; {result['batches']:,} batches per epoch. "
        f"make_dataset in the measuring process ({_what_start(result['check'])}): "
        f"{result['make_dataset_s']:.2f} s. "
        f"A batch in a running epoch: {per * 1000:.1f} ms. State: {result['state_bytes']} "
        "bytes of JSON.",
        *(
            [
                "",
                "DALI's own reader on the CPU; the states hold its checkpoints, taken as the "
                "epoch ran through (a batch's time above includes taking one); "
                f"`Pipeline.checkpoint()` after a batch: {result['checkpoint_s'] * 1000:.2f} ms.",
            ]
            if result.get("records")
            else []
        ),
        "",
        "| k | set_state -> first batch (s) | replaying k batches instead (s, k x a batch) |",
        "| ---: | ---: | ---: |",
    ]
    for row in result["set_state"]:
        lines.append(f"| {row['k']:,} | {row['seconds']:.3f} | {row['k'] * per:.1f} |")
    lines += [
        "",
        "Fresh process, `make_dataset(config, state=...)` then the first batch:",
        "",
        "| k | make_dataset (s) | to the first batch (s) |",
        "| ---: | ---: | ---: |",
    ]
    for row in result["fresh"]:
        lines.append(f"| {row['k']:,} | {row['make_dataset_s']:.2f} | {row['first_batch_s']:.2f} |")
    load = result.get("load")
    if load:
        lines += ["", f"Load average at the start: {load} (a shared 2-core VM)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--state", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file-list", action="store_true", help="a file list, not folders")
    parser.add_argument("--check", default="full", choices=("full", "background", "headers"))
    parser.add_argument("--records", action="store_true", help="TFRecords, DALI's own reader")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.check, args.state)))
        return
    from daliaug.cache import default_cache_dir

    root = default_cache_dir() / "bench"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    if args.records:
        train = records(root, args.files)
        result = {**in_process_records(train, args.repeats), "load": load, "records": True}
        states = result.pop("states")
        first_last = sorted(states.items())
    else:
        train = file_list(root, args.files) if args.file_list else tree(root, args.files)
        result = {**in_process(train, args.check, args.repeats), "load": load}
        import daliaug

        stream = daliaug.make_dataset(source(train, args.check), framework="numpy").stream
        ks = (result["set_state"][0]["k"], result["set_state"][-1]["k"])
        first_last = [(k, stream.state(0, k).to_json()) for k in ks]
    result.update(check=args.check, file_list=args.file_list)
    result["fresh"] = [{"k": k, **fresh(train, args.check, state)} for k, state in first_last]
    text = report(args.files, result)
    print(text)
    if args.out:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
        args.out.mkdir(parents=True, exist_ok=True)
        record = {"machine": machine.describe(), "files": args.files, **result}
        (args.out / f"resume-{stamp}.json").write_text(json.dumps(record, indent=1))
        (args.out / f"resume-{stamp}.md").write_text(text)


if __name__ == "__main__":
    main()
