"""How far ``rand_augment``'s fused order (geometric ops, then colour, then pixel ops) is from
torchvision's (the slots' ops in turn, uint8 after each), on scikit-learn's sample photos
(scikit-learn installed for it alone).

Each sample's ops are run three ways: by daliaug (DALI on the CPU) and twice with PIL, the
library torchvision's PIL path calls: in slot order (torchvision) and in daliaug's kind order.
PIL-vs-PIL isolates the order; daliaug-vs-PIL(kind order) is the per-op implementation gap
(bilinear sampling, float colour, OpenCV's equalize table). Run:
``python -m bench.policy_order [--samples 96]``."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.parity.run import run_dali
from daliaug.transforms.policy import COLOUR_OPS, GEOMETRIC_OPS, RAND_AUGMENT_OPS

SIZE = 224
ENHANCE = {
    "brightness": ImageEnhance.Brightness,
    "color": ImageEnhance.Color,
    "contrast": ImageEnhance.Contrast,
    "sharpness": ImageEnhance.Sharpness,
}


def crops(count: int) -> list[np.ndarray]:
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    rng = np.random.default_rng(0)
    out = []
    for i in range(count):
        img = photos[i % 2]
        y, x = rng.integers(0, img.shape[0] - SIZE), rng.integers(0, img.shape[1] - SIZE)
        out.append(np.ascontiguousarray(img[y : y + SIZE, x : x + SIZE]))
    return out


def pil_op(img: Image.Image, op: str, v: float) -> Image.Image:
    """torchvision's op on a PIL image (its PIL path), bilinear like daliaug."""
    bilinear = Image.Resampling.BILINEAR
    if op == "shear_x":
        return img.transform(img.size, Image.Transform.AFFINE, (1, v, 0, 0, 1, 0), bilinear)
    if op == "shear_y":
        return img.transform(img.size, Image.Transform.AFFINE, (1, 0, 0, v, 1, 0), bilinear)
    if op in ("translate_x", "translate_y"):
        t = int(v * SIZE)
        data = (1, 0, -t, 0, 1, 0) if op == "translate_x" else (1, 0, 0, 0, 1, -t)
        return img.transform(img.size, Image.Transform.AFFINE, data, bilinear)
    if op == "rotate":
        return img.rotate(v, bilinear)
    if op in ENHANCE:
        return ENHANCE[op](img).enhance(1.0 + v)
    if op == "posterize":
        return ImageOps.posterize(img, int(v))
    if op == "solarize":
        return ImageOps.solarize(img, v)
    if op == "auto_contrast":
        return ImageOps.autocontrast(img)
    if op == "equalize":
        return ImageOps.equalize(img)
    return img


def kind(op: str) -> int:
    return 0 if op in GEOMETRIC_OPS else 1 if op in COLOUR_OPS else 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=96)
    args = parser.parse_args()
    images = crops(args.samples)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        for i, img in enumerate(images):
            Image.fromarray(img).save(root / "a" / f"{i:04d}.png")
        config = load_config(
            {
                "source": {"type": "directory", "path": str(root)},
                "image_size": SIZE,
                "batch_size": 16,
                "shuffle": False,
                "transforms": [{"type": "rand_augment", "num_ops": 2, "magnitude": 9}],
            }
        )
        rows = draw_rows(config.plan, np.random.default_rng(1), len(images))
        ours = run_dali(config, config.source.samples(), rows, "cpu").astype(np.float64)
    keys = [k.split(".", 1)[1] for k in config.plan.param_keys]
    gaps, impl, reordered = [], [], []
    for i, img in enumerate(images):
        p = dict(zip(keys, rows[i], strict=True))
        ops = []
        for j in (0, 1):
            op = next(o for o in RAND_AUGMENT_OPS if p[f"{j}_{o}"] == 1.0)
            ops.append((op, float(p.get(f"{j}_{op}_mag", 0.0))))
        seq, fused = Image.fromarray(img), Image.fromarray(img)
        for op, v in ops:
            seq = pil_op(seq, op, v)
        for op, v in sorted(ops, key=lambda o: kind(o[0])):
            fused = pil_op(fused, op, v)
        a, b = np.asarray(seq, np.float64), np.asarray(fused, np.float64)
        inner = (slice(8, -8), slice(8, -8))  # away from the revealed borders
        gaps.append(np.abs(a - b)[inner].mean())
        impl.append(np.abs(ours[i] - b)[inner].mean())
        reordered.append(kind(ops[0][0]) > kind(ops[1][0]))
    gaps, impl, reordered = map(np.asarray, (gaps, impl, reordered))
    print(f"samples: {len(images)} crops {SIZE}x{SIZE}, rand_augment(2, 9), seed 1")
    print(f"order changed (kinds out of slot order): {reordered.mean():.1%} of samples")
    print(
        "PIL slot order vs PIL kind order, mean |diff| (grey levels): "
        f"all {gaps.mean():.2f}, where reordered {gaps[reordered].mean():.2f} "
        f"(max per sample {gaps.max():.2f})"
    )
    print(
        "daliaug vs PIL in kind order, mean |diff|: "
        f"median {np.median(impl):.2f}, mean {impl.mean():.2f}, max {impl.max():.2f}"
    )


if __name__ == "__main__":
    main()
