"""The front page's picture and chart, written into ``docs/pages/assets/`` (the README and the
site show them): ``python -m docs.figures``. The picture is a preview of the shipped
``segmentation.yaml`` pipeline on a real photo, masks overlaid and, through the same transforms,
boxes and keypoints drawn; the chart is images/s against the tools a user would pick instead,
read from the committed benchmark records (:data:`RECORDS`), never typed."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from docs import photos

ROOT = Path(__file__).parents[1]
ASSETS = ROOT / "docs" / "pages" / "assets"
PICTURE = ASSETS / "front.jpg"
CHART = ASSETS / "speed.svg"
RESULTS = ROOT / "bench" / "results"
CPU_RECORD = "cpu-20261124-0030.json"
"""The CPU suite run LATEST.md copies: workload (b), JPEGs to 224 with flip and colour jitter."""
OPENCV_RECORD = "opencv-engine-20261129-0840.json"
"""The OpenCV engine against Albumentations in a PyTorch DataLoader, classification."""
CPU_TOOLS = {
    "daliaug default (make_dataset, backend: auto)": "daliaug (make_dataset)",
    "tf.data hand-tuned": "tf.data, hand-tuned",
    "tf.data + Keras layers": "tf.data + Keras layers",
    "ImageDataGenerator + PyDataset pool": "ImageDataGenerator, 2 workers",
    "ImageDataGenerator, 1 process": "ImageDataGenerator",
}
OPENCV_TOOLS = {
    "opencv-cls": "daliaug OpenCV engine",
    "albumentations-cls": "Albumentations, DataLoader 2 workers",
}
RECORDS = (CPU_RECORD, OPENCV_RECORD)


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def cpu_rates() -> dict[str, float]:
    """Median images/s of each tool of :data:`CPU_TOOLS` on workload (b) of the CPU record
    (its main table, as LATEST.md shows it)."""
    cases = json.loads((RESULTS / CPU_RECORD).read_text())["workloads"]["b"]["cases"]
    rates = {
        c["label"]: c["images_per_s"]["median"]
        for c in cases
        if c["group"] == "main" and c["status"] == "ok"
    }
    return {short: rates[label] for label, short in CPU_TOOLS.items()}


def opencv_rates() -> dict[str, float]:
    """Median images/s of each tool of :data:`OPENCV_TOOLS` in the OpenCV engine's record."""
    samples = json.loads((RESULTS / OPENCV_RECORD).read_text())["samples"]
    return {
        short: _median([s["images_per_s"] for s in samples if s["tool"] == tool])
        for tool, short in OPENCV_TOOLS.items()
    }


def machine(record: str) -> str:
    m = json.loads((RESULTS / record).read_text())["machine"]
    return f"{m['cpu']}, {m['cores']} cores, no GPU, {m['date'][:10]}, commit {m['commit']}"


def panels() -> list[dict[str, Any]]:
    """The chart's panels: a title, the record, and each bar's label and images/s."""
    return [
        {
            "title": "ImageNet-style JPEGs: crop 224, flip, colour jitter, normalize",
            "record": CPU_RECORD,
            "rates": cpu_rates(),
        },
        {
            "title": "JPEGs to NumPy batches: crop 224, flip, brightness, contrast, normalize",
            "record": OPENCV_RECORD,
            "rates": opencv_rates(),
        },
    ]


def label(rate: float) -> str:
    """A bar's figure as the chart writes it."""
    return f"{rate:,.0f} images/s"


def speed_chart(out: Path) -> Path:
    """Horizontal bars of images/s per tool, one panel per record, written as SVG with its text
    kept as text (so a test reads the figures back)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = panels()
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "daliaug", "font.size": 9})
    heights = [len(p["rates"]) for p in shown]
    fig, axes = plt.subplots(
        len(shown), 1, figsize=(7.5, 0.45 * sum(heights) + 2.0), height_ratios=heights
    )
    for ax, panel in zip(np.atleast_1d(axes), shown, strict=True):
        names = list(panel["rates"])[::-1]
        rates = [panel["rates"][n] for n in names]
        colours = ["#2e7d32" if n.startswith("daliaug") else "#9e9e9e" for n in names]
        ax.barh(names, rates, color=colours)
        for y, rate in enumerate(rates):
            ax.text(rate, y, " " + label(rate), va="center")
        ax.set_xlim(0, max(rates) * 1.35)
        ax.set_xticks([])
        for side in ("top", "right", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title(
            f"{panel['title']}\n{machine(panel['record'])}\n"
            f"record: bench/results/{panel['record']}",
            fontsize=8,
            loc="left",
        )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return out


def front_picture(out: Path) -> Path:
    """The shipped ``segmentation.yaml`` on the photo: a row with its mask, a row with its
    boxes and keypoints moved by the same transforms; the photo as it is, then three draws."""
    from daliaug.config import load_config
    from daliaug.tools.preview import Marks, augmented_versions, overlay, save_grid, tiles

    versions = 3
    with tempfile.TemporaryDirectory() as tmp:
        source = photos.segmentation_folder(Path(tmp))
        masked = load_config(
            "segmentation", {"source": source, "image_size": 192, "backend": "opencv"}
        )
        seg = augmented_versions(masked, 1, versions)
        x, y = photos.detection_sample()
        boxed = load_config(
            {
                **masked.model_dump(mode="json", exclude={"source"}),
                "source": photos.detection_source(),
            }
        )
        det = augmented_versions(boxed, 1, versions, x, y)
    names = len(photos.MASK_NAMES)
    row_seg, titles_seg, _ = tiles(masked, seg.augmented, seg.targets, seg.class_names)
    row_det, titles_det, marks_det = tiles(boxed, det.augmented, det.targets, det.class_names)
    images = [overlay(seg.originals[0], photos.mask(), names), *row_seg]
    images += [det.originals[0], *row_det]
    titles = ["photo, mask", *titles_seg, "photo, boxes", *titles_det]
    marks: list[Marks | None] = [None] * (1 + versions)
    marks += [det.marks[0], *marks_det]
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_grid(images, titles, out, cols=1 + versions, marks=marks, names=photos.BOX_NAMES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.figures", description=__doc__)
    parser.add_argument("--chart-only", action="store_true", help="only the chart (no engine)")
    args = parser.parse_args(argv)
    print(speed_chart(CHART))
    if not args.chart_only:
        print(front_picture(PICTURE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
