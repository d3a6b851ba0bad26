"""Each transform does what it says, on both backends (DALI's CPU pipeline and the TF backend),
checked against NumPy/SciPy."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from daliaug.algebra import Affine
from daliaug.backends.dali.loader import DaliLoader
from daliaug.parity.measure import inside_source
from tests.helpers import augment, config_for, run_backend, structured_image, write_image_dir


def inner(a: np.ndarray, border: int = 1) -> np.ndarray:
    return a[border:-border, border:-border]


def reference_warp(
    img: np.ndarray, forward: np.ndarray, out_hw: tuple[int, int], mode: str = "constant"
) -> np.ndarray:
    """Bilinear resampling with SciPy for a 2x3 source-to-destination map in pixel-corner
    coordinates (pixel centres at +0.5), the convention daliaug documents."""
    full = np.vstack([forward, [0, 0, 1]])
    inv = np.linalg.inv(full)
    # index coords (row, col) = corner coords (y, x) - 0.5
    m = np.array([[inv[1, 1], inv[1, 0]], [inv[0, 1], inv[0, 0]]])
    centre = np.array([0.5, 0.5])
    offset = m @ centre + np.array([inv[1, 2], inv[0, 2]]) - centre
    return np.stack(
        [
            ndimage.affine_transform(
                img[..., c].astype(np.float64), m, offset, out_hw, order=1, mode=mode
            )
            for c in range(img.shape[-1])
        ],
        axis=-1,
    )


def inside(forward: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Output pixels of a 64x64 warp whose source point lies ``margin`` pixels inside."""
    return inside_source(Affine(*forward.ravel()), (64, 64), (64, 64), margin)


def about_centre(linear: np.ndarray, c: float = 32.0) -> np.ndarray:
    t = np.array([[1, 0, c], [0, 1, c], [0, 0, 1]])
    l3 = np.eye(3)
    l3[:2, :2] = linear
    return (t @ l3 @ np.linalg.inv(t))[:2]


def test_identity_is_exact(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    assert np.array_equal(augment(backend, square_dir, []), square_image)


@pytest.mark.parametrize(
    ("flips", "expected"),
    [
        ((1.0, 0.0), lambda a: a[:, ::-1]),
        ((0.0, 1.0), lambda a: a[::-1]),
        ((1.0, 1.0), lambda a: a[::-1, ::-1]),
    ],
)
def test_flip_mirrors(
    backend: str, square_dir: Path, square_image: np.ndarray, flips, expected
) -> None:
    out = augment(
        backend, square_dir, [{"type": "flip", "horizontal": flips[0], "vertical": flips[1]}]
    )
    assert np.array_equal(out, expected(square_image))


@pytest.mark.parametrize(("angle", "k"), [(90, 1), (-90, -1), (180, 2)])
def test_right_angle_rotation_matches_rot90(
    backend: str, square_dir: Path, square_image, angle, k
) -> None:
    out = augment(backend, square_dir, [{"type": "rotation", "angle": [angle, angle]}])
    assert np.abs(inner(out - np.rot90(square_image, k))).max() <= 1


def test_rotation_turns_counter_clockwise_about_the_centre(
    backend: str, square_dir, square_image
) -> None:
    out = augment(backend, square_dir, [{"type": "rotation", "angle": [30, 30], "fill": 0}])
    t = np.deg2rad(30)
    forward = about_centre(np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]))
    diff = np.abs(out - reference_warp(square_image, forward, (64, 64)))
    diff = diff[inside(forward)]
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995


def test_rotation_fill_constant_and_nearest(backend: str, square_dir: Path, square_image) -> None:
    const = augment(backend, square_dir, [{"type": "rotation", "angle": [45, 45], "fill": 200}])
    assert np.all(const[0, 0] == 200) and np.all(const[-1, -1] == 200)
    nearest = augment(
        backend, square_dir, [{"type": "rotation", "angle": [45, 45], "fill": "nearest"}]
    )
    # "nearest" repeats the border pixels outwards, as SciPy's (and Keras') mode "nearest"
    t = np.deg2rad(45)
    forward = about_centre(np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]))
    diff = np.abs(inner(nearest - reference_warp(square_image, forward, (64, 64), "nearest")))
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995


def test_shift_moves_content(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(
        backend, square_dir, [{"type": "shift", "x": [0.25, 0.25], "y": [-0.125, -0.125]}]
    )
    assert np.array_equal(out[:56, 16:], square_image[8:, :48])
    assert np.all(out[:, :16] == 0) and np.all(out[56:] == 0)


def test_zoom_magnifies_about_the_centre(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "zoom", "factor": [2, 2]}])
    expected = reference_warp(square_image, about_centre(np.diag([2.0, 2.0])), (64, 64))
    assert np.abs(inner(out - expected)).max() <= 1


def test_shear_moves_lower_rows_right(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "shear", "angle": [20, 20]}])
    forward = about_centre(np.array([[1, np.tan(np.deg2rad(20))], [0, 1]]))
    diff = np.abs(out - reference_warp(square_image, forward, (64, 64)))
    diff = diff[inside(forward)]
    assert diff.mean() < 0.6 and np.mean(diff <= 2) > 0.995


def test_resize_halves_by_averaging(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "resize", "size": 32}], size=32)
    expected = square_image.reshape(32, 2, 32, 2, 3).mean(axis=(1, 3))
    assert np.abs(out - expected).max() <= 0.5 + 1e-6


def test_shorter_side_resize_keeps_aspect(backend: str, tmp_path: Path) -> None:
    wide = structured_image(40, 80)
    root = write_image_dir(tmp_path, {"a": [wide]})
    # shorter side 20 -> 20x40; then the centre 20x20 window
    out = augment(
        backend,
        root,
        [{"type": "resize", "shorter_side": 20}, {"type": "center_crop", "size": 20}],
        size=20,
    )
    expected = wide.reshape(20, 2, 40, 2, 3).mean(axis=(1, 3))[:, 10:30]
    assert np.abs(out - expected).max() <= 0.5 + 1e-6


def test_center_crop_takes_the_middle(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "center_crop", "size": [32, 16]}], size=[32, 16])
    assert np.array_equal(out, square_image[16:48, 24:40])


def test_random_resized_crop_box_follows_its_parameters(
    backend: str, square_dir: Path, square_image
) -> None:
    # area 1/4 of 64x64 with ratio 1 -> a 32x32 window; x = floor(0.5*33), y = floor(0.25*33)
    params = {"0.area": 0.25, "0.log_ratio": 0.0, "0.u": 0.5, "0.v": 0.25}
    out = augment(backend, square_dir, [{"type": "random_resized_crop"}], size=32, params=params)
    assert np.array_equal(out, square_image[8:40, 16:48])


def test_random_resized_crop_aspect_ratio(backend: str, square_dir: Path, square_image) -> None:
    # area 1/8 with ratio 2 -> w = round(sqrt(512*2)) = 32, h = 16; u = v = 1 -> bottom-right
    params = {"0.area": 0.125, "0.log_ratio": float(np.log(2)), "0.u": 1.0, "0.v": 1.0}
    out = augment(
        backend,
        square_dir,
        [{"type": "random_resized_crop", "ratio": [0.5, 2]}],
        size=[16, 32],
        params=params,
    )
    assert np.array_equal(out, square_image[48:, 32:])


def test_brightness_scales(backend: str, square_dir: Path, square_image: np.ndarray) -> None:
    out = augment(backend, square_dir, [{"type": "brightness", "factor": [0.5, 0.5]}])
    assert np.abs(out - square_image * 0.5).max() <= 0.5 + 1e-6


def test_contrast_stretches_about_mid_grey(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "contrast", "factor": [1.5, 1.5]}])
    expected = np.clip((square_image - 128.0) * 1.5 + 128.0, 0, 255)
    assert np.abs(out - expected).max() <= 0.5 + 1e-6


def test_saturation_zero_is_luma_grey(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    out = augment(backend, square_dir, [{"type": "saturation", "factor": [0, 0]}])
    luma = square_image @ np.array([0.299, 0.587, 0.114])
    assert np.abs(out - luma[..., None]).max() <= 0.5 + 1e-6


def _yiq(rgb: np.ndarray) -> np.ndarray:
    m = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
    return rgb @ m.T


def test_hue_rotates_chroma_and_keeps_luma(backend: str, square_dir: Path) -> None:
    # mid-range colours, so that no channel clips after the rotation
    img = (60 + structured_image(64, 64) * 0.5).astype(np.uint8)
    root = write_image_dir(square_dir.parent / "hue", {"a": [img]})
    out = augment(backend, root, [{"type": "hue", "degrees": [60, 60]}])
    before, after = _yiq(img.astype(np.float64)), _yiq(out)
    assert np.abs(after[..., 0] - before[..., 0]).max() <= 1.0
    strong = np.hypot(before[..., 1], before[..., 2]) > 20
    turn = np.angle((after[..., 1] + 1j * after[..., 2]) / (before[..., 1] + 1j * before[..., 2]))
    assert np.degrees(np.median(turn[strong])) == pytest.approx(60, abs=1.0)


def test_colour_transforms_compose_in_order(backend: str, square_dir: Path, square_image) -> None:
    out = augment(
        backend,
        square_dir,
        [{"type": "brightness", "factor": [0.5, 0.5]}, {"type": "contrast", "factor": [2, 2]}],
    )
    expected = np.clip((square_image * 0.5 - 128) * 2 + 128, 0, 255)
    assert np.abs(out - expected).max() <= 1.0


def test_normalize_mean_std_and_rescale(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]
    out = augment(backend, square_dir, [{"type": "normalize", "mean": mean, "std": std}])
    assert np.allclose(out, (square_image - mean) / std, atol=1e-4)
    scaled = augment(backend, square_dir, [], output={"rescale": 1 / 255})
    assert np.allclose(scaled, square_image / 255, atol=1e-5)


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
