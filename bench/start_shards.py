"""Time to the first batch over N WebDataset shards on a real S3 server (``rclone serve s3`` on
127.0.0.1, issue 59), with and without the shards' listing files, against a listing of the
bucket and DALI's own ``fn.readers.webdataset`` over the same shards on the local disk.

    python -m bench.start_shards [--shards 100 1000 10000] [--per-shard 100] --out bench/results

The shards are N hard links to one tar of ``--per-shard`` samples (a 32 x 32 JPEG and its
class each; links cost folder entries, not bytes), in the bucket ``data`` under ``train/``.
Each start is a fresh process (imports not timed): ``make_dataset(config)`` then its first
batch, where the clock stops (its iterator or pipeline torn down after; records before
2026-12-07 12:15 timed the teardown too). *First start*: a fresh, empty ``DALIAUG_CACHE``
(a new host); *later start*: that cache kept. *listing files*: the folder's listing file
written once beside the shards by ``daliaug check CONFIG --write-listings`` (timed, as the
one-off it is); *shards read*: none there.
Each start counts the requests its S3 client made and the bytes of its GETs until the first
batch.
*bucket listing*: ``list_objects_v2`` over the prefix, the least any start asks of the server;
*DALI webdataset*: ``fn.readers.webdataset`` over the local shard files with their ``wds2idx``
index files, built and run once; *DALI webdataset (S3)*: the same over the shards' ``s3://``
paths on the same server (DALI's own S3 client). Writes ``start-shards-<date>.json``
and ``.md``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from bench import machine
from daliaug.sources.webdataset import LISTING_NAME

SIZE = 32
BATCH = 32
KEYS = {"AWS_ACCESS_KEY_ID": "benchkey", "AWS_SECRET_ACCESS_KEY": "benchsecret12345"}


def template(folder: Path, per_shard: int) -> tuple[Path, Path]:
    """One shard of ``per_shard`` samples (image ``k``: a 32 x 32 JPEG of its own colours,
    class ``k % 10``) and its ``wds2idx`` index."""
    import numpy as np
    from PIL import Image

    shard, lines = folder / "template.tar", []
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tar:
        for k in range(per_shard):
            pixels = np.random.default_rng(k).integers(0, 255, (SIZE, SIZE, 3), np.uint8)
            encoded = io.BytesIO()
            Image.fromarray(pixels).save(encoded, "JPEG", quality=90)
            line = []
            for ext, data in (("jpg", encoded.getvalue()), ("cls", str(k % 10).encode())):
                info = tarfile.TarInfo(f"{k:06d}.{ext}")
                info.size = len(data)
                offset = tar.offset + tarfile.BLOCKSIZE  # (after its header block)
                tar.addfile(info, io.BytesIO(data))
                line.append(f"{ext} {offset} {len(data)} {k:06d}.{ext}")
            lines.append(" ".join(line))
    index = folder / "template.idx"
    index.write_text(f"v1.2 {len(lines)}\n" + "\n".join(lines) + "\n")
    return shard, index


def bucket(root: Path, n: int, per_shard: int) -> Path:
    """The server's root, its bucket ``data`` holding ``train/`` with ``n`` shards (made once,
    kept; a marker says it is whole) and nothing else."""
    folder = root / f"shards-{n}x{per_shard}"
    train = folder / "data" / "train"
    if (folder / ".whole").exists():
        (train / LISTING_NAME).unlink(missing_ok=True)  # (an earlier run's)
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    train.mkdir(parents=True)
    shard, _ = template(folder, per_shard)
    for i in range(n):
        os.link(shard, train / f"shard-{i:05d}.tar")
    (folder / ".whole").touch()
    return folder


class Server:
    """``rclone serve s3`` over ``root`` on a free loopback port."""

    def __init__(self, root: Path) -> None:
        rclone = shutil.which("rclone") or str(Path(sys.executable).parent / "rclone")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        address, keys = f"127.0.0.1:{self.port}", ",".join(KEYS.values())
        self.process = subprocess.Popen(
            [rclone, "serve", "s3", str(root), "--addr", address, "--auth-key", keys],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("rclone serve s3 did not start")

    def env(self) -> dict[str, str]:
        return {
            **KEYS,
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def config(path: str) -> dict[str, Any]:
    return {
        "source": {"type": "webdataset", "path": path},
        "image_size": SIZE,
        "batch_size": BATCH,
        "shuffle": True,
        "seed": 0,
        "label_mode": "int",
    }


def child(tool: str, path: str) -> dict[str, Any]:
    """One start of ``tool`` in this (fresh) process: seconds to the first batch, and the S3
    requests it made: in all, and its GETs of whole objects (shards, listing files) and of
    byte ranges (images), with their bytes."""
    calls = dict.fromkeys(("requests", "whole_gets", "whole_bytes", "range_gets", "range_bytes"), 0)
    if tool == "daliaug":
        import daliaug
        from bench.start import _import_all
        from daliaug.sources import storage

        _import_all()
        events = storage._client().meta.events

        def counted(http_response: Any, parsed: Any, model: Any, **_: Any) -> None:
            calls["requests"] += 1
            if model.name == "GetObject" and "ContentLength" in parsed:
                kind = "range" if "ContentRange" in parsed else "whole"
                calls[f"{kind}_gets"] += 1
                calls[f"{kind}_bytes"] += int(parsed["ContentLength"])

        events.register("after-call.s3", counted)

        def start() -> Any:
            iterator = iter(daliaug.make_dataset(config(path)))
            return iterator, next(iterator)
    elif tool in ("dali", "dali-s3"):
        from nvidia.dali import fn, pipeline_def

        shards = sorted(str(p) for p in Path(path).glob("*.tar"))
        if tool == "dali-s3":  # the same shards, read from the server by DALI's own S3 client
            shards = [f"s3://data/train/{Path(shard).name}" for shard in shards]
        index = str(Path(path).parents[1] / "template.idx")

        @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)
        def reader() -> Any:
            jpg, cls = fn.readers.webdataset(
                paths=shards,
                index_paths=[index] * len(shards),
                ext=["jpg", "cls"],
                random_shuffle=True,
                seed=0,
            )
            return fn.resize(fn.decoders.image(jpg), size=(SIZE, SIZE)), cls

        def start() -> Any:
            pipe = reader()
            pipe.build()
            return pipe, pipe.run()
    else:  # the bucket listing
        import boto3

        client = boto3.client("s3")

        def start() -> Any:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket="data", Prefix="train/")
            for page in pages:
                calls["requests"] += 1
                len(page.get("Contents", []))

    t0, cpu0 = time.perf_counter(), time.process_time()
    started = start()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    del started  # (the iterator or pipeline torn down once the clock has stopped)
    return {"seconds": seconds, "cpu": cpu, **calls}


def run(tool: str, path: str, env: dict[str, str]) -> dict[str, Any]:
    """One start of ``tool`` in a fresh process with ``env``."""
    return machine.run_worker("bench.start_shards", "--child", tool, "--path", path, env=env)


def write_listings(env: dict[str, str], cache: Path) -> dict[str, Any]:
    """``daliaug check CONFIG --write-listings`` over the bucket, timed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config("s3://data/train"), f)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "daliaug.cli", "check", f.name, "--write-listings"],
        env={**os.environ, **env, "DALIAUG_CACHE": str(cache), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        check=False,
    )
    Path(f.name).unlink()
    if done.returncode:
        raise RuntimeError(f"--write-listings failed:\n{done.stderr[-3000:]}")
    return {"seconds": time.perf_counter() - t0}


def measure(n: int, per_shard: int, root: Path, repeats: int) -> dict[str, Any]:
    """Every start over ``n`` shards: the bucket listing and DALI's reader, daliaug's first
    and later starts without listing files, then with them."""
    t0 = time.perf_counter()
    folder = bucket(root, n, per_shard)
    row: dict[str, Any] = {"shards": n, "samples": n * per_shard}
    row["made_seconds"] = time.perf_counter() - t0
    server = Server(folder)
    env = server.env()
    try:
        runs = [run("list", "", env) for _ in range(repeats)]
        row["bucket listing"] = {"later": median(r["seconds"] for r in runs), **runs[0]}
        local = str(folder / "data" / "train")
        runs = [run("dali", local, {}) for _ in range(repeats)]
        row["dali webdataset"] = {"later": median(r["seconds"] for r in runs)}
        runs = [run("dali-s3", local, env) for _ in range(repeats)]
        row["dali webdataset s3"] = {"later": median(r["seconds"] for r in runs)}
        with tempfile.TemporaryDirectory(prefix="daliaug-start-shards-") as scratch:
            for mode in ("shards read", "listing files"):
                if mode == "listing files":
                    row["write listings"] = write_listings(env, Path(scratch) / "writer")
                cache = {**env, "DALIAUG_CACHE": str(Path(scratch) / mode)}
                first = run("daliaug", "s3://data/train", cache)
                later = [run("daliaug", "s3://data/train", cache) for _ in range(repeats)]
                row[mode] = {
                    "first": first["seconds"],
                    "later": median(r["seconds"] for r in later),
                    "later_cpu": median(r["cpu"] for r in later),
                    **{f"first_{k}": v for k, v in first.items() if k != "seconds"},
                    **{f"later_{k}": v for k, v in later[0].items() if k != "seconds"},
                }
                print(f"{n} shards, {mode}: {row[mode]}", flush=True)
    finally:
        server.stop()
    row["shard_bytes"] = (folder / "template.tar").stat().st_size
    return row


def report(rows: list[dict[str, Any]], per_shard: int) -> str:
    head = [
        "shards (samples)",
        "bucket listing",
        "DALI webdataset (local)",
        "shards read: first",
        "later",
        "listing files: first",
        "later",
        "first / DALI",
        "later / DALI",
        "DALI webdataset (S3)",
        "first / DALI (S3)",
        "later / DALI (S3)",
        "writing the listings (once)",
        "first start: whole-object GET MiB, shards read / listing files",
        "requests",
    ]
    lines = [
        "# Time to the first batch over WebDataset shards on S3 (issue 59)",
        "",
        f"N shards on `rclone serve s3` (127.0.0.1), each {per_shard} samples (a {SIZE} x {SIZE} "
        f"JPEG and its class), image_size {SIZE}, batch {BATCH}; seconds from `make_dataset` "
        "to the first batch (its iterator or pipeline torn down after the clock stops), imports "
        "excluded, each start a fresh process. First start: fresh "
        "`DALIAUG_CACHE` (a new host); later: the median of the later starts (cache kept). "
        "*shards read*: no listing files beside the shards (each shard read whole on a first "
        "start); *listing files*: `daliaug check CONFIG --write-listings` run once before "
        "(its time in its own column). Whole-object GETs: shards or listing files (the "
        "first batch's images are read by range, in both); requests: every S3 request of the "
        "start up to its first batch. DALI's `fn.readers.webdataset` reads the same shards "
        "from the local disk, and again from the same server (*S3*: its own S3 client, "
        "`s3://` paths), with their `wds2idx` index files.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        dali, dali_s3 = r["dali webdataset"]["later"], r["dali webdataset s3"]["later"]
        whole, files = r["shards read"], r["listing files"]
        mib = f"{whole['first_whole_bytes'] / 2**20:.1f} / {files['first_whole_bytes'] / 2**20:.2f}"
        requests = f"{whole['first_requests']:,} / {files['first_requests']:,}"
        cells = [
            f"{r['shards']:,} ({r['samples']:,})",
            f"{r['bucket listing']['later']:.2f}",
            f"{dali:.2f}",
            f"{whole['first']:.2f}",
            f"{whole['later']:.2f}",
            f"{files['first']:.2f}",
            f"{files['later']:.2f}",
            f"{files['first'] / dali:.1f}x",
            f"{files['later'] / dali:.1f}x",
            f"{dali_s3:.2f}",
            f"{files['first'] / dali_s3:.2f}x",
            f"{files['later'] / dali_s3:.2f}x",
            f"{r['write listings']['seconds']:.1f}",
            mib,
            requests,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[100, 1000, 10_000])
    parser.add_argument("--per-shard", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.path)))
        return
    from daliaug.cache import default_cache_dir

    root = default_cache_dir() / "bench"
    rows = [measure(n, args.per_shard, root, args.repeats) for n in args.shards]
    text = report(rows, args.per_shard)
    print(text)
    if args.out:
        record = {"machine": machine.describe(), "per_shard": args.per_shard, "rows": rows}
        machine.write_record(args.out, "start-shards", record, text)


if __name__ == "__main__":
    main()
