"""Workload (b) read from WebDataset shards: daliaug against ``webdataset``'s own loader.

    python -m bench.shard_loaders [--repeats 3] [--seconds 4] [--out bench/results]

The same 1,000 JPEGs of workload (b), as the 250-sample shards of :mod:`bench.choose`:
``make_dataset`` over a ``webdataset`` source on both engines (``daliaug-cpu``,
``daliaug-tf``), the same engines over the loose files (``files-cpu``, ``files-tf``), and
``webdataset``'s ``WebDataset`` + ``WebLoader`` (shards shuffled, a 1,000-sample shuffle
buffer, Pillow decode, then the workload as torchvision's PIL transforms compute it
(:func:`_augment`), batches of 128 made in the workers; one worker per core), the usual way
to train PyTorch from shards. Each
repeat of each case runs in a process of its own, interleaved
(:func:`bench.machine.interleaved_main`); images/s and CPU ms/image (workers included) are
medians. Needs ``pip install webdataset``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from statistics import median
from typing import Any

import numpy as np

from bench import machine
from bench.choose import _epoch, _shards
from bench.worker import cpu_ms
from bench.worker import measure as measured
from bench.workloads import BATCH_SIZE, WORKLOADS, prepare

TOOLS = ("daliaug-cpu", "daliaug-tf", "files-cpu", "files-tf", "webloader")


def _augment(image: Any) -> np.ndarray:
    """Workload (b) on one Pillow image as torchvision's PIL transforms compute it (which
    cannot be imported here: its build does not match the installed PyTorch): a random resized
    crop (10 tries, else the centre), a flip, brightness, contrast and saturation by
    ``ImageEnhance``, then normalized CHW float32."""
    from PIL import Image, ImageEnhance

    eq = WORKLOADS["b"].equivalent
    assert eq.crop_scale is not None and eq.crop_ratio is not None
    rng = np.random.default_rng()  # each worker draws its own
    width, height = image.size
    box = (0, 0, width, height)
    for _ in range(10):
        area = width * height * rng.uniform(*eq.crop_scale)
        ratio = np.exp(rng.uniform(*np.log(eq.crop_ratio)))
        w, h = round(np.sqrt(area * ratio)), round(np.sqrt(area / ratio))
        if 0 < w <= width and 0 < h <= height:
            x, y = rng.integers(0, width - w + 1), rng.integers(0, height - h + 1)
            box = (x, y, x + w, y + h)
            break
    image = image.resize(eq.size[::-1], Image.BILINEAR, box=box)
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    for enhance, spread in (
        (ImageEnhance.Brightness, eq.brightness),
        (ImageEnhance.Contrast, eq.contrast),
        (ImageEnhance.Color, eq.saturation),
    ):
        image = enhance(image).enhance(rng.uniform(1 - spread, 1 + spread))
    pixels = (np.asarray(image, np.float32) - eq.mean) / eq.std
    return np.ascontiguousarray(pixels.transpose(2, 0, 1))


def _webloader() -> Callable[[], Iterator[int]]:
    """A fresh run over ``WebLoader``'s batches (epoch after epoch) per call: batch sizes."""
    import torch
    import webdataset as wds

    folder = prepare("b", False).directory
    assert folder is not None
    urls = sorted(str(p) for p in _shards(folder).glob("*.tar"))
    dataset = (
        wds.WebDataset(urls, shardshuffle=len(urls), seed=0)
        .shuffle(1000)
        .decode("pil")
        .to_tuple("jpg;png", "cls")
        .map_tuple(_augment, int)
        .batched(BATCH_SIZE, partial=False)
        .map_tuple(torch.from_numpy, torch.from_numpy)  # tensors leave workers by shared memory
    )
    workers = min(len(urls), machine.describe()["cores_usable"])
    loader = wds.WebLoader(dataset, batch_size=None, num_workers=workers, persistent_workers=True)
    torch.set_num_threads(1)

    def epoch() -> Iterator[int]:
        while True:
            for images, _ in loader:
                yield int(images.shape[0])

    return epoch


def measure(tool: str, seconds: float) -> dict[str, Any]:
    """One repeat of ``tool``: two batches and a second untimed, then ``seconds`` of them."""
    if tool == "webloader":
        epoch = _webloader()
    else:
        kind, backend = tool.split("-")
        epoch = _epoch("webdataset" if kind == "daliaug" else "directory", backend, False)
    return {"tool": tool, **measured(epoch, 2, 1.0, seconds, 10**9)}


def report(samples: list[dict[str, Any]], described: dict[str, Any]) -> str:
    """The medians as a Markdown table, each against the WebLoader's rate."""
    rates = {t: median(s["images_per_s"] for s in samples if s["tool"] == t) for t in TOOLS}
    repeats = len(samples) // len(TOOLS)
    lines = [
        f"# Workload (b) from WebDataset shards: daliaug and webdataset's WebLoader "
        f"({described['date']})",
        "",
        f"{described['cpu']}, {described['cores_usable']} cores usable, commit "
        f"{described['commit']}; 1,000 JPEGs (~500x375) in 4 shards, random resized crop 224, "
        f"flip, colour jitter, normalize, batch {BATCH_SIZE}; medians of {repeats} repeats, "
        "interleaved, each in a process of its own (`python -m bench.shard_loaders`).",
        "",
        "| tool | images/s | CPU ms/image | x WebLoader |",
        "| --- | ---: | ---: | ---: |",
    ]
    for tool in TOOLS:
        spent = median(cpu_ms(s) for s in samples if s["tool"] == tool)
        against = rates[tool] / rates["webloader"]
        lines.append(f"| {tool} | {rates[tool]:,.0f} | {spent:.3f} | {against:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    machine.interleaved_main("bench.shard_loaders", __doc__, TOOLS, measure, report, (3, 4.0))


if __name__ == "__main__":
    main()
