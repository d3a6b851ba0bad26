"""Results as a markdown table, the issue's targets as PASS/MISS, and PNG plots.

Every number comes from the run's JSON; a target whose tools did not run is ``NOT MEASURED``,
and a ``--quick`` run (windows of a fraction of a second, a smoke test) judges none: its targets
are ``NOT JUDGED``.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

DEFAULT = ("daliaug",)
"""daliaug's default path as a user gets it: ``make_dataset`` with ``backend: auto``."""
DAL_CPU = ("dali-cpu", "loader-cpu", "daliaug-tf", "daliaug")
"""daliaug's CPU paths; the best of them (median images/s) is "daliaug's best CPU path"."""
DAL_GPU = ("dali-gpu", "loader-gpu")


@dataclass(frozen=True)
class Target:
    workload: str
    text: str
    numerator: tuple[str, ...]  # the best median of these tools...
    denominator: tuple[str, ...]  # ...over the best median of these
    required: float
    any_threads: bool = False  # best over the scaling cases too, not only the defaults
    metric: str = "images_per_s"
    """``images_per_s`` (numerator over denominator), or ``cpu_ms_per_image`` or
    ``peak_rss_mb`` (denominator over numerator: less is better)."""


TARGETS = {
    "cpu": [
        Target("a", "default vs tf.data + Keras layers", DEFAULT, ("tfdata-layers",), 3),
        Target("a", "default vs ImageDataGenerator, 1 process", DEFAULT, ("idg",), 8),
        Target("b", "default vs hand-tuned tf.data", DEFAULT, ("tfdata-tuned",), 1.5),
        Target(
            "b",
            "default vs hand-tuned tf.data, CPU time per image",
            DEFAULT,
            ("tfdata-tuned",),
            1.5,
            metric="cpu_ms_per_image",
        ),
        Target("b", "default vs DALI decoding alone on the CPU", DEFAULT, ("decode-cpu",), 0.5),
        Target(
            "b",
            "default vs hand-tuned tf.data, peak RSS",
            DEFAULT,
            ("tfdata-tuned",),
            1,
            metric="peak_rss_mb",
        ),
        Target("b", "daliaug DALI-GPU vs best daliaug CPU path", DAL_GPU, DAL_CPU, 10),
        Target("c", "default vs tf.data + Keras 3 layers", DEFAULT, ("keras-randaug",), 3),
        Target(
            "c",
            "daliaug DALI-CPU vs hand-written DALI auto_aug",
            ("dali-cpu",),
            ("dali-autoaug-cpu",),
            0.8,
        ),
    ],
    "gpu": [
        Target(
            "b",
            "daliaug DALI-GPU vs best DALI-CPU (any thread count)",
            ("loader-gpu",),
            ("loader-cpu",),
            10,
            any_threads=True,
        ),
        Target(
            "b",
            "daliaug DALI-GPU vs nvJPEG decode alone (fraction of the ceiling)",
            ("loader-gpu",),
            ("decode-gpu",),
            0,
        ),
    ],
    # What users run on a GPU host; no required ratio yet (never measured by this project):
    # the ratios are reported.
    "gpu-tf": [
        Target(
            "b",
            "make_dataset on the GPU vs hand-tuned tf.data",
            ("dali-gpu",),
            ("tfdata-tuned",),
            0,
        ),
        Target(
            "b",
            "make_dataset on the GPU vs the decoder alone, same windows (share of the ceiling)",
            ("dali-gpu",),
            ("decode-gpu-roi",),
            0,
        ),
        Target(
            "b",
            "make_dataset feeding a ResNet-50 step vs make_dataset alone",
            ("dali-gpu-fit",),
            ("dali-gpu",),
            0,
        ),
    ],
}


def main_cases(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in workload["cases"] if c["group"] == "main"]


def _rate(case: dict[str, Any]) -> float | None:
    return case["images_per_s"]["median"] if "images_per_s" in case else None


def _best(
    workload: dict[str, Any], tools: tuple[str, ...], any_threads: bool = False
) -> dict[str, Any] | None:
    cases = workload["cases"] if any_threads else main_cases(workload)
    measured = [c for c in cases if c["tool"] in tools and _rate(c)]
    return max(measured, key=lambda c: _rate(c) or 0.0, default=None)


def _value(case: dict[str, Any], metric: str) -> float:
    value = case[metric]
    return value["median"] if isinstance(value, dict) else value


def ratio_of(numerator: float, denominator: float) -> float:
    """``numerator / denominator``; NaN where the denominator read as zero (a window too short
    for the clock), which the tables print as ``nan`` and no target passes on."""
    return numerator / denominator if denominator else math.nan


QUICK = "NOT JUDGED (--quick)"
"""The verdict of every target of a ``--quick`` run."""


def _verdict(ratio: float, required: float, quick: bool) -> str:
    if quick:
        return QUICK
    if not required:
        return "REPORTED"
    return "PASS" if ratio >= required else "MISS"


def evaluate(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of the suite with its measured ratio (of medians, same run) and verdict
    (none for a ``--quick`` run)."""
    rows = []
    for target in TARGETS[result["suite"]]:
        workload = result["workloads"].get(target.workload)
        top = _best(workload, target.numerator, target.any_threads) if workload else None
        bottom = _best(workload, target.denominator, target.any_threads) if workload else None
        row = {"workload": target.workload, "target": target.text, "required": target.required}
        if top is None or bottom is None:
            missing = target.numerator if top is None else target.denominator
            row.update(status="NOT MEASURED", detail=f"no result for {', '.join(missing)}")
            rows.append(row)
            continue
        unit = {"images_per_s": "images/s", "cpu_ms_per_image": "CPU ms/image"}
        if target.metric == "images_per_s":
            ratio = _rate(top) / _rate(bottom)
            paired = sorted(  # repeat by repeat: both were measured in the same round
                t["images_per_s"] / b["images_per_s"]
                for t, b in zip(top["samples"], bottom["samples"], strict=False)
            )
        else:  # less is better
            ratio = ratio_of(_value(bottom, target.metric), _value(top, target.metric))
            paired = [ratio]
        cpu = ratio_of(bottom["cpu_ms_per_image"]["median"], top["cpu_ms_per_image"]["median"])
        row.update(
            ratio=ratio,
            cpu_ratio=cpu,
            paired=(median(paired), paired[0], paired[-1]),
            status=_verdict(ratio, target.required, result.get("quick", False)),
            detail=f"{top['label']} {_value(top, target.metric):,.3g} / {bottom['label']} "
            f"{_value(bottom, target.metric):,.3g} {unit.get(target.metric, 'MiB peak RSS')}",
        )
        rows.append(row)
    return rows


def _case_row(case: dict[str, Any], reference: float | None) -> str:
    if "images_per_s" not in case:
        reason = (case.get("reason") or case["status"]).strip().splitlines()[-1]
        return f"| {case['label']} | {case['threads']} | {case['status']}: {reason} | | | | |"
    rate, cpu = case["images_per_s"], case["cpu_ms_per_image"]["median"]
    versus = f"{rate['median'] / reference:.2f}x" if reference else ""
    memory = f"{case['peak_rss_mb']:,.0f}"
    if case.get("peak_gpu_mb") is not None:
        memory += f" (GPU {case['peak_gpu_mb']:,.0f})"
    return (
        f"| {case['label']} | {case['threads']} | {rate['median']:,.0f} | "
        f"{rate['q1']:,.0f} – {rate['q3']:,.0f} | {cpu:.3f} | {memory} | {versus} |"
    )


def workload_table(workload: dict[str, Any], reference_tool: str) -> list[str]:
    reference = next((c for c in main_cases(workload) if c["tool"] == reference_tool), None)
    base = _rate(reference) if reference else None
    n = max((len(c["samples"]) for c in workload["cases"]), default=0)
    ref_label = reference["label"] if reference else reference_tool
    return [
        f"| tool | threads | images/s (median of {n}) | IQR | CPU ms/image | peak RSS MiB | "
        f"vs {ref_label} |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *(_case_row(c, base) for c in main_cases(workload)),
    ]


def scaling_table(workload: dict[str, Any]) -> list[str]:
    curves: dict[str, dict[str, float]] = {}
    for case in workload["cases"]:
        rate = _rate(case)
        if rate and case["parallelism"] not in ("none", "tf.data AUTOTUNE"):
            curves.setdefault(f"{case['label']} ({case['parallelism']})", {})[
                str(case["threads"])
            ] = rate
    curves = {name: points for name, points in curves.items() if len(points) > 1}
    settings = sorted(
        {s for c in curves.values() for s in c},
        key=lambda s: (not s.isdigit(), int(s or 0) if s.isdigit() else 0),
    )
    if not curves:
        return []
    return [
        "| tool | " + " | ".join(settings) + " |",
        "| --- |" + " ---: |" * len(settings),
        *(
            f"| {name} | " + " | ".join(f"{c[s]:,.0f}" if s in c else "" for s in settings) + " |"
            for name, c in curves.items()
        ),
    ]


def stages_table(stages: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| stage (cumulative) | CPU ms/image | this stage | images/s |",
        "| --- | ---: | ---: | ---: |",
    ]
    previous = 0.0
    for s in stages:
        compare = s["stage"].startswith("(compare)")
        step = "" if compare else f"{s['cpu_ms_per_image'] - previous:+.3f}"
        rows.append(
            f"| {s['stage']} | {s['cpu_ms_per_image']:.3f} | {step} | {s['images_per_s']:,.0f} |"
        )
        if not compare:
            previous = s["cpu_ms_per_image"]
    return rows


def _uncommitted(machine: dict[str, Any]) -> str:
    files = machine.get("uncommitted", [])
    return f" with uncommitted changes to {', '.join(files)}" if files else ""


def _load(values: list[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def markdown(result: dict[str, Any], images: dict[str, str]) -> str:
    m = result["machine"]
    gpu = m["gpu"] or "none"
    lines = [
        f"# daliaug benchmark: {result['suite']} suite, {m['date']}",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gib']} GiB RAM, GPU: {gpu}; {m['platform']}",
        f"- Load average (1/5/15 min) before: {_load(result['loadavg_before'])}, after: "
        f"{_load(result['loadavg_after'])} (other jobs shared the machine)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
        f"- Commit {m['commit']}{_uncommitted(m)}; command: `{result['command']}`",
        "- images/s of materialised batches (batch 128), warm-up excluded, repeats interleaved "
        "with the tool order rotated; CPU ms/image counts the tool's process and its workers; "
        "peak RSS sums the process tree.",
    ]
    if result["suite"] == "cpu" and m["gpu"] is None:
        lines.append(
            "- **GPU numbers are not measured yet**: this machine has no GPU. "
            "`bench/gpu_suite.sh` measures them on a GPU host."
        )
    for name, workload in result["workloads"].items():
        lines += ["", f"## {workload['title']}", ""]
        lines += workload_table(workload, "idg" if result["suite"] == "cpu" else "loader-cpu")
        lines += [
            "",
            f"Load average before/after: {_load(workload['loadavg_before'])} → "
            f"{_load(workload['loadavg_after'])}; one epoch = "
            f"{workload['data']['epoch_samples']:,} samples; warm-up "
            f"{workload['timing']['warmup']} batches and {workload['timing']['warmup_seconds']} s, "
            f"timed window {workload['timing']['seconds']} s.",
        ]
        if name in images:
            lines += ["", f"![{name}]({images[name]})"]
    lines += [
        "",
        "## Targets (ratios of medians, same run)",
        "",
        '"default" is daliaug\'s default path as a user gets it: `make_dataset` with '
        "`backend: auto`. Ratios of median images/s (more is better), or of median CPU "
        "ms/image and peak RSS taken the other way round (less is better), so that 1.5x "
        "always means 1.5 times better. Two more views of the same samples: the ratio repeat "
        "by repeat (both tools were measured in the same round; median and range), and the "
        "ratio of CPU time per image, the work each tool does per image, which the machine's "
        "other load disturbs less than images/s. Targets are judged on the ratio of medians.",
        "",
        "| workload | target | required | measured | result | per repeat | CPU-time ratio |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for row in evaluate(result):
        measured = f"{row['ratio']:.2f}x" if "ratio" in row else ""
        cpu = f"{row['cpu_ratio']:.2f}x" if "cpu_ratio" in row else ""
        paired = "{:.2f}x ({:.2f}-{:.2f})".format(*row["paired"]) if "paired" in row else ""
        if row.get("paired") and row["paired"][1] == row["paired"][2]:
            paired = ""  # a peak or a CPU median: one value per case, no repeats to pair
        lines.append(
            f"| {row['workload']} | {row['target']} ({row['detail']}) | {row['required']:g}x | "
            f"{measured} | {row['status']} | {paired} | {cpu} |"
        )
    scaling = {n: scaling_table(w) for n, w in result["workloads"].items()}
    if any(scaling.values()):
        lines += [
            "",
            "## Scaling: images/s against threads / workers",
            "",
            "The default settings come from the main round above; the other points from a second "
            "round (3 repeats, interleaved), so a curve mixes two rounds' machine load.",
            "",
        ]
        for name, table in scaling.items():
            if table:
                lines += [f"Workload ({name}):", "", *table, ""]
        if "scaling" in images:
            lines += [f"![scaling]({images['scaling']})"]
    if result.get("stages"):
        stages = result["stages"]
        lines += [
            "",
            f"## Where daliaug's DALI CPU time goes ({stages['threads']} DALI thread)",
            "",
        ]
        for name, rows in stages["workloads"].items():
            lines += [f"Workload ({name}):", "", *stages_table(rows), ""]
    if result.get("tf_stages"):
        lines += ["", "## Where the TF backend's CPU time goes (1 thread)", ""]
        for name, rows in result["tf_stages"]["workloads"].items():
            lines += [f"Workload ({name}):", "", *stages_table(rows), ""]
    return "\n".join(lines) + "\n"


def plot_bars(result: dict[str, Any], name: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [c for c in main_cases(result["workloads"][name]) if _rate(c)]
    labels = [f"{c['label']} ({c['threads']})" for c in cases]
    medians = [c["images_per_s"]["median"] for c in cases]
    errors = [
        [m - c["images_per_s"]["q1"] for m, c in zip(medians, cases, strict=True)],
        [c["images_per_s"]["q3"] - m for m, c in zip(medians, cases, strict=True)],
    ]
    colours = ["tab:green" if c["tool"] in DAL_CPU + DAL_GPU else "tab:grey" for c in cases]
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(cases) + 1.5))
    ax.barh(labels, medians, xerr=errors, color=colours)
    ax.invert_yaxis()
    ax.set_xlabel("images/s (median, IQR)")
    ax.set_title(result["workloads"][name]["title"], fontsize=10)
    for y, m in enumerate(medians):
        ax.text(m, y, f" {m:,.0f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scaling(result: dict[str, Any], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, w in result["workloads"].items() if scaling_table(w)]
    if not names:
        return False
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        curves: dict[str, list[tuple[int, float]]] = {}
        for case in result["workloads"][name]["cases"]:
            if _rate(case) and isinstance(case["threads"], int) and case["parallelism"] != "none":
                curves.setdefault(case["label"], []).append((case["threads"], _rate(case)))
        for label, points in curves.items():
            if len(points) > 1:
                xs, ys = zip(*sorted(points), strict=True)
                ax.plot(xs, ys, marker="o", label=label)
        ax.set_xticks(sorted({x for points in curves.values() for x, _ in points}))
        ax.set_xlabel("threads / workers / num_parallel_calls")
        ax.set_ylabel("images/s (median)")
        ax.set_title(f"workload ({name})")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(result: dict[str, Any], json_path: Path, latest: bool) -> Path:
    """Write ``<run>.md`` and its PNGs next to ``json_path``; also ``LATEST.md`` if ``latest``."""
    folder, stem = json_path.parent, json_path.stem
    images = {}
    # A GPU host's kit may lack matplotlib: the tables are written all the same.
    plots = importlib.util.find_spec("matplotlib") is not None
    for name, workload in result["workloads"].items():
        if plots and any(_rate(c) for c in workload["cases"]):
            plot_bars(result, name, folder / f"{stem}-{name}.png")
            images[name] = f"{stem}-{name}.png"
    if plots and plot_scaling(result, folder / f"{stem}-scaling.png"):
        images["scaling"] = f"{stem}-scaling.png"
    text = markdown(result, images)
    path = folder / f"{stem}.md"
    path.write_text(text)
    if latest:
        (folder / "LATEST.md").write_text(f"<!-- copy of {path.name} -->\n" + text)
    return path


def summary(result: dict[str, Any]) -> str:
    """A short plain-text table: median images/s per tool and workload, then the targets."""
    lines = []
    for name, workload in result["workloads"].items():
        lines.append(f"workload {name}:")
        for case in main_cases(workload):
            rate = _rate(case)
            shown = f"{rate:12,.0f} images/s" if rate else f"  {case['status']}"
            lines.append(f"  {case['label']:45s} {shown}")
    for row in evaluate(result):
        measured = f"{row['ratio']:.2f}x" if "ratio" in row else "-"
        lines.append(
            f"target ({row['workload']}) {row['target']}: {measured} "
            f"(need {row['required']:g}x) {row['status']}"
        )
    return "\n".join(lines)
