"""Kits for the GPU host (Python 3.12, CUDA 13's JAX and PyTorch, no TensorFlow, no DALI, no
network), packed here as the 2026-11-29 run packed DALI's: the wheels resolved for Python 3.12,
installed into one folder, the other Pythons' extension modules and what no run needs removed,
``tar | xz -T2 -6``, cut in parts of :data:`PART_MIB` MiB that travel one per device call (with
the tracked tree, 8.5 MB: under the 64 MiB a call carries).

    python -m bench.gpu_kit dali            # DALI 2.4 (cuda120), pydantic, Keras, simplejpeg
    python -m bench.gpu_kit dali13          # the same with DALI's CUDA 13 build (cuda130), whose
                                            # CUDA libraries are the host's JAX's major version
    python -m bench.gpu_kit tf              # TensorFlow 2.21, the CUDA 12 wheels it loads, and
                                            # DALI's TF plugin built here for Python 3.12
    python -m bench.gpu_kit tf --dry-run    # everything but the large bytes (below)

It writes ``.gpu/<kit>/part-NN`` and ``.gpu/bin/`` (``recv``: ``bash .gpu/bin/recv KIT...``
checks each kit's parts and unpacks them into ``/tmp/gpu/site``; ``env``: sourced before every
later command; ``<kit>.sha256`` and ``<kit>.parts``) and prints the device calls with their
planned seconds (:func:`plan`). The plugin is an sdist compiled against the TensorFlow it
finds, so it is built here in a Python 3.12 virtual environment (``--python312``) holding the
kit's TensorFlow wheel and DALI (``--dali-site``: a ``site-packages`` whose ``nvidia/dali`` is
linked in, read-only, instead of downloaded: DALI's wheel is ``py3-none``).

``--dry-run`` resolves the whole kit (pip's ``--dry-run --report``: no wheel downloaded) and
sizes it (each wheel's ``Content-Length``), then runs every step on a stand-in, the kit's
wheels under :data:`STAND_IN_MIB` MiB: download, install, strip, pack, cut, ``recv`` into a
temporary folder as the host would, an import there with Python 3.12; the plan's sizes are the
whole kit's, the packed size estimated with :data:`XZ_PER_WHEEL` (measured here on
2026-12-05). Nothing is ever sent: the device calls are printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).parents[1]
GPU = ROOT / ".gpu"
PYTHON = "3.12"
PLATFORMS = (
    "manylinux_2_34_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "linux_x86_64",
)
PART_MIB = 55
"""A part: 55 MiB plus the tracked tree (8.5 MB) is under a call's 64 MiB."""
PART_S = 5.0
"""Seconds to send one 55 MiB part (the H200 run, 2026-11-29)."""
HOST_START_S = 70.0
"""The host's start to the first command (the same run)."""
UNPACK_MIB_S = 100.0
"""``xz -d | tar -x`` on the host, MiB of parts per second (294 MB in 3 s on 2026-11-29)."""
STAND_IN_MIB = 5.0
XZ_PER_WHEEL = {
    "tensorflow": 0.592,
    "nvidia-cublas-": 0.824,
    "nvidia-cudnn-": 0.721,
    "nvidia-cusparse-": 0.663,
    "nvidia-dali-": 0.557,
    "nvidia-": 0.744,
    "": 1.0,
}
"""The packed size over the wheel's, by name prefix (the first that matches), measured here
on 2026-12-05 with ``xz -6`` on every tenth 4 MiB block of the unpacked wheels (TensorFlow
2.21 without ``include/``); DALI's, the whole DALI kit's (280.5 MiB of parts from 504 MiB
downloaded, packed in full here); the other ``nvidia-`` wheels take the three CUDA wheels'
ratio by size, the rest (small, not measured) 1.0."""
PLUGIN = "nvidia-dali-tf-plugin-cuda120==2.4.0"
DALI = "nvidia-dali-cuda120==2.4.0"
DALI13 = "nvidia-dali-cuda130==2.4.0"
"""DALI's CUDA 13 build: the same ``nvidia/dali`` files, so a host unpacks one of the two kits."""
JAX_HOST = {"numpy", "setuptools", "wheel", "pip", "jax", "jaxlib", "scipy", "pillow"}
"""On the GPU host already (its JAX and PyTorch stack), never carried."""


@dataclasses.dataclass(frozen=True)
class Kit:
    """What one kit carries: ``requirements`` resolved for Python 3.12, less the packages the
    host has (``present``) and ``leave``, less the paths ``drop`` inside the unpacked site."""

    requirements: tuple[str, ...]
    present: frozenset[str] = frozenset(JAX_HOST)
    leave: frozenset[str] = frozenset()
    drop: tuple[str, ...] = ()
    plugin: bool = False
    check: str = "import yaml"
    """The import that shows the kit unpacked (the dry run's, with Python 3.12)."""


DALI_PRESENT = frozenset(
    JAX_HOST
    | {"pyyaml", "packaging", "six", "rich", "pygments", "markdown-it-py", "mdurl"}
    | {"h5py", "ml-dtypes", "absl-py", "protobuf"}
)
"""On the GPU host already besides JAX (Keras' and pydantic's dependencies there)."""
KITS = {
    "dali": Kit((DALI, "pydantic", "keras", "simplejpeg"), DALI_PRESENT, check="import pydantic"),
    "dali13": Kit(
        (DALI13, "pydantic", "keras", "simplejpeg"), DALI_PRESENT, check="import pydantic"
    ),
    "tf": Kit(
        ("tensorflow[and-cuda]==2.21.*",),
        # One GPU: MirroredStrategy there all-reduces nothing, so NCCL (loaded by TF only for
        # collectives) stays here; so does CUPTI, the profiler's.
        leave=frozenset({"nvidia-nccl-cu12", "nvidia-cuda-cupti-cu12"}),
        drop=("tensorflow/include", "tensorflow/lite"),
        plugin=True,
        check="import flatbuffers, gast, termcolor",
    ),
}


@dataclasses.dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    url: str
    size: int = 0
    """Bytes to download (the server's ``Content-Length``)."""

    @property
    def packed(self) -> float:
        """Its estimated share of the parts, bytes (:data:`XZ_PER_WHEEL`)."""
        ratio = next(r for prefix, r in XZ_PER_WHEEL.items() if self.name.startswith(prefix))
        return self.size * ratio


def _pip(*args: str) -> list[str]:
    """pip of this interpreter, for Python 3.12 wheels on the host's platforms."""
    where = [f"--platform={p}" for p in PLATFORMS]
    only = ["--only-binary=:all:", f"--python-version={PYTHON}", "--implementation=cp"]
    return [sys.executable, "-m", "pip", *args, "-q", *only, *where]


def resolve(kit: Kit) -> list[Wheel]:
    """The kit's wheels, as pip resolves them for Python 3.12 (nothing downloaded), less what
    the host has and what the kit leaves, each with its download size."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = _pip("install", "--dry-run", "--ignore-installed", f"--report={report}")
        command += [f"--target={tmp}/site", *kit.requirements]
        subprocess.run(command, check=True, capture_output=True)
        found = json.loads(report.read_text())["install"]
    wheels = [
        Wheel(w["metadata"]["name"].lower(), w["metadata"]["version"], w["download_info"]["url"])
        for w in found
    ]
    wheels = [w for w in wheels if w.name.replace("_", "-") not in kit.present | kit.leave]

    def sized(wheel: Wheel) -> Wheel:
        with urllib.request.urlopen(urllib.request.Request(wheel.url, method="HEAD")) as r:
            return dataclasses.replace(wheel, size=int(r.headers["Content-Length"]))

    with ThreadPoolExecutor(8) as pool:
        return sorted(pool.map(sized, wheels), key=lambda w: -w.size)


def download(wheels: list[Wheel], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pinned = [f"{w.name}=={w.version}" for w in wheels]
    subprocess.run(_pip("download", "--no-deps", f"--dest={folder}", *pinned), check=True)


def build_plugin(wheels: Path, python312: str, dali_site: Path | None) -> None:
    """DALI's TF plugin compiled here for Python 3.12 into ``wheels``: a 3.12 virtual
    environment with the kit's TensorFlow wheel and DALI (linked from ``dali_site``, else
    installed), then ``pip wheel`` of the plugin's sdist."""
    venv = GPU / "build-py312"
    shutil.rmtree(venv, ignore_errors=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # nothing written beside linked DALI
    subprocess.run([python312, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "-q"]
    (tf,) = wheels.glob("tensorflow-*.whl")
    subprocess.run([*pip, "install", str(tf), "astunparse", "gast", "dm-tree"], check=True, env=env)
    if dali_site is None:
        subprocess.run([*pip, "install", DALI], check=True, env=env)
    else:  # DALI's wheel is py3-none (a backend for each Python): its files linked, read-only
        (site,) = (venv / "lib").glob("python3.*/site-packages")
        (site / "nvidia").mkdir(exist_ok=True)
        for part in (dali_site / "nvidia").iterdir():
            if part.name not in ("dali_tf_plugin", "__pycache__"):
                (site / "nvidia" / part.name).symlink_to(part)
        for info in dali_site.glob("nvidia_*.dist-info"):
            if "tf_plugin" not in info.name:
                shutil.copytree(info, site / info.name)
    build = ["wheel", "--no-deps", "--no-build-isolation", f"--wheel-dir={wheels}", PLUGIN]
    subprocess.run([*pip, *build], check=True, env=env)


def install(wheels: Path, site: Path, drop: tuple[str, ...]) -> int:
    """The wheels installed into ``site`` for Python 3.12, less the other Pythons' extension
    modules, ``drop`` and byte code; its size in bytes."""
    shutil.rmtree(site, ignore_errors=True)
    files = [str(w) for w in sorted(wheels.glob("*.whl"))]
    target = ["install", "--no-deps", "--no-index", "--no-compile", f"--target={site}"]
    subprocess.run(_pip(*target, *files), check=True)
    tag = "cpython-" + PYTHON.replace(".", "")
    for path in list(site.rglob("*.cpython-3*.so")):
        if tag not in path.name:
            path.unlink()
    for path in [site / d for d in drop] + list(site.rglob("__pycache__")):
        shutil.rmtree(path, ignore_errors=True)
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())


def pack(site: Path, name: str, part_mib: int) -> int:
    """``site`` as ``tar | xz -T2 -6`` cut into ``.gpu/<name>/part-NN``, its sha256 and part
    count in ``.gpu/bin/``; the number of parts."""
    parts = GPU / name
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir(parents=True)
    (GPU / "bin").mkdir(exist_ok=True)
    script = (
        f"tar -C {site} -cf - . | xz -T2 -6 | split -b {part_mib}m -d -a 2 - {parts}/part- && "
        f"cat {parts}/part-* | sha256sum | cut -d' ' -f1 > {GPU}/bin/{name}.sha256"
    )
    subprocess.run(["bash", "-c", script], check=True)
    count = len(list(parts.glob("part-*")))
    (GPU / "bin" / f"{name}.parts").write_text(f"{count}\n")
    return count


RECV = """#!/usr/bin/env bash
# On the GPU host, in the repo root: bash .gpu/bin/recv KIT...  Each kit's parts (.gpu/KIT/),
# checked against .gpu/bin/KIT.sha256, unpacked into ${GPU_SITE:-/tmp/gpu/site} (bench/gpu_kit.py).
set -uo pipefail
site=${GPU_SITE:-/tmp/gpu/site}
mkdir -p "$site"
for kit in "$@"; do
    want=$(cat .gpu/bin/$kit.parts); missing=""
    for i in $(seq -f '%02g' 0 $((want-1))); do
        [ -f .gpu/$kit/part-$i ] || missing="$missing $i"
    done
    [ -z "$missing" ] || { echo "recv: $kit: missing parts:$missing (send them again)"; exit 3; }
    cmp -s .gpu/bin/$kit.sha256 "$site/.$kit" && { echo "recv: $kit already there"; continue; }
    got=$(cat .gpu/$kit/part-* | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(cat .gpu/bin/$kit.sha256)" ] || { echo "recv: $kit: checksum mismatch"; exit 4; }
    start=$SECONDS
    cat .gpu/$kit/part-* | xz -d | tar -x -C "$site" || exit 5
    cp .gpu/bin/$kit.sha256 "$site/.$kit"
    echo "recv: $kit: $want parts unpacked into $site in $((SECONDS-start)) s"
done
"""
ENV = """# source .gpu/bin/env   (on the GPU host, in the repo root; bench/gpu_kit.py)
export PYTHONPATH=${GPU_SITE:-/tmp/gpu/site}:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
for d in ${GPU_SITE:-/tmp/gpu/site}/nvidia/*/lib; do
    [ -d "$d" ] && LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}
done
export LD_LIBRARY_PATH
"""


def write_bin() -> None:
    (GPU / "bin").mkdir(parents=True, exist_ok=True)
    (GPU / "bin" / "recv").write_text(RECV)
    (GPU / "bin" / "recv").chmod(0o755)
    (GPU / "bin" / "env").write_text(ENV)


def plan(wheels: list[Wheel], part_mib: int) -> dict[str, float]:
    """The kit's figures: downloaded and (estimated) packed MiB, parts, seconds to send them
    and to unpack them on the host."""
    mib = 2**20
    packed = sum(w.packed for w in wheels) / mib
    parts = math.ceil(packed / part_mib)
    return {
        "download_mib": sum(w.size for w in wheels) / mib,
        "packed_mib": packed,
        "parts": parts,
        "send_s": parts * PART_S,
        "unpack_s": packed / UNPACK_MIB_S,
    }


def verify(name: str, kit: Kit, python312: str) -> str:
    """``recv`` run as the host runs it, into a temporary site, then the kit's import there
    with Python 3.12: what it printed."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GPU_SITE": tmp}
        said = subprocess.run(
            ["bash", ".gpu/bin/recv", name], cwd=GPU.parent, env=env, capture_output=True, text=True
        )
        assert said.returncode == 0, said.stdout + said.stderr
        imported = [python312, "-c", kit.check]
        subprocess.run(imported, env={**os.environ, "PYTHONPATH": tmp}, check=True)
        return said.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_kit")
    parser.add_argument("kit", choices=sorted(KITS))
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--part-mib", type=int, default=PART_MIB)
    found = sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    here = str(found[-1]) if found else "python3.12"
    parser.add_argument("--python312", default=here, help="a Python 3.12 here")
    parser.add_argument("--dali-site", type=Path, help="a site-packages holding DALI 2.4.0")
    args = parser.parse_args(argv)
    kit = KITS[args.kit]
    wheels = resolve(kit)
    figures = plan(wheels, args.part_mib)
    carried = [w for w in wheels if not args.dry_run or w.size < STAND_IN_MIB * 2**20]
    folder = GPU / f"wheels-{args.kit}"
    shutil.rmtree(folder, ignore_errors=True)
    download(carried, folder)
    if kit.plugin and not args.dry_run:
        build_plugin(folder, args.python312, args.dali_site)
    name = f"{args.kit}-dry" if args.dry_run else args.kit
    site = GPU / f"site-{name}"
    unpacked = install(folder, site, kit.drop)
    started = time.perf_counter()
    parts = pack(site, name, 1 if args.dry_run else args.part_mib)
    packing = time.perf_counter() - started
    write_bin()
    shutil.rmtree(site)
    print(f"{args.kit} kit: {len(wheels)} wheels, {figures['download_mib']:,.0f} MiB to download")
    for w in wheels[:12]:
        print(
            f"  {w.name}=={w.version}: {w.size / 2**20:,.1f} MiB, packed ~{w.packed / 2**20:,.0f}"
        )
    print(
        f"packed ~{figures['packed_mib']:,.0f} MiB (estimated): {figures['parts']:.0f} parts of "
        f"{args.part_mib} MiB, ~{figures['send_s']:.0f} s to send, ~{figures['unpack_s']:.0f} s "
        "to unpack"
    )
    what = "stand-in (wheels under 5 MiB)" if args.dry_run else "kit"
    print(
        f"{what}: {len(carried)} wheels, {unpacked / 2**20:,.1f} MiB unpacked, {parts} parts "
        f"in .gpu/{name}/, packed in {packing:.1f} s"
    )
    if args.dry_run:
        print(verify(name, kit, args.python312), f"({kit.check}: ok with Python 3.12)")
    for i in range(parts):
        print(f'  device call: carry [".gpu/bin", ".gpu/{name}/part-{i:02d}"]  command: ls .gpu')
    print(f'then: carry [".gpu/bin"]  command: bash .gpu/bin/recv {name}  (and the other kits)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
