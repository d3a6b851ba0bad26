"""The pipeline as a whole, on both backends (DALI's CPU pipeline and the TF backend): the
identity, colour composition order, output dtype and layout, the grey channel, and the
DALI graph's fusion into one warp and one colour pass (ROI decoding only when the crop
comes first)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from daliaug.engines.select import placed
from daliaug.epoch import draw_rows
from daliaug.outputs.dali_loader import DaliLoader
from tests.helpers import augment, config_for, run_backend


def test_identity_is_exact(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    assert np.array_equal(augment(backend, square_dir, []), square_image)


def test_colour_transforms_compose_in_order(backend: str, square_dir: Path, square_image) -> None:
    out = augment(
        backend,
        square_dir,
        [{"type": "brightness", "factor": [0.5, 0.5]}, {"type": "contrast", "factor": [2, 2]}],
    )
    expected = np.clip((square_image * 0.5 - 128) * 2 + 128, 0, 255)
    assert np.abs(out - expected).max() <= 1.0


def test_dtype_and_channels_first_layout(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    config = config_for(
        square_dir, backend=backend, output={"dtype": "float16", "layout": "NCHW", "rescale": 0.5}
    )
    images = run_backend(config)
    assert images.dtype == np.float16 and images.shape == (1, 3, 64, 64)
    assert np.allclose(images[0].transpose(1, 2, 0), square_image * 0.5, atol=0.1)


def test_grayscale_channel(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(backend, square_dir, [{"type": "brightness", "factor": [1, 1]}], channels=1)
    assert out.shape == (64, 64, 1)
    luma = square_image @ np.array([0.299, 0.587, 0.114])
    assert np.abs(out[..., 0] - luma).max() <= 1.5


def _op_counts(config) -> Counter[str]:
    """How many instances of each operator the DALI graph holds."""
    return Counter(
        getattr(node._op, "schema_name", "") for node in DaliLoader(config).pipeline._ops
    )


def test_geometry_fuses_into_one_warp_and_colour_into_one_pass(square_dir: Path) -> None:
    config = config_for(
        square_dir,
        transforms=[
            {"type": "random_resized_crop"},
            {"type": "rotation", "angle": 10},
            {"type": "shift", "x": 0.1},
            {"type": "zoom", "factor": 0.1},
            {"type": "shear", "angle": 5},
            {"type": "flip"},
            {"type": "brightness", "factor": 0.2},
            {"type": "contrast", "factor": 0.2},
            {"type": "saturation", "factor": 0.2},
            {"type": "hue", "degrees": 10},
        ],
    )
    counts = _op_counts(config)
    assert counts["WarpAffine"] == 1 and counts["CoordTransform"] == 1
    assert counts["decoders__ImageSlice"] == 1  # random resized crop first: ROI decoding
    assert counts["decoders__Image"] == 0 and counts["Rotate"] == 0 and counts["Hsv"] == 0


def test_no_roi_decoding_unless_the_crop_comes_first(square_dir: Path) -> None:
    config = config_for(square_dir, transforms=[{"type": "flip"}, {"type": "random_resized_crop"}])
    assert _op_counts(config)["decoders__ImageSlice"] == 0


@pytest.mark.slow
def test_masks_ignore_every_colour_and_pixel_stage(backend: str, tmp_path: Path) -> None:
    """Segmentation masks with every pixel stage that moves no pixel and blends no versions
    of the image (its parity example, at
    probability 1) and colour transforms after the warp are the masks of the warp alone, on
    both engines; the images do change."""
    from daliaug.outputs.bridges import engine_batches as batches
    from daliaug.parity.examples import TRANSFORM_EXAMPLES
    from daliaug.transforms import TRANSFORMS
    from daliaug.transforms.base import GeometricTransform, PixelTransform
    from tests.sources.test_sources import seg_config, write_segmentation

    stages = [
        {**e, "probability": 1.0} if "probability" in e else e
        for e in TRANSFORM_EXAMPLES
        if issubclass(cls := TRANSFORMS[e["type"]], PixelTransform)
        and cls.effects.masks == "keeps"  # AugMix refuses masks, perspective moves them
        and not issubclass(cls, GeometricTransform)
        and (placed(backend).engine != "dali" or backend not in cls.dali_lacks)  # clahe
    ]
    assert {"random_erasing", "gaussian_blur", "sharpness", "equalize"} <= {
        s["type"] for s in stages
    }
    warp = [{"type": "rotation", "angle": 30, "fill": 0}, {"type": "flip"}]
    colour = [{"type": "brightness", "factor": 0.5}, {"type": "grayscale", "probability": 1.0}]
    root = write_segmentation(tmp_path / "seg")
    engine = placed(backend).engine
    plain, staged = (
        seg_config(root, transforms=warp + extra, backend=backend)
        for extra in ([], colour + stages)
    )
    samples = plain.source.samples()
    warp_rows = draw_rows(plain.plan, np.random.default_rng(4), len(samples))
    rows = draw_rows(staged.plan, np.random.default_rng(5), len(samples))
    for k, key in enumerate(plain.plan.param_keys):  # the same warp for both
        rows[:, staged.plan.param_keys.index(key)] = warp_rows[:, k]
    (plain_images, plain_masks), (images, masks) = (
        next(batches(engine, c, samples, "cpu", params=p))
        for c, p in ((plain, warp_rows), (staged, rows))
    )
    assert np.array_equal(plain_masks, masks)
    assert not np.allclose(plain_images, images)
