"""The GPU claims of the READMEs and the documentation pages, written from the committed GPU
records.

Each claim block sits between ``<!-- gpu-claims:NAME:begin -->`` and
``<!-- gpu-claims:NAME:end -->``; ``python -m bench.claims`` writes every block again from the
records in :data:`RECORDS` (``--check``: exit 1 where a README differs from what it would
write). Ratios are taken at daliaug's defaults against DALI's pipeline at the same settings
(16 threads, ``hw_decoder_load`` 0.99: daliaug's defaults on that host), or say otherwise.
:func:`record_figures` lists every figure the records hold, for the test that no GPU figure of
the READMEs lies outside a block or the records (``tests/test_claims.py``).
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
RESULTS = ROOT / "bench" / "results"
SUITE = "gpu-suite-20261129-1834"
SELFTEST = "gpu-selftest-20261129-1839"
FIRST = "gpu-20261126-1714"
FIRST_C = "gpu-20261126-1720"
RECORDS = sorted(p.name for p in RESULTS.glob("gpu-*") if p.suffix in {".json", ".md", ".log"})
"""Every committed GPU record (results, tables, the runs' own records and logs)."""
DOCS = ROOT / "docs" / "pages"
FILES = (
    "README.md",
    "bench/README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md")),
)
"""Every page whose GPU figures are checked: the READMEs and the documentation site's pages."""
RUNS_PAGE = "docs/pages/gpu-host.md#gpu-what-was-run-where"
"""Where the GPU runs are told, which the other claims point to."""
WIDTH = 96
"""The README's line width."""
BLOCK = re.compile(
    r"(<!-- gpu-claims:(?P<name>[\w-]+):begin -->\n)(?P<body>.*?)"
    r"(<!-- gpu-claims:(?P=name):end -->)",
    re.S,
)
SAME = {"threads": 16, "hw_decoder_load": 0.99}
"""DALI's own pipelines' point at daliaug's defaults on the H200 (every usable core, 0.99)."""


def link(page: str, target: str) -> str:
    """``target`` (a path from the repository root, maybe with an anchor) as a link from
    ``page``: relative to its folder, or the anchor alone on the page itself."""
    path, _, anchor = target.partition("#")
    if path == page:
        return f"#{anchor}"
    relative = posixpath.relpath(path, posixpath.dirname(page) or ".")
    return relative + (f"#{anchor}" if anchor else "")


def load(name: str) -> Any:
    """A committed JSON record of :data:`RESULTS`."""
    return json.loads((RESULTS / f"{name}.json").read_text())


def rate(run: dict[str, Any]) -> str:
    return f"{run['images_per_s']:,.0f}"


def ratio(top: dict[str, Any], bottom: dict[str, Any]) -> str:
    return f"{top['images_per_s'] / bottom['images_per_s']:.2f}x"


def at(row: dict[str, Any], **point: float) -> dict[str, Any]:
    """The run of a row's sweep at ``point`` (its threads and load)."""
    (run,) = [r for r in row["sweep"] if all(r[k] == v for k, v in point.items())]
    return run


def best(row: dict[str, Any]) -> dict[str, Any]:
    return max(
        [*row["sweep"], *([row["defaults"]] if "defaults" in row else [])],
        key=lambda r: r["images_per_s"],
    )


def verdict(suite: dict[str, Any], prefix: str) -> tuple[str, str]:
    """The suite's own (measured, status) for the target starting with ``prefix``."""
    from bench.gpu_suite import verdicts

    (row,) = [(m, s) for t, m, s in verdicts(suite) if t.startswith(prefix)]
    return row


def first_b() -> tuple[str, str, str]:
    """The 2026-11-26 run's (b) figures, as its record prints them (no JSON: the run was cut
    off before it wrote one): GPU rates, CPU rates, ratio."""
    text = (RESULTS / f"{FIRST}.md").read_text()
    found = re.search(
        r"\| \(b\) [^|]*\| ([\d,]+ and [\d,]+) \(run 1\) \| ([\d,]+ and [\d,]+) \| ([\d.]+x) \|",
        text,
    )
    assert found, f"{FIRST}.md: no (b) row"
    return found.group(1), found.group(2), found.group(3)


def first_selftest() -> str:
    detail = load(f"{FIRST}-selftest")["checks"][3]["detail"]
    return detail.split(";")[0]


def wrap(text: str, bullet: bool = False) -> str:
    """``text`` as README lines of at most :data:`WIDTH` characters (a list item's indented)."""
    indent = {"initial_indent": "- ", "subsequent_indent": "  "} if bullet else {}
    lines = textwrap.fill(text, WIDTH, break_on_hyphens=False, break_long_words=False, **indent)
    return lines + "\n"


def readme_intro(page: str) -> str:
    return wrap(
        "DALI on an H200 GPU matched the same stored reference once (`daliaug selftest`, "
        f"2026-11-26, {first_selftest()}, without TensorFlow there); that run did not record "
        "which decoder took its JPEG windows, and the check has not passed on a GPU since (see "
        f"[GPU: what was run where]({link(page, RUNS_PAGE)}))."
    )


def readme_speed(page: str) -> str:
    s = load(SUITE)
    b, c = s["throughput"]["b"], s["throughput"]["c"]
    rn50, auto = at(b["dali-rn50"], **SAME), at(c["dali-autoaug-gpu"], **SAME)
    loader_b, jax_b = b["loader-gpu"]["defaults"], b["jax"]["defaults"]
    loader_c, jax_c = c["loader-gpu"]["defaults"], c["jax"]["defaults"]
    top, theirs = best(b["jax"]), best(b["dali-rn50"])
    return wrap(
        "On one NVIDIA H200 (16 cores, outputs left on the GPU, 2026-11-29, "
        f"[bench/results/{SUITE}.md]({link(page, f'bench/results/{SUITE}.md')})), at daliaug's "
        "defaults, the "
        f"ImageNet-style pipeline ran at {rate(loader_b)} images/s through `DaliLoader` and "
        f"{rate(jax_b)} through the JAX output: {ratio(loader_b, rn50)} and "
        f"{ratio(jax_b, rn50)} DALI's own hand-written ResNet-50 pipeline at the same settings "
        f"({rate(rn50)} images/s; best point against best point, {rate(top)} against "
        f"{rate(theirs)}, {ratio(top, theirs)}). The recipe ran at {rate(loader_c)} images/s "
        f"through `DaliLoader` and {rate(jax_c)} through JAX: {ratio(loader_c, auto)} and "
        f"{ratio(jax_c, auto)} DALI's own `auto_aug` RandAugment pipeline ({rate(auto)}). "
        "Which decoder took the JPEG windows is UNKNOWN in the suite's own verdict (no log line "
        "named them); that it was nvJPEG's hardware decoder, none a CPU decoder, is a later "
        "inference from nvImageCodec 0.9's source. Only DALI's own outputs and JAX ran there, "
        "not `make_dataset` through TensorFlow, and not this tree (see "
        f"[GPU: what was run where]({link(page, RUNS_PAGE)}))."
    )


def readme_runs(page: str) -> str:
    s, test = load(SUITE), load(SELFTEST)
    gpu_b, cpu_b, ratio_b = first_b()
    c_gpu, c_cpu = first_c("loader-gpu"), first_c("loader-cpu")
    b, c = s["throughput"]["b"], s["throughput"]["c"]
    rn50, auto = at(b["dali-rn50"], **SAME), at(c["dali-autoaug-gpu"], **SAME)
    windows = next(ch for ch in test["checks"] if ch["name"] == "JPEG decode windows on the GPU")
    seen = windows["values"]
    decoded, status = verdict(s, "decode windows on the CPU fallback")
    top, theirs = best(b["jax"]), best(b["dali-rn50"])
    first = (
        "**Run on the H200 on 2026-11-26** "
        f"([its record]({link(page, f'bench/results/{FIRST}.md')})): "
        "`daliaug selftest --require-gpu` (DALI on the GPU against the stored TensorFlow "
        f"reference: {first_selftest()}, within the parity tolerances), the GPU tests without "
        "TensorFlow, DALI's JAX and PyTorch GPU iterators through "
        "`make_dataset(framework=...)`, and `DaliLoader` at DALI's default 4 threads: (b) "
        f"{gpu_b} images/s, {ratio_b} DALI's CPU path ({cpu_b}); (c) {c_gpu:,.0f}, "
        f"{c_gpu / c_cpu:.2f}x ({c_cpu:,.0f}). That run did not count which decoder took the "
        "JPEG windows (DALI warned of fancy upsampling for every window); its figures stand only "
        "until a new GPU run replaces them."
    )
    second = (
        "**Run on the H200 on 2026-11-29** "
        f"([its record]({link(page, 'bench/results/gpu-20261129-1834-run.md')})): "
        "`bash bench/gpu_suite.sh` "
        "(tree 9a76c41) and the selftest. The window-decode canary passed; the selftest decoded "
        f"{seen['account']['unknown']} windows on the GPU, none failed, equal to libjpeg-turbo "
        f"without fancy upsampling (largest difference {seen['largest_difference']:.0f}). Which "
        "decoder took them is UNKNOWN in the suite's verdict (decode windows on the CPU "
        f"fallback: {decoded}, {status}: no log line named them, NVML read the JPEG engines at "
        f"{seen['jpeg_engine_percent']:.0f} % then); that they were the hardware decoder's is a "
        "later inference from nvImageCodec 0.9's source. At the defaults: (b) "
        f"{rate(b['jax']['defaults'])} images/s through the JAX output (target 10,000: met), "
        f"{ratio(b['jax']['defaults'], rn50)} DALI's rn50 pipeline at the same settings "
        f"({rate(rn50)}); best point against best point {ratio(top, theirs)} (target 0.9x: "
        f"missed); (c) {ratio(c['jax']['defaults'], auto)} DALI's `auto_aug` through JAX, "
        f"{ratio(c['loader-gpu']['defaults'], auto)} through `DaliLoader` (target 0.8x: met); "
        f"`model.fit` of ResNet-50 on JAX {100 * s['fit']['overhead']:.1f} % slower fed by "
        "`make_dataset` than by a constant batch (target 5 %: missed), timed by a step recorder "
        "without `async_safe`, so Keras waited for every step. The selftest's stored-reference "
        "check failed with an error that named no case (a remap shape assertion); DALI's source "
        "points at `elastic`, the only remap user. The selftest was cut at its 100 s in the "
        "suite and never finished."
    )
    changed = (
        "**Changed since the 2026-11-29 H200 run, never run on a GPU**: `elastic`'s two "
        "`remap`s and its cut's shape as int32, the stored-reference check that names each case "
        "that raises, the decoder count's attribution (windows no line names counted as the "
        "hardware decoder's, inferred), this round's lean graph, the fit benchmark's "
        "`async_safe` recorder (100 steps), NVML read for the suite's bound, XLA's command "
        "buffers off beside DALI, the GPU run's plan (the selftest given 200 s)."
    )
    targets = (
        "**This round's GPU targets: UNMEASURED** on a GPU since the lean graph landed (no GPU "
        "host was lent this session): (b) at least 0.9x DALI's rn50 pipeline at the defaults, "
        "(d) at least 5,000 images/s, the fit overhead at most 5 %."
    )
    return "".join(wrap(t, bullet=True) for t in (first, second, changed, targets))


def first_c(tool: str) -> float:
    """The 2026-11-26 (c) run's median images/s of ``tool``."""
    cases = load(FIRST_C)["workloads"]["c"]["cases"]
    (case,) = [c for c in cases if c["tool"] == tool]
    return float(case["images_per_s"]["median"])


def bench_targets(page: str) -> str:
    from bench.gpu_suite import verdicts

    s = load(SUITE)
    b = s["throughput"]["b"]
    rn50 = at(b["dali-rn50"], **SAME)
    text = wrap(
        "The suite's verdicts on its one GPU run (H200, 2026-11-29, tree 9a76c41, "
        f"[{SUITE}.md](results/{SUITE}.md)); its ratios are best point against best point. At "
        f"the defaults against DALI's rn50 at the same settings ({rate(rn50)} images/s): "
        f"`DaliLoader` {ratio(b['loader-gpu']['defaults'], rn50)}, the JAX output "
        f"{ratio(b['jax']['defaults'], rn50)}. Not run on a GPU since this round's lean graph "
        "(no GPU host was lent this session): UNMEASURED for this tree."
    )
    rows = [f"| {t} | {m} | {st} |" for t, m, st in verdicts(s)]
    return (
        text
        + "\n"
        + "\n".join(["| target | measured | status |", "| --- | ---: | --- |", *rows])
        + "\n"
    )


def bench_loads(page: str) -> str:
    s = load(SUITE)
    lines = [
        "| workload | pipeline | images/s at 0.65 | at 0.99 | CPU ms/image at 0.65 | at 0.99 |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for workload in ("b", "c"):
        for name, row in s["throughput"][workload].items():
            if name == "decoders":
                continue
            low, high = (at(row, threads=16, hw_decoder_load=v) for v in (0.65, 0.99))
            ms = [f"{1000 * r['cpu_seconds'] / r['images']:.2f}" for r in (low, high)]
            cells = [f"({workload})", name, rate(low), rate(high), *ms]
            lines.append("| " + " | ".join(cells) + " |")
    text = wrap(
        "Measured once on a GPU, at 16 threads (the H200's cores), `hw_decoder_load` 0.65 "
        f"against 0.99 ([{SUITE}.json](results/{SUITE}.json), 2 s clocks, one run each):"
    )
    return text + "\n" + "\n".join(lines) + "\n"


def bench_results(page: str) -> str:
    gpu_b, cpu_b, ratio_b = first_b()
    c_gpu, c_cpu = first_c("loader-gpu"), first_c("loader-cpu")
    b = load(SUITE)["throughput"]["b"]
    return wrap(
        "**GPU numbers**: the first run on an NVIDIA H200 (2026-11-26, 16 cores, no TensorFlow "
        f"there, [results/{FIRST}.md](results/{FIRST}.md)): `DaliLoader` on the GPU at DALI's "
        f"default 4 threads, (b) {gpu_b} images/s, {ratio_b} DALI's CPU path ({cpu_b}); (c) "
        f"{c_gpu:,.0f}, {c_gpu / c_cpu:.2f}x ({c_cpu:,.0f}); host-bound there. The second "
        f"(2026-11-29, [results/{SUITE}.md](results/{SUITE}.md)) ran `bash bench/gpu_suite.sh`: "
        f"(b) {rate(b['jax']['defaults'])} images/s through the JAX output at the defaults, its "
        'verdicts under "Targets there" above. The suite measures daliaug\'s `DaliLoader` and '
        "JAX rows, DALI's own rn50 and `auto_aug` pipelines and DALI's decoder alone on the GPU "
        "at 16 threads x `hw_decoder_load` 0.65 and 0.99, detection at the defaults, the canary, "
        "the selftest and the fit overhead; not DALI on the CPU, not GPU memory, not the 10x "
        "target against the CPU path (NOT MEASURED).",
        bullet=True,
    )


BLOCKS: dict[str, tuple[str, Callable[[str], str]]] = {
    "intro": ("docs/pages/benchmarks.md", readme_intro),
    "speed": ("docs/pages/benchmarks.md", readme_speed),
    "runs": ("docs/pages/gpu-host.md", readme_runs),
    "targets": ("bench/README.md", bench_targets),
    "loads": ("bench/README.md", bench_loads),
    "results": ("bench/README.md", bench_results),
}
"""Each block: the file it lives in and what writes its body."""


def rendered(path: str, text: str) -> str:
    """``text`` of README ``path`` with each of its blocks written again."""

    def body(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in BLOCKS or BLOCKS[name][0] != path:
            raise KeyError(f"{path}: unknown claim block {name!r}")
        return match.group(1) + BLOCKS[name][1](path) + match.group(4)

    found = {m["name"] for m in BLOCK.finditer(text)}
    missing = {n for n, (p, _) in BLOCKS.items() if p == path} - found
    if missing:
        raise KeyError(f"{path}: claim blocks missing: {sorted(missing)}")
    return BLOCK.sub(body, text)


def outside_blocks(text: str) -> str:
    """``text`` with each block (markers and body) cut to a paragraph break."""
    return BLOCK.sub("\n\n", text)


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, str):
        yield from (float(n.replace(",", "")) for n in FIGURE.findall(value))


FIGURE = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)")


def record_figures() -> set[str]:
    """Every figure the GPU records hold, as README text writes them: the numbers of their
    JSON (rounded as images/s, ratios and percentages are) and of their text."""
    shown: set[str] = set()
    for name in RECORDS:
        path = RESULTS / name
        text = path.read_text(errors="replace")
        values = list(_numbers(json.loads(text))) if path.suffix == ".json" else []
        values += [float(n.replace(",", "")) for n in FIGURE.findall(text)]
        for v in values:
            shown |= {f"{v:,.0f}", f"{v:.0f}", f"{v:.1f}", f"{v:.2f}", f"{v:g}"}
            if 0 < v < 1:
                shown |= {f"{100 * v:.1f}", f"{100 * v:.0f}"}
    return shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claims")
    parser.add_argument("--check", action="store_true", help="exit 1 where a README differs")
    args = parser.parse_args(argv)
    stale = []
    for path in FILES:
        file = ROOT / path
        old = file.read_text()
        new = rendered(path, old)
        if new != old:
            stale.append(path)
            if not args.check:
                file.write_text(new)
    if args.check and stale:
        print(f"GPU claims differ from the records: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
