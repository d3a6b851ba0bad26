"""The ``rand_augment`` policy: its draws (every op reachable, uniformly; the magnitude of the
configured bin in torchvision's tables, with a random sign), each op alone against PIL or an
independent reference on photos, both engines on the whole policy, and masks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps
from scipy import stats

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.transforms.policy import RAND_AUGMENT_OPS, SIGNED_OPS, UNMAGNIFIED_OPS
from tests.helpers import augment, config_for, run_backend, write_image_dir
from tests.transforms.helpers import about_centre, inner, inside, photo_crops, reference_warp


def _config(transform: dict, **fields: object):
    return load_config(
        {"source": {"type": "directory", "path": "."}, "image_size": 8, "transforms": [transform]}
        | fields
    )


def _rows(transform: dict, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    plan = _config(transform).plan
    rows = draw_rows(plan, np.random.default_rng(seed), count)
    return {k.split(".", 1)[1]: rows[:, i] for i, k in enumerate(plan.param_keys)}


def torchvision_table(op: str, bins: int) -> np.ndarray:
    """torchvision's RandAugment magnitudes for ``op``, written from its published definition
    (with torch, as torchvision computes them); translations as fractions of the side."""
    import torch

    linear = {"shear_x": 0.3, "shear_y": 0.3, "rotate": 30.0, "translate_x": 150.0 / 331.0}
    linear |= {"translate_y": 150.0 / 331.0}
    linear |= dict.fromkeys(("brightness", "color", "contrast", "sharpness"), 0.9)
    if op in linear:
        return torch.linspace(0.0, linear[op], bins).numpy()
    if op == "posterize":
        return (8 - (torch.arange(bins) / ((bins - 1) / 4)).round().int()).numpy()
    return torch.linspace(255.0, 0.0, bins).numpy()  # solarize


def test_every_op_is_reachable_and_uniform() -> None:
    rows = _rows({"type": "rand_augment", "num_ops": 2, "magnitude": 9}, 28000)
    for slot in (0, 1):
        flags = np.stack([rows[f"{slot}_{op}"] for op in RAND_AUGMENT_OPS], axis=1)
        assert set(np.unique(flags)) == {0.0, 1.0}
        np.testing.assert_array_equal(flags.sum(axis=1), 1.0)  # exactly one op per slot
        counts = flags.sum(axis=0)
        assert counts.min() > 0
        assert stats.chisquare(counts).pvalue > 1e-3, counts
    first = np.argmax([rows[f"0_{op}"] for op in RAND_AUGMENT_OPS], axis=0)
    second = np.argmax([rows[f"1_{op}"] for op in RAND_AUGMENT_OPS], axis=0)
    table = np.histogram2d(first, second, bins=len(RAND_AUGMENT_OPS))[0]
    assert stats.chi2_contingency(table).pvalue > 1e-3  # slots drawn independently


@pytest.mark.parametrize(("magnitude", "bins"), [(9, 31), (0, 31), (30, 31), (5, 10)])
def test_magnitude_is_torchvisions_table_value_with_a_random_sign(
    magnitude: int, bins: int
) -> None:
    transform = {"type": "rand_augment", "magnitude": magnitude, "num_magnitude_bins": bins}
    rows = _rows(transform, 4000)
    for op in RAND_AUGMENT_OPS:
        if op in UNMAGNIFIED_OPS:
            assert f"0_{op}_mag" not in rows
            continue
        drawn = rows[f"0_{op}_mag"]
        expected = np.float32(torchvision_table(op, bins)[magnitude])
        np.testing.assert_allclose(np.abs(drawn), expected, rtol=1e-6, err_msg=op)
        if op in SIGNED_OPS and expected != 0:
            share = (drawn > 0).mean()
            assert 0.45 < share < 0.55, (op, share)
        else:
            assert (drawn >= 0).all(), op


def test_magnitude_ranges_match_dali_auto_aug_where_it_follows_torchvision() -> None:
    """DALI's ``auto_aug.rand_augment`` suite has the same ranges, except for its solarize
    threshold (256 to 0, not 255 to 0) and its relative translation (100/224 of the side,
    not 150/331)."""
    from nvidia.dali.auto_aug.rand_augment import get_rand_augment_suite

    from daliaug.transforms.policy import magnitudes

    names = {"auto_contrast": "auto_contrast", "identity": "identity"}
    suite = {a.name: a for a in get_rand_augment_suite(use_shape=True)}
    assert set(suite) == {names.get(op, op) for op in RAND_AUGMENT_OPS}
    for op in RAND_AUGMENT_OPS:
        mag_range = suite[op].mag_range
        if mag_range is None:
            assert op in UNMAGNIFIED_OPS
            continue
        assert suite[op].randomly_negate == (op in SIGNED_OPS), op
        theirs = np.linspace(*mag_range, 31)
        if op == "posterize":
            theirs = np.round(theirs)
        ours = np.asarray(magnitudes(op, 31))
        if op == "solarize":
            np.testing.assert_allclose(theirs * 255 / 256, ours, rtol=1e-6)
        elif op.startswith("translate"):
            np.testing.assert_allclose(theirs * (150 / 331) / (100 / 224), ours, rtol=1e-6)
        else:
            np.testing.assert_allclose(theirs, ours, rtol=1e-6, err_msg=op)


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return photo_crops(1)[0]


@pytest.fixture(scope="module")
def photo_dir(tmp_path_factory: pytest.TempPathFactory, photo: np.ndarray) -> Path:
    return write_image_dir(tmp_path_factory.mktemp("photo"), {"a": [photo]})


def _single(backend: str, photo_dir: Path, op: str, value: float) -> np.ndarray:
    """The photo through ``rand_augment`` with only ``op``, at signed magnitude ``value``."""
    transform = {"type": "rand_augment", "num_ops": 1, "ops": [op]}
    params = {"0.0_" + op: 1.0}
    if op not in UNMAGNIFIED_OPS:
        params[f"0.0_{op}_mag"] = value
    return augment(backend, photo_dir, [transform], params=params)


def _pil(photo: np.ndarray) -> Image.Image:
    return Image.fromarray(photo)


ENHANCERS = {
    "brightness": ImageEnhance.Brightness,
    "color": ImageEnhance.Color,
    "contrast": ImageEnhance.Contrast,
    "sharpness": ImageEnhance.Sharpness,
}


@pytest.mark.parametrize("op", sorted(ENHANCERS))
@pytest.mark.parametrize("value", [0.3, -0.6])
def test_enhance_ops_match_pil(
    backend: str, photo_dir: Path, photo: np.ndarray, op: str, value: float
) -> None:
    """PIL's ``ImageEnhance`` at factor ``1 + magnitude`` (torchvision's PIL path); PIL rounds
    its grey image (and contrast's mean) to integers and truncates the blend."""
    out = _single(backend, photo_dir, op, value)
    expected = np.asarray(ENHANCERS[op](_pil(photo)).enhance(1.0 + value), np.float64)
    tolerance = 1.0 + abs(value) + (0.5 * abs(value) if op == "contrast" else 0.0)
    np.testing.assert_allclose(out, expected, atol=tolerance + 1e-3)


@pytest.mark.parametrize(
    ("op", "value", "reference"),
    [
        ("posterize", 5.0, lambda im: ImageOps.posterize(im, 5)),
        ("posterize", 8.0, lambda im: im),
        ("solarize", 178.5, lambda im: ImageOps.solarize(im, 178.5)),
        ("identity", 0.0, lambda im: im),
    ],
)
def test_exact_pixel_ops_match_pil(
    backend: str, photo_dir: Path, photo: np.ndarray, op: str, value: float, reference
) -> None:
    out = _single(backend, photo_dir, op, value)
    np.testing.assert_allclose(out, np.asarray(reference(_pil(photo))), atol=1e-3)


def test_auto_contrast_matches_pil(backend: str, photo_dir: Path, photo: np.ndarray) -> None:
    out = _single(backend, photo_dir, "auto_contrast", 0.0)
    diff = out - np.asarray(ImageOps.autocontrast(_pil(photo)), np.float64)
    assert diff.min() >= -1e-3 and diff.max() <= 1.0 + 1e-3  # PIL truncates


def test_equalize_matches_keras_per_image(backend: str, photo_dir: Path, photo: np.ndarray) -> None:
    """OpenCV's table (DALI's ``fn.equalize``, Keras' ``Equalization`` per image); PIL's
    differs by design (see the pixel kernels)."""
    import keras

    out = _single(backend, photo_dir, "equalize", 0.0)
    expected = keras.layers.Equalization()(photo[None].astype(np.float32))[0]
    np.testing.assert_allclose(out, np.asarray(expected), atol=1e-3)


def _forward(op: str, v: float, size: int = 64) -> np.ndarray:
    """torchvision's maps as 2x3 source-to-destination matrices in pixel-corner coordinates."""
    if op == "shear_x":  # output (x, y) samples input (x + v y, y)
        return np.array([[1.0, -v, 0.0], [0.0, 1.0, 0.0]])
    if op == "shear_y":
        return np.array([[1.0, 0.0, 0.0], [-v, 1.0, 0.0]])
    if op == "translate_x":
        return np.array([[1.0, 0.0, v * size], [0.0, 1.0, 0.0]])
    if op == "translate_y":
        return np.array([[1.0, 0.0, 0.0], [0.0, 1.0, v * size]])
    t = np.radians(v)  # rotate: counter-clockwise on screen, y down
    return about_centre(np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]))


@pytest.mark.parametrize(
    ("op", "value"),
    [
        ("shear_x", 0.2),
        ("shear_y", -0.25),
        ("translate_x", -0.3),
        ("translate_y", 0.2),
        ("rotate", 20.0),
        ("rotate", -30.0),
    ],
)
def test_geometric_ops_match_their_maps(
    backend: str, photo_dir: Path, photo: np.ndarray, op: str, value: float
) -> None:
    out = _single(backend, photo_dir, op, value)
    forward = _forward(op, value)
    expected = reference_warp(photo, forward, (64, 64))
    kept = inside(forward)
    assert kept.mean() > 0.5
    np.testing.assert_allclose(out[kept], expected[kept], atol=0.5)


def test_rotate_turns_like_pil(backend: str, photo_dir: Path, photo: np.ndarray) -> None:
    """PIL's ``rotate`` (torchvision's PIL path) turns the same way, counter-clockwise."""
    out = _single(backend, photo_dir, "rotate", 25.0)
    expected = np.asarray(_pil(photo).rotate(25.0, resample=Image.BILINEAR), np.float64)
    assert np.abs(inner(out, 4) - inner(expected, 4)).mean() < 3.0


def engine_difference(root: Path, transform: dict, seed: int, count: int = 8) -> np.ndarray:
    """|DALI on the CPU - the TF engine| for ``transform`` on the ``count`` images at
    ``root``, in one batch, with the same drawn parameters (``seed``) for both."""
    outs = []
    for backend in ("cpu", "tf"):
        config = config_for(root, transforms=[transform], backend=backend, batch_size=count)
        rows = draw_rows(config.plan, np.random.default_rng(seed), count)
        outs.append(run_backend(config, rows).astype(np.float64))
    return np.abs(outs[0] - outs[1])


@pytest.mark.slow
def test_engines_agree_on_the_whole_policy(tmp_path: Path) -> None:
    """DALI on the CPU and the TF engine on eight photos with drawn parameters."""
    root = write_image_dir(tmp_path, {"a": photo_crops(8)})
    diff = engine_difference(root, {"type": "rand_augment", "num_ops": 2, "magnitude": 9}, 3)
    # Quantizing ops (posterize at 7 bits, equalize) turn float rounding differences of the
    # warp at their steps into whole steps: rare, and one step.
    assert (diff > 0.05).mean() < 1e-3 and diff.max() <= 2.0 + 1e-3, diff.max()


def test_config_errors_name_the_field() -> None:
    from daliaug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"transforms\.0\.rand_augment"):
        _config({"type": "rand_augment", "magnitude": 31})
    with pytest.raises(ConfigError, match=r"transforms\.0\.rand_augment\.ops"):
        _config({"type": "rand_augment", "ops": ["rotate", "rotate"]})
    with pytest.raises(ConfigError, match=r"transforms\.0\.rand_augment\.ops"):
        _config({"type": "rand_augment", "ops": ["cutout"]})


def test_masks_follow_the_geometric_ops_only(tmp_path: Path) -> None:
    """Masks take the policy's warp (nearest) and skip its colour and pixel ops."""
    from daliaug.outputs.dali_loader import DaliLoader
    from tests.sources.test_sources import PALETTE, seg_config, write_segmentation

    root = write_segmentation(tmp_path / "seg")
    geometric = {"type": "rand_augment", "ops": ["shear_x", "rotate", "translate_y"]}
    for images, masks in DaliLoader(seg_config(root, transforms=[geometric], seed=1)):
        known = masks < 4
        expected = PALETTE[np.where(known, masks, 0)].astype(float)
        assert np.mean(np.abs(images - expected).max(axis=-1)[known] <= 1) > 0.9
    plain = seg_config(root, transforms=[{"type": "rotation", "angle": 0}])  # the same warp
    pixel = {"type": "rand_augment", "ops": ["solarize", "equalize", "contrast", "color"]}
    coloured = seg_config(root, transforms=[{**pixel, "magnitude": 30}])
    (a_img, a_mask), (b_img, b_mask) = (next(iter(DaliLoader(c))) for c in (plain, coloured))
    assert np.array_equal(a_mask, b_mask) and not np.allclose(a_img, b_img)
