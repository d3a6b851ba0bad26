"""The pixel operations of both engines (``daliaug.engines.{tf,dali}.pixels``): known answers
against PIL, SciPy and Keras' own layers on real photos, and the two engines against each
other (TensorFlow XLA-compiled, DALI on the CPU; the DALI GPU graph is checked without a GPU).

Each known-answer test runs on both engines (the ``engine`` fixture). Inputs are integer-valued
where the reference works on ``uint8`` images; the parity tests use fractional values, as the
warp and colour pass produce them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps
from scipy import ndimage

from daliaug.engines.dali import pixels as dali_pixels
from daliaug.engines.opencv.pixels import KERNELS as cv_kernels
from daliaug.engines.tf.pixels import KERNELS as tf_kernels
from daliaug.kernels import Kernels
from tests.helpers import sample_photos


def _photos() -> np.ndarray:
    """Six 48x64 RGB crops of the two sample photos (:func:`tests.helpers.sample_photos`)."""
    corners = [(40, 60), (200, 300), (300, 500)]
    crops = [p[y : y + 48, x : x + 64] for p in sample_photos() for y, x in corners]
    return np.stack(crops).astype(np.float32)


PHOTOS = _photos()


def _fractional(images: np.ndarray) -> np.ndarray:
    """The photos as the warp leaves them: fractional values on 0..255."""
    return np.clip(images * 0.93 + 7.3 + 0.37 * np.sin(images), 0, 255).astype(np.float32)


def run_tf(op: Callable[..., Any], batch: np.ndarray, *params: Sequence[float]) -> np.ndarray:
    """``op`` on the batch and per-sample parameters, XLA-compiled."""
    import tensorflow as tf

    tensors = [tf.constant(np.asarray(p, np.float32)) for p in params]
    return tf.function(op, jit_compile=True)(tf.constant(batch), *tensors).numpy()


def _feed(values: np.ndarray) -> Callable[[], list[np.ndarray]]:
    return lambda: list(values)


def _dali_graph(
    op: Callable[..., Any], batch: np.ndarray, params: Sequence[Sequence[float]], device: str
) -> Any:
    """A DALI pipeline applying ``op`` to the batch (HWC samples, or vectors) on ``device``."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=len(batch), num_threads=1, device_id=0 if device == "gpu" else None)
    def graph() -> Any:
        layout = "HWC" if batch.ndim == 4 else ""
        x = fn.external_source(source=_feed(batch), layout=layout, batch=True)
        scalars = [
            fn.external_source(source=_feed(np.asarray(p, np.float32)), batch=True) for p in params
        ]
        return op(x.gpu() if device == "gpu" else x, *scalars)

    return graph()


def run_dali(op: Callable[..., Any], batch: np.ndarray, *params: Sequence[float]) -> np.ndarray:
    """``op`` on the batch and per-sample parameters, in a DALI pipeline on the CPU."""
    pipe = _dali_graph(op, batch, params, "cpu")
    pipe.build()
    (out,) = pipe.run()
    return np.stack([np.asarray(t) for t in out])


def run_cv(op: Callable[..., Any], batch: np.ndarray, *params: Sequence[float]) -> np.ndarray:
    """``op`` on the batch and per-sample parameters, NumPy arrays."""
    values = [np.asarray(p, np.float32) for p in params]
    return np.asarray(op(np.asarray(batch), *values))


@dataclass(frozen=True)
class Engine:
    name: str
    module: Kernels
    run: Callable[..., np.ndarray]

    def apply(
        self, op: str, batch: np.ndarray, *params: Sequence[float], **fixed: Any
    ) -> np.ndarray:
        """The engine's operation ``op`` (with ``fixed`` keyword arguments) on a batch."""
        return self.run(partial(getattr(self.module, op), **fixed), batch, *params)


ENGINES = {
    "tf": Engine("tf", tf_kernels, run_tf),
    "dali": Engine("dali", dali_pixels, run_dali),
    "opencv": Engine("opencv", cv_kernels, run_cv),
}


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each engine: TensorFlow (XLA), DALI on the CPU, OpenCV and NumPy."""
    return ENGINES[request.param]


def _pil(images: np.ndarray, f: Callable[[Image.Image, Any], Image.Image], args: Any) -> np.ndarray:
    out = [
        np.asarray(f(Image.fromarray(im.astype(np.uint8)), a))
        for im, a in zip(images, args, strict=True)
    ]
    return np.stack(out).astype(np.float32)


def test_solarize_is_pil(engine: Engine) -> None:
    thresholds = [0, 64, 128, 200, 255, 256]
    out = engine.apply("solarize", PHOTOS, thresholds)
    np.testing.assert_array_equal(out, _pil(PHOTOS, ImageOps.solarize, thresholds))


def test_posterize_is_pil(engine: Engine) -> None:
    for bits in ([1, 2, 3, 4, 5, 6], [7, 8, 8, 1, 4, 2]):
        out = engine.apply("posterize", PHOTOS, bits)
        np.testing.assert_array_equal(out, _pil(PHOTOS, ImageOps.posterize, bits))


def test_posterize_rounds_half_up_first(engine: Engine) -> None:
    images = np.full((2, 4, 4, 3), 127.5, np.float32)
    images[1] = 63.49
    out = engine.apply("posterize", images, [7, 0])
    assert (out[0] == 128).all() and (out[1] == 0).all()
    assert (engine.apply("posterize", images, [8, 6])[1] == 60).all()


def test_equalize_is_keras_equalization(engine: Engine) -> None:
    import keras

    layer = keras.layers.Equalization(value_range=(0, 255))
    # one image at a time: on a batch, Keras' layer pools the histogram of all its images
    expected = np.stack([np.asarray(layer(image)) for image in PHOTOS])
    np.testing.assert_array_equal(engine.apply("equalize", PHOTOS), expected)


def test_equalize_rounds_half_to_even_and_keeps_flat_channels(
    engine: Engine,
) -> None:
    # 255 / 6 = 42.5 -> 42 and 3 * 255 / 6 = 127.5 -> 128 (OpenCV's cvRound)
    rows = np.array([[0, 1, 2, 2, 2, 2, 2], [0, 1, 1, 1, 2, 2, 2]], np.float32)
    images = np.stack([rows[:, None, :], rows[:, None, :], np.full((2, 1, 7), 9.0)], -1)
    out = engine.apply("equalize", images.astype(np.float32))
    np.testing.assert_array_equal(out[0, 0, :3, 0], [0, 42, 255])
    np.testing.assert_array_equal(out[1, 0, :4, 1], [0, 128, 128, 128])
    assert (out[..., 2] == 9).all()


def test_auto_contrast_is_pil_before_truncation(engine: Engine) -> None:
    images = PHOTOS.copy()
    images[0, ..., 1] = 77.0  # a flat channel stays as it is
    out = engine.apply("auto_contrast", images)
    expected = _pil(images, lambda im, _: ImageOps.autocontrast(im), [None] * len(images))
    # PIL truncates x * scale + offset to uint8; we keep the value
    assert ((out - expected >= -1e-3) & (out - expected < 1 + 1e-3)).all()
    assert (out[0, ..., 1] == 77).all()
    assert out.reshape(-1, 3).min(0).tolist() == [0, 0, 0]
    assert out.reshape(-1, 3).max(0).tolist() == [255, 255, 255]


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0, 1.8])
def test_sharpness_is_pil(engine: Engine, factor: float) -> None:
    out = engine.apply("sharpness", PHOTOS, [factor] * len(PHOTOS))
    expected = _pil(PHOTOS, lambda im, f: ImageEnhance.Sharpness(im).enhance(f), [factor] * 6)
    # PIL rounds the smoothed image to uint8, then truncates the blend: within 1 + 0.5 |1 - f|
    np.testing.assert_allclose(out, expected, atol=1 + 0.5 * abs(1 - factor) + 1e-3)
    np.testing.assert_array_equal(out[:, 0], PHOTOS[:, 0])  # the border keeps the input
    np.testing.assert_array_equal(out[:, :, -1], PHOTOS[:, :, -1])


@pytest.mark.parametrize("size", [3, 7, 11])
def test_gaussian_blur_is_scipy_mirror(engine: Engine, size: int) -> None:
    sigmas = [0.0, 0.3, 1.0, 1.7, 2.5, 6.0]
    out = engine.apply("gaussian_blur", PHOTOS, sigmas, size=size)
    r = size // 2
    for image, s, got in zip(PHOTOS.astype(np.float64), sigmas, out, strict=True):
        expected = ndimage.gaussian_filter(
            image, sigma=max(s, 1e-3), mode="mirror", radius=r, axes=(0, 1)
        )
        np.testing.assert_allclose(got, expected, atol=2e-3)


BOXES = {  # y0, x0, h, w per sample: inside, cut by the border, empty, whole image, ...
    "y0": [5, 40, 0, 0, 10, 47],
    "x0": [7, 50, 0, 0, 63, 0],
    "h": [10, 20, 0, 48, 5, 1],
    "w": [20, 30, 5, 64, 1, 64],
}
INSIDE = {**BOXES, "h": [10, 8, 0, 48, 5, 1], "w": [20, 14, 5, 64, 1, 64]}
"""The boxes cut to the image, as ``paste`` needs them."""


def _box_mask(i: int, shape: tuple[int, ...], boxes: dict[str, list[int]] = BOXES) -> np.ndarray:
    mask = np.zeros(shape[:2], bool)
    y, x, h, w = (int(boxes[k][i]) for k in ("y0", "x0", "h", "w"))
    mask[y : y + h, x : x + w] = True
    return mask


def test_erase_with_constant_and_per_sample_fills(engine: Engine) -> None:
    boxes = [BOXES[k] for k in ("y0", "x0", "h", "w")]
    out = engine.apply("erase", PHOTOS, *boxes, fill=(10.0, 20.0, 30.0))
    reds = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]

    def red_fill(x: Any, y0: Any, x0: Any, h: Any, w: Any, red: Any) -> Any:
        return engine.module.erase(x, y0, x0, h, w, fill=(red, 128.0, 255.0 - red))

    per_sample = engine.run(red_fill, PHOTOS, *boxes, reds)
    for i, image in enumerate(PHOTOS):
        inside = _box_mask(i, image.shape)
        assert (out[i][inside] == [10, 20, 30]).all()
        assert (per_sample[i][inside] == [reds[i], 128, 255 - reds[i]]).all()
        np.testing.assert_array_equal(out[i][~inside], image[~inside])
        np.testing.assert_array_equal(per_sample[i][~inside], image[~inside])


PARTNERS = [3, 0, 2, 5, 1, 4]  # sample 2 is its own partner


def test_mix_images_and_one_hot_labels(engine: Engine) -> None:
    lam = [0.0, 0.25, 0.5, 0.9, 1.0, 0.33]
    out = engine.apply("mix", PHOTOS, PARTNERS, lam)
    labels = np.eye(6, dtype=np.float32)[[0, 1, 2, 3, 4, 0]]
    mixed = engine.apply("mix", labels, PARTNERS, lam)
    for i, p in enumerate(PARTNERS):
        expected = lam[i] * PHOTOS[i] + (1 - lam[i]) * PHOTOS[p]
        np.testing.assert_allclose(out[i], expected, atol=1e-4)
        np.testing.assert_allclose(
            mixed[i], lam[i] * labels[i] + (1 - lam[i]) * labels[p], atol=1e-6
        )
    # the pixel value gives back lambda: constant images 0 and 255
    flat = np.zeros((6, 4, 4, 3), np.float32)
    flat[0::2] = 255.0  # sample 0's partner is black, sample 1's white
    back = engine.apply("mix", flat, PARTNERS, lam)[:, 0, 0, 0] / 255.0
    np.testing.assert_allclose(back[:2], [lam[0], 1 - lam[1]], atol=1e-6)


def test_paste_images_and_index_masks(engine: Engine) -> None:
    boxes = [INSIDE[k] for k in ("y0", "x0", "h", "w")]
    out = engine.apply("paste", PHOTOS, PARTNERS, *boxes)
    masks = np.arange(6, dtype=np.uint8)[:, None, None, None] * np.ones((1, 48, 64, 1), np.uint8)
    pasted = engine.apply("paste", masks, PARTNERS, *boxes)
    assert pasted.dtype == np.uint8
    for i, p in enumerate(PARTNERS):
        inside = _box_mask(i, PHOTOS[i].shape, INSIDE)
        np.testing.assert_array_equal(out[i][inside], PHOTOS[p][inside])
        np.testing.assert_array_equal(out[i][~inside], PHOTOS[i][~inside])
        # the fraction of the partner's class in the mask is the pasted area fraction
        assert (pasted[i] == p).mean() == (inside.mean() if p != i else 1.0)


def _canvas_window(x: np.ndarray, partners: list[list[int]], rows, columns) -> np.ndarray:
    """Mosaic's reference: the ``H x W`` window at ``(row, column)`` of ``[[a, b], [c, d]]``."""
    h, w = x.shape[1:3]
    out = []
    for i, (r, c) in enumerate(zip(rows, columns, strict=True)):
        a, b, cc, d = x[i], *(x[p[i]] for p in partners)
        canvas = np.concatenate([np.concatenate([a, b], 1), np.concatenate([cc, d], 1)], 0)
        out.append(canvas[r : r + h, c : c + w])
    return np.stack(out)


MOSAIC_PARTNERS = [PARTNERS, [1, 2, 3, 4, 5, 0], [0, 0, 1, 1, 2, 2]]
MOSAIC_CUTS = {
    "inside": ([10, 24, 1, 47, 30, 5], [32, 1, 63, 20, 40, 9]),
    "edges": ([0, 48, 0, 48, 20, 48], [0, 0, 64, 64, 64, 30]),
    # one part empty in every sample (DALI's cat leaves such an input out)
    "one empty part": ([48, 0, 0, 0, 0, 0], [30, 0, 0, 0, 0, 0]),
    "another": ([0, 48, 0, 0, 0, 0], [0, 30, 0, 0, 0, 0]),
    "uncut": ([0] * 6, [0] * 6),
}


def _assert_mosaic(kernel: Callable[..., Any], run: Callable[..., np.ndarray], cuts: str) -> None:
    """Images and ``uint8`` masks alike: each sample the window of the 2x2 canvas of itself
    and its three partners at its cut."""
    rows, columns = MOSAIC_CUTS[cuts]
    expected = _canvas_window(PHOTOS, MOSAIC_PARTNERS, rows, columns)

    def mosaic(x: Any, a: Any, b: Any, c: Any, row: Any, column: Any) -> Any:
        return kernel(x, [a, b, c], row, column)

    out = run(mosaic, PHOTOS, *MOSAIC_PARTNERS, rows, columns)
    np.testing.assert_array_equal(out, expected)
    masks = (PHOTOS[..., :1] // 64).astype(np.uint8)
    moved = run(mosaic, masks, *MOSAIC_PARTNERS, rows, columns)
    assert moved.dtype == np.uint8
    np.testing.assert_array_equal(moved, (expected[..., :1] // 64).astype(np.uint8))


@pytest.mark.parametrize("cuts", list(MOSAIC_CUTS))
def test_mosaic_is_the_window_of_the_four_images(engine: Engine, cuts: str) -> None:
    _assert_mosaic(engine.module.mosaic, engine.run, cuts)


@pytest.mark.parametrize("cuts", list(MOSAIC_CUTS))
def test_dali_gpu_graphs_mosaic_cuts_give_the_same_windows(cuts: str) -> None:
    """The kernel DALI's GPU graphs take (subscripts and ``cat``: no image shape read on the
    host), run on the CPU here."""
    _assert_mosaic(dali_pixels._mosaic_by_cuts, run_dali, cuts)


def test_blend_weighs_each_partner(engine: Engine) -> None:
    weights = np.random.default_rng(4).dirichlet(np.ones(4), len(PHOTOS)).T.astype(np.float32)
    labels = np.eye(6, dtype=np.float32)[[0, 1, 2, 3, 4, 0]]

    def blend(x: Any, a: Any, b: Any, c: Any, *w: Any) -> Any:
        return engine.module.blend(x, [a, b, c], list(w))

    out = engine.run(blend, labels, *MOSAIC_PARTNERS, *weights)
    expected = weights[0][:, None] * labels
    for p, w in zip(MOSAIC_PARTNERS, weights[1:], strict=True):
        expected = expected + w[:, None] * labels[p]
    np.testing.assert_allclose(out, expected, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)


def test_mosaic_and_blend_dali_gpu_graphs_keep_the_device_rules() -> None:
    from daliaug.engines.dali.check import graph_problems

    rows, columns = MOSAIC_CUTS["inside"]
    weights = [[0.25] * 6] * 4
    graphs = {
        "mosaic": (
            lambda x, a, b, c, r, k: dali_pixels.mosaic(x, [a, b, c], r, k),
            [rows, columns],
        ),
        "blend": (lambda x, a, b, c, *w: dali_pixels.blend(x, [a, b, c], list(w)), weights),
    }
    for op, extra in graphs.values():
        params = [*MOSAIC_PARTNERS, *extra]
        assert (
            graph_problems(lambda op=op, params=params: _dali_graph(op, PHOTOS, params, "gpu"))
            == []
        )


def test_recolour_is_the_colour_map_plus_the_weighed_means(engine: Engine) -> None:
    """``M @ rgb + t + N @ mean`` per sample (mean: each image's per-channel mean), clipped."""
    rng = np.random.default_rng(5)
    rows = rng.uniform(-0.5, 1.5, (len(PHOTOS), 3, 4)) * np.array([1, 1, 1, 40.0])
    means = rng.uniform(-0.5, 0.5, (len(PHOTOS), 3, 3))
    entries = np.concatenate([rows.reshape(-1, 12), means.reshape(-1, 9)], 1)
    out = engine.run(lambda x, *e: engine.module.recolour(x, list(e)), PHOTOS, *entries.T)
    mean = PHOTOS.mean(axis=(1, 2), dtype=np.float64)
    shift = np.einsum("ncj,nj->nc", means, mean) + rows[..., 3]
    expect = np.einsum("ncj,nhwj->nhwc", rows[..., :3], PHOTOS) + shift[:, None, None, :]
    np.testing.assert_allclose(out, np.clip(expect, 0, 255), atol=2e-3)


_rng = np.random.default_rng(22)
_N = len(PHOTOS)
CASES: dict[str, tuple[list[list[float]], dict[str, Any], float]] = {
    # op: per-sample parameters, fixed arguments, largest TF - DALI difference allowed
    "solarize": ([_rng.uniform(0, 256, _N).tolist()], {}, 0.0),
    "posterize": ([_rng.integers(0, 9, _N).tolist()], {}, 0.0),
    "equalize": ([], {}, 0.0),
    "auto_contrast": ([], {}, 1e-4),
    "sharpness": ([_rng.uniform(0, 2, _N).tolist()], {}, 1e-3),
    "gaussian_blur": ([_rng.uniform(0.1, 2, _N).tolist()], {"size": 5}, 1e-3),
    "erase": ([BOXES[k] for k in ("y0", "x0", "h", "w")], {"fill": (0.0, 127.5, 255.0)}, 0.0),
    "mix": ([PARTNERS, _rng.uniform(0, 1, _N).tolist()], {}, 1e-4),
    "paste": ([PARTNERS, *(INSIDE[k] for k in ("y0", "x0", "h", "w"))], {}, 0.0),
    "add_clipped": ([_rng.uniform(-100, 100, _N).tolist()], {}, 0.0),
    "scaled": ([_rng.uniform(0, 1, _N).tolist()], {}, 0.0),
    "keras_saturation": ([_rng.uniform(-0.5, 3, _N).tolist()], {"low": 0.0, "high": 255.0}, 1e-3),
    "keras_hue": ([_rng.uniform(-0.5, 0.5, _N).tolist()], {}, 1e-3),
}


@pytest.mark.parametrize("op", list(CASES))
def test_engines_agree_on_fractional_photos(op: str) -> None:
    params, fixed, tolerance = CASES[op]
    images = _fractional(PHOTOS)
    tf_out = ENGINES["tf"].apply(op, images, *params, **fixed)
    dali_out = ENGINES["dali"].apply(op, images, *params, **fixed)
    assert np.abs(tf_out - dali_out).max() <= tolerance


@pytest.mark.parametrize("op", list(CASES))
def test_dali_gpu_graph_keeps_the_device_rules(op: str) -> None:
    from daliaug.engines.dali.check import graph_problems

    params, fixed, _ = CASES[op]
    graph = partial(getattr(dali_pixels, op), **fixed)
    assert graph_problems(lambda: _dali_graph(graph, PHOTOS, params, "gpu")) == []


@pytest.mark.parametrize(
    "op", ["solarize", "posterize", "sharpness", "gaussian_blur", "mix", "keras_saturation"]
)
def test_numbers_act_as_per_sample_parameters(engine: Engine, op: str) -> None:
    """A Python number is the same parameter for every sample (a folded constant)."""
    params, fixed, _ = CASES[op]
    first = [p[0] for p in params]
    per_sample = engine.apply(op, PHOTOS, *([v] * _N for v in first), **fixed)
    numbers = engine.run(lambda x: getattr(engine.module, op)(x, *first, **fixed), PHOTOS)
    np.testing.assert_allclose(numbers, per_sample, atol=1e-4)  # constants fold differently


CHOICES = (("solarize", {"threshold": 128.0}), ("auto_contrast", {}), ("equalize", {}))


def _chosen(module: Kernels, one_at_a_time: bool) -> Callable[..., Any]:
    """``module.choose`` among :data:`CHOICES` by per-sample flags, on the batch or, with
    ``one_at_a_time``, sample by sample (``each_sample``)."""

    def stage(x: Any, *flags: Any) -> Any:
        ops = [partial(getattr(module, name), **fixed) for name, fixed in CHOICES]
        choose = partial(module.choose, list(zip(flags, ops, strict=True)))
        return module.each_sample(choose, x) if one_at_a_time else choose(x)

    return stage


@pytest.mark.parametrize("one_at_a_time", [False, True])
def test_choose_gives_each_sample_its_chosen_operation(engine: Engine, one_at_a_time: bool) -> None:
    """Per sample the operation whose flag is 1, or none (the TF engine runs only the chosen
    one sample by sample, and every one on the whole batch)."""
    picks = [0, 1, 2, 3, 1, 0]  # 0: none; k: the k-th of CHOICES
    flags = [[float(p == k + 1) for p in picks] for k in range(len(CHOICES))]
    out = engine.run(_chosen(engine.module, one_at_a_time), PHOTOS, *flags)
    for i, pick in enumerate(picks):
        alone = PHOTOS[i : i + 1]
        if pick:
            name, fixed = CHOICES[pick - 1]
            alone = engine.apply(name, alone, **fixed)
        np.testing.assert_allclose(out[i], alone[0], atol=1e-4)
