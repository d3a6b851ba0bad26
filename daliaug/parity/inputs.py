"""Images for parity runs: built-in real-looking ones, or the user's, always compared as lossless
PNGs; their JPEG versions (or the user's JPEGs) serve the separate decoder comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from daliaug.errors import DataError
from daliaug.sources import Samples
from daliaug.sources.base import is_image
from daliaug.sources.checks import check_image_files, describe_rejected, image_header

SIZES = ((96, 96), (72, 112), (120, 80), (64, 64))
"""``(height, width)`` of the built-in images: square, wide, tall and small."""


def parity_image(h: int, w: int, seed: int) -> np.ndarray:
    """An RGB ``uint8`` image with a colour gradient, band-limited texture, fine grain,
    sharp-edged shapes and rendered text."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w] / max(h, w)
    angle = rng.uniform(0, 2 * np.pi)
    ramp = (x * np.cos(angle) + y * np.sin(angle))[..., None]
    ramp = (ramp - ramp.min()) / max(np.ptp(ramp), 1e-9)
    start, stop = rng.uniform(20, 235, (2, 3))
    coarse = Image.fromarray(rng.integers(0, 256, (h // 12 + 2, w // 12 + 2, 3), dtype=np.uint8))
    texture = np.asarray(coarse.resize((w, h), Image.Resampling.BICUBIC), np.float64) - 127.5
    pixels = start + (stop - start) * ramp + 0.25 * texture + rng.normal(0, 5, (h, w, 3))
    image = Image.fromarray(np.clip(np.round(pixels), 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(3):
        x0, y0 = rng.uniform(0, 0.7) * w, rng.uniform(0, 0.7) * h
        box = (x0, y0, x0 + rng.uniform(0.15, 0.3) * w, y0 + rng.uniform(0.15, 0.3) * h)
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    draw.line((0, rng.uniform(0, h), w, rng.uniform(0, h)), fill=(255, 255, 255), width=2)
    font = ImageFont.load_default(size=max(10, h // 6))
    draw.text((w * 0.08, h * 0.55), "daliaug 42", fill=(10, 10, 10), font=font)
    return np.asarray(image)


@dataclass(frozen=True)
class ParityInputs:
    """Lossless PNG samples for the transform comparisons, JPEG samples for the decoders'."""

    lossless: Samples
    jpeg: Samples | None


def image_samples(paths: Sequence[str | Path]) -> Samples:
    """Unlabelled samples (all of class ``images``) for the files at ``paths``."""
    files = [str(p) for p in paths]
    labels = np.zeros(len(files), np.int32)
    sizes, rejected = check_image_files(files)
    if rejected:
        raise DataError(describe_rejected(rejected, len(files)))
    return Samples.of_files({"path": files}, ["images"], sizes, label=labels)


def builtin_inputs(root: Path) -> ParityInputs:
    """Write the built-in images (:data:`SIZES`) under ``root`` as PNG and as JPEG (quality 90)."""
    root.mkdir(parents=True, exist_ok=True)
    pngs, jpegs = [], []
    for i, (h, w) in enumerate(SIZES):
        image = Image.fromarray(parity_image(h, w, seed=i))
        pngs.append(root / f"{i:02d}.png")
        jpegs.append(root / f"{i:02d}.jpg")
        image.save(pngs[-1])
        image.save(jpegs[-1], quality=90)
    return ParityInputs(image_samples(pngs), image_samples(jpegs))


def user_inputs(images: Path, root: Path, limit: int) -> ParityInputs:
    """Up to ``limit`` images from the folder ``images`` (searched recursively, sorted).

    PNGs are used as they are; JPEGs are decoded once (with Pillow) into PNGs under ``root``
    for the transform comparisons, and compared as JPEGs only between the two decoders.
    """
    if not images.is_dir():
        raise DataError(f"--images: {images} is not a directory")
    found = sorted(p for p in images.rglob("*") if is_image(p))[:limit]
    if not found:
        raise DataError(f"--images: found no .jpg, .jpeg or .png files under {images}")
    root.mkdir(parents=True, exist_ok=True)
    lossless, jpegs = [], []
    for i, path in enumerate(found):
        if image_header(str(path))[0] == "PNG":
            lossless.append(path)
            continue
        jpegs.append(path)
        with Image.open(path) as im:
            copy = root / f"{i:04d}.png"
            im.convert("L" if im.mode == "L" else "RGB").save(copy)
        lossless.append(copy)
    return ParityInputs(image_samples(lossless), image_samples(jpegs) if jpegs else None)


MASK_PALETTE = ((0, 0, 0), (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200))
"""Class colours of the synthetic colour masks (class 0 first)."""


def with_masks(samples: Samples, root: Path, colour: bool) -> Samples:
    """``samples`` paired with synthetic masks (blocks of the five classes of
    :data:`MASK_PALETTE`, written under ``root``): index masks, or colour ones with
    ``root/classes.csv``."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [f"c{k},{r},{g},{b}" for k, (r, g, b) in enumerate(MASK_PALETTE)]
    (root / "classes.csv").write_text("\n".join(["name,r,g,b", *rows]) + "\n")
    masks = []
    for i, (h, w) in enumerate(samples.sizes):
        rng = np.random.default_rng(i)
        mask = np.zeros((h, w), np.uint8)
        for k in range(1, len(MASK_PALETTE)):
            y, x = rng.integers(0, h * 3 // 4), rng.integers(0, w * 3 // 4)
            mask[y : y + h // 3, x : x + w // 3] = k
        masks.append(str(root / f"{i:04d}.png"))
        Image.fromarray(np.asarray(MASK_PALETTE, np.uint8)[mask] if colour else mask).save(
            masks[-1]
        )
    names = [f"c{k}" for k in range(len(MASK_PALETTE))]
    return Samples.of_files({"path": samples.paths, "mask_path": masks}, names, samples.sizes)
