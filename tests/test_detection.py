"""Detection end to end, against the real things: boxes moved by each geometric transform (with
its parameters pinned) against torchvision v2's functional box ops and Keras' own layers with
``bounding_box_format``; boxes and keypoints against the pixels they stand for (drawn white on
black and warped by the engines, DALI on the CPU and TensorFlow); the same boxes on tf.data,
JAX and PyTorch; and the rules: ``min_area``, ``min_visibility``, ``max_boxes``, ``mixup``, and
what detection refuses.

Conventions found on the way (each checked below): torchvision's ``affine`` turns clockwise for
a positive ``angle`` (``rotate``, like daliaug's ``rotation`` and Keras, counter-clockwise) and
shears ``x' = x - tan(shear) (y - H/2)`` (daliaug's ``shear``: ``+``); torchvision's
perspective maps box corners through its start-to-end map as they are (pixel-corner
coordinates), and its ``RandomPerspective`` starts from ``[0, 0] ... [W - 1, H - 1]``, while
daliaug's ``perspective`` moves the corner pixel centres (index coordinates): the same map as
torchvision's from ``start + 0.5`` to ``end + 0.5``, which the comparison passes. Where a
Keras layer's boxes leave its own pixels, the case says so and daliaug follows the pixels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.algebra import Canvas
from daliaug.boxes import Rules, Targets, from_xyxy, to_xyxy
from tests.helpers import spec_of

SRC = (48, 64)
"""Height, width of the source images."""
BOXES = np.array([[6, 5, 30, 22], [40, 10, 60, 44], [20, 30, 34, 46], [1, 36, 12, 47]], np.float32)


def moved_boxes(
    transforms: list[dict[str, Any]],
    params: dict[str, float],
    boxes: np.ndarray = BOXES,
    out: tuple[int, int] = SRC,
    rules: Rules | None = None,
) -> np.ndarray:
    """``boxes`` (xyxy on a ``SRC`` image) through daliaug's plan of ``transforms`` with the
    parameters ``params`` (``"<index>.<name>"``), as the feed moves them (arrays: no ROI
    decoding): each kept box, in order."""
    config = daliaug.load_config(
        {"source": {"type": "arrays"}, "image_size": list(out), "transforms": transforms}
    )
    plan = config.plan
    rows = {key: np.array([params[key]], np.float64) for key in plan.param_keys}
    source = Canvas(h=np.array([float(SRC[0])]), w=np.array([float(SRC[1])]))
    maps, mirrored = plan.point_maps(rows, source, fuse_roi=False)
    targets = Targets.of([boxes], [np.arange(len(boxes))], None)
    moved = targets.through(maps, plan.image_size, mirrored, rules or Rules())
    return moved.boxes[0, : moved.count[0]]


_TORCHVISION_OPS: list[Any] = []


def torchvision_functional() -> Any:
    """``torchvision.transforms.v2.functional``. PyPI's torchvision wheel is built for CUDA
    torch; against the CPU torch wheel its compiled ops do not load, and its import stops at
    registering fake kernels for two of them (``nms``, ``qnms``). Their schemas are declared
    here then: the box functions are pure torch and use neither."""
    import torch

    try:
        import torchvision  # noqa: F401
    except RuntimeError as error:
        if "torchvision::nms" not in str(error):
            raise
        for name in [n for n in sys.modules if n.startswith("torchvision")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "FRAGMENT")
        for op in ("nms", "qnms"):
            lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _TORCHVISION_OPS.append(lib)
    from torchvision.transforms.v2 import functional

    return functional


def torchvision_boxes(op: str, boxes: np.ndarray = BOXES, **kwargs: Any) -> np.ndarray:
    """torchvision v2's functional ``op`` on ``boxes`` (xyxy, canvas ``SRC``), non-empty boxes
    kept (torchvision clamps to the canvas and keeps empty boxes until
    ``SanitizeBoundingBoxes``)."""
    import torch

    functional = torchvision_functional()
    from torchvision import tv_tensors

    given = tv_tensors.BoundingBoxes(torch.tensor(boxes), format="XYXY", canvas_size=SRC)
    out = getattr(functional, op)(given, **kwargs).numpy()
    return out[(out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])]


def affine(**kwargs: Any) -> dict[str, Any]:
    return {"angle": 0.0, "translate": [0.0, 0.0], "scale": 1.0, "shear": [0.0, 0.0], **kwargs}


def resized_window(area: float, log_ratio: float, u: float, v: float) -> list[int]:
    """``random_resized_crop``'s window (top, left, height, width) on ``SRC``, from its
    documented formula (no round half: the values below avoid ties)."""
    h_src, w_src = SRC
    s = area * w_src * h_src
    w = min(max(round(np.sqrt(s * np.exp(log_ratio))), 1), w_src)
    h = min(max(round(np.sqrt(s / np.exp(log_ratio))), 1), h_src)
    x = min(int(np.floor(u * (w_src - w + 1))), w_src - w)
    y = min(int(np.floor(v * (h_src - h + 1))), h_src - h)
    return [y, x, h, w]


CROP = {"area": 0.37, "log_ratio": 0.21, "u": 0.43, "v": 0.71}
FUSED = [
    {"type": "shear", "angle": 30},
    {"type": "zoom", "factor": [0.5, 2]},
    {"type": "rotation", "angle": 90},
    {"type": "shift", "x": 0.3, "y": 0.3},
]
TORCHVISION = {
    "horizontal-flip": (
        [{"type": "flip", "horizontal": 1.0}],
        {"0.flip_x": 1.0, "0.flip_y": 0.0},
        SRC,
        ("horizontal_flip", {}),
    ),
    "vertical-flip": (
        [{"type": "flip", "horizontal": 0.0, "vertical": 1.0}],
        {"0.flip_x": 0.0, "0.flip_y": 1.0},
        SRC,
        ("vertical_flip", {}),
    ),
    "rotation": (
        [{"type": "rotation", "angle": 40}],
        {"0.angle": 33.0},
        SRC,
        ("rotate", {"angle": 33.0}),
    ),
    "rotation-clockwise": (
        [{"type": "rotation", "angle": 90}],
        {"0.angle": -71.0},
        SRC,
        ("rotate", {"angle": -71.0}),
    ),
    "translation": (
        [{"type": "shift", "x": 0.3, "y": 0.3}],
        {"0.dx": 0.125, "0.dy": -0.1875},
        SRC,
        ("affine", affine(translate=[8.0, -9.0])),
    ),
    "scale": (
        [{"type": "zoom", "factor": [0.5, 2]}],
        {"0.zoom_x": 1.3, "0.zoom_y": 1.3},
        SRC,
        ("affine", affine(scale=1.3)),
    ),
    "shear": (
        [{"type": "shear", "angle": 30}],
        {"0.angle": 17.0},
        SRC,
        ("affine", affine(shear=[-17.0, 0.0])),
    ),
    "affine-fused": (
        FUSED,
        {
            "0.angle": 12.0,
            "1.zoom_x": 0.8,
            "1.zoom_y": 0.8,
            "2.angle": 25.0,
            "3.dx": 0.1,
            "3.dy": 0.05,
        },
        SRC,
        ("affine", affine(angle=-25.0, translate=[6.4, 2.4], scale=0.8, shear=[-12.0, 0.0])),
    ),
    "crop": (
        [{"type": "keras_random_crop", "size": [30, 40]}],
        {"0.u": 0.35, "0.v": 0.6},
        (30, 40),
        ("crop", {"top": 11, "left": 8, "height": 30, "width": 40}),
    ),
    "center-crop": (
        [{"type": "center_crop", "size": [28, 36]}],
        {},
        (28, 36),
        ("center_crop", {"output_size": [28, 36]}),
    ),
    "resized-crop": (
        [{"type": "random_resized_crop"}],
        {f"0.{k}": v for k, v in CROP.items()},
        (40, 36),
        (
            "resized_crop",
            dict(
                zip(("top", "left", "height", "width"), resized_window(**CROP), strict=True),
                size=[40, 36],
            ),
        ),
    ),
    "resize": ([], {}, (30, 100), ("resize", {"size": [30, 100]})),
}


def perspective_case() -> tuple[dict[str, float], list[list[float]], list[list[float]]]:
    """Pinned corner draws of ``perspective`` and, from its documented formula, where the
    corner pixel centres go: torchvision's start and end points (pixel-corner coordinates)."""
    h, w = SRC
    draws = {"tl_x": 0.9, "tl_y": 0.2, "tr_x": 0.55, "tr_y": 0.7, "br_x": 0.1, "br_y": 0.95}
    draws |= {"bl_x": 0.65, "bl_y": 0.4}
    reach = {"x": np.floor(0.5 * (w // 2)), "y": np.floor(0.5 * (h // 2))}

    def inward(name: str) -> float:
        return float(np.floor(draws[name] * (reach[name[-1]] + 1)))

    far_x, far_y = w - 1.0, h - 1.0
    end = [
        [inward("tl_x"), inward("tl_y")],
        [far_x - inward("tr_x"), inward("tr_y")],
        [far_x - inward("br_x"), far_y - inward("br_y")],
        [inward("bl_x"), far_y - inward("bl_y")],
    ]
    start = [[0.0, 0.0], [far_x, 0.0], [far_x, far_y], [0.0, far_y]]
    params = {"0.perspective": 1.0} | {f"0.{k}": v for k, v in draws.items()}
    return params, [[x + 0.5, y + 0.5] for x, y in start], [[x + 0.5, y + 0.5] for x, y in end]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TORCHVISION))
def test_boxes_move_as_torchvision_moves_them(name: str) -> None:
    transforms, params, out, (op, kwargs) = TORCHVISION[name]
    ours = moved_boxes(transforms, params, out=out)
    theirs = torchvision_boxes(op, **kwargs)
    assert ours.shape == theirs.shape, (ours, theirs)
    np.testing.assert_allclose(ours, theirs, atol=0.5)


def test_perspective_boxes_as_torchvision() -> None:
    params, start, end = perspective_case()
    transforms = [{"type": "perspective", "distortion_scale": 0.5, "probability": 1.0}]
    ours = moved_boxes(transforms, params)
    theirs = torchvision_boxes("perspective", startpoints=start, endpoints=end)
    np.testing.assert_allclose(ours, theirs, atol=0.5)


def test_torchvision_affine_turns_the_other_way() -> None:
    """The sign conventions the table above relies on, seen on one box."""
    box = np.array([[10, 20, 30, 30]], np.float32)
    ccw = torchvision_boxes("rotate", box, angle=30.0)
    np.testing.assert_allclose(
        torchvision_boxes("affine", box, **affine(angle=-30.0)), ccw, atol=1e-4
    )
    # counter-clockwise on screen (y down): a box left of the centre moves down
    assert (
        ccw[0, 3] > 30
        and moved_boxes([{"type": "rotation", "angle": 40}], {"0.angle": 30.0}, box)[0, 3] > 30
    )


def drawn(boxes: np.ndarray = BOXES, size: tuple[int, int] = SRC) -> np.ndarray:
    """One black image per box, the box's pixels white (xyxy of whole pixels)."""
    images = np.zeros((len(boxes), *size, 3), np.uint8)
    for image, (x0, y0, x1, y1) in zip(images, boxes.astype(int), strict=True):
        image[y0:y1, x0:x1] = 255
    return images


def extents(images: np.ndarray) -> np.ndarray:
    """Each image's white pixels' enclosing box (xyxy, pixel corners); -1 where none are."""
    out = np.full((len(images), 4), -1.0)
    for k, image in enumerate(np.asarray(images, np.float32)):
        ys, xs = np.nonzero(image.reshape(*image.shape[:2], -1)[..., 0] > 127)
        if len(xs):
            out[k] = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
    return out


@dataclass(frozen=True)
class KerasCase:
    """A Keras layer with ``bounding_box_format`` and the daliaug transform it converts to
    (``daliaug/keras/converters.py``), with the same parameters: Keras' transformation
    (``None``: its own draw, pinned by a factor ``(a, a)``) and daliaug's."""

    layer: Callable[[], Any]
    transformation: Callable[[tuple[int, ...]], Any] | None
    transforms: list[dict[str, Any]]
    params: dict[str, float]
    out: tuple[int, int] = SRC
    keras_boxes_right: bool = True
    """False where Keras' own boxes disagree with its own pixels (then daliaug is compared
    with the pixels only)."""
    compared: int = len(BOXES)
    """The leading boxes compared with the pixels (a sheared box cut by the border encloses its
    corners, not the visible pixels)."""


def _flips(shape: tuple[int, ...]) -> dict[str, Any]:
    return {"flips": np.ones((shape[0], 1, 1, 1), bool), "input_shape": shape}


def _shear(x: float, y: float) -> Callable[[tuple[int, ...]], dict[str, Any]]:
    def transformation(shape: tuple[int, ...]) -> dict[str, Any]:
        factors = np.tile(np.array([[x, y]], np.float32), (shape[0], 1))
        return {"shear_factor": factors, "input_shape": shape}

    return transformation


PERSPECTIVE_MOVES = {"tr_x": 0.2, "br_x": -0.15, "br_y": 0.1, "bl_y": -0.2}


def _perspective(shape: tuple[int, ...]) -> dict[str, Any]:
    """Keras' corners (top-left, top-right, bottom-left, bottom-right) moved by
    :data:`PERSPECTIVE_MOVES` as its ``get_random_transformation`` moves them."""
    h, w = shape[1] - 1.0, shape[2] - 1.0
    start = np.array([[0, 0], [w, 0], [0, h], [w, h]], np.float32)
    f = PERSPECTIVE_MOVES
    factors = np.array([[0, 0], [f["tr_x"], 0], [0, f["bl_y"]], [f["br_x"], f["br_y"]]])
    end = start * (1 + factors.astype(np.float32))
    n = shape[0]
    return {
        "apply_perspective": np.ones(n, bool),
        "start_points": np.tile(start[None], (n, 1, 1)),
        "end_points": np.tile(end[None], (n, 1, 1)),
        "input_shape": shape,
    }


def keras_cases() -> dict[str, KerasCase]:
    import keras

    layers, near = keras.layers, {"interpolation": "nearest", "bounding_box_format": "xyxy"}
    fill = {"fill_mode": "constant", **near}
    return {
        "flip": KerasCase(
            lambda: layers.RandomFlip("horizontal", bounding_box_format="xyxy"),
            _flips,
            [{"type": "keras_flip", "mode": "horizontal"}],
            {"0.flip": 1.0},
        ),
        "flip-both": KerasCase(
            lambda: layers.RandomFlip(bounding_box_format="xyxy"),
            _flips,
            [{"type": "keras_flip"}],
            {"0.flip": 1.0},
        ),
        # Keras turns and zooms boxes about a point a fraction of a pixel off its pixels'
        # centre (a centred box's centre moves by 0.2-0.4 px under RandomRotation(0.1));
        # daliaug's follow the pixels: within half a pixel of Keras' boxes all the same
        "rotation": KerasCase(
            lambda: layers.RandomRotation((0.07, 0.07), **fill),
            None,
            [{"type": "rotation", "angle": 90}],
            {"0.angle": 0.07 * 360},
            compared=3,
        ),
        "translation": KerasCase(
            lambda: layers.RandomTranslation((0.1, 0.1), (-0.2, -0.2), **fill),
            None,
            [{"type": "shift", "x": 0.3, "y": 0.3}],
            {"0.dx": -0.2, "0.dy": 0.1},
        ),
        "zoom-out": KerasCase(
            lambda: layers.RandomZoom((0.3, 0.3), **fill),
            None,
            [{"type": "keras_zoom", "height_factor": 0.5}],
            {"0.height_zoom": 1.3, "0.width_zoom": 1.3},
        ),
        "zoom-in": KerasCase(
            lambda: layers.RandomZoom((-0.2, -0.2), (-0.1, -0.1), **fill),
            None,
            [{"type": "keras_zoom", "height_factor": 0.5, "width_factor": 0.5}],
            {"0.height_zoom": 0.8, "0.width_zoom": 0.9},
        ),
        # Keras shears its boxes in relative coordinates (by shear * W / H for x) and picks
        # the wrong corners for y: its boxes leave its own pixels (by 4.6 px here)
        "shear-x": KerasCase(
            lambda: layers.RandomShear(0.3, 0.2, **fill),
            _shear(0.3, 0.0),
            [{"type": "keras_shear", "x_factor": 0.3, "y_factor": 0.2}],
            {"0.sign": 1.0, "0.shear_x": 0.3, "0.shear_y": 0.0},
            keras_boxes_right=False,
            compared=3,
        ),
        "shear-y": KerasCase(
            lambda: layers.RandomShear(0.3, 0.2, **fill),
            _shear(0.0, -0.2),
            [{"type": "keras_shear", "x_factor": 0.3, "y_factor": 0.2}],
            {"0.sign": -1.0, "0.shear_x": 0.0, "0.shear_y": 0.2},
            keras_boxes_right=False,
        ),
        # Keras' RandomCrop subtracts the top offset from x and the left one from y, never
        # clips at the window's far side, and never scales where it resizes an image smaller
        # than the window: its boxes leave its own pixels
        "random-crop": KerasCase(
            lambda: layers.RandomCrop(30, 40, bounding_box_format="xyxy"),
            lambda shape: (11, 8),
            [{"type": "keras_random_crop", "size": [30, 40]}],
            {"0.u": (8 + 0.5) / 25, "0.v": (11 + 0.5) / 19},
            (30, 40),
            keras_boxes_right=False,
        ),
        "center-crop": KerasCase(
            lambda: layers.CenterCrop(33, 47, bounding_box_format="xyxy"),
            None,
            [{"type": "keras_center_crop", "size": [33, 47]}],
            {},
            (33, 47),
        ),
        "center-crop-small": KerasCase(
            lambda: layers.CenterCrop(56, 40, bounding_box_format="xyxy"),
            None,
            [{"type": "keras_center_crop", "size": [56, 40]}],
            {},
            (56, 40),
        ),
        "random-crop-fallback": KerasCase(
            lambda: layers.RandomCrop(56, 48, bounding_box_format="xyxy"),
            None,
            [{"type": "keras_random_crop", "size": [56, 48]}],
            {"0.u": 0.5, "0.v": 0.5},
            (56, 48),
            keras_boxes_right=False,
        ),
        "resizing": KerasCase(
            lambda: layers.Resizing(24, 40, **near),
            None,
            [{"type": "resize", "size": [24, 40]}],
            {},
            (24, 40),
        ),
        # Keras moves the boxes by a crop offset floored after scaling (5 px at 32/48 here)
        # where its pixels are cut at 8 source pixels (5.33 px): a third of a pixel apart
        "resizing-crop": KerasCase(
            lambda: layers.Resizing(32, 32, crop_to_aspect_ratio=True, **near),
            None,
            [{"type": "keras_resize", "size": [32, 32], "aspect": "crop"}],
            {},
            (32, 32),
        ),
        "resizing-pad": KerasCase(
            lambda: layers.Resizing(40, 40, pad_to_aspect_ratio=True, **near),
            None,
            [{"type": "keras_resize", "size": [40, 40], "aspect": "pad"}],
            {},
            (40, 40),
        ),
        "perspective": KerasCase(
            lambda: layers.RandomPerspective(1.0, 0.5, **near),
            _perspective,
            [{"type": "keras_perspective", "scale": 0.5, "probability": 1.0}],
            {"0.perspective": 1.0} | {f"0.{k}": v for k, v in PERSPECTIVE_MOVES.items()},
        ),
    }


KERAS_CASES = [
    "flip",
    "flip-both",
    "rotation",
    "translation",
    "zoom-out",
    "zoom-in",
    "shear-x",
    "shear-y",
    "random-crop",
    "center-crop",
    "center-crop-small",
    "random-crop-fallback",
    "resizing",
    "resizing-crop",
    "resizing-pad",
    "perspective",
]


def keras_moved(case: KerasCase) -> tuple[np.ndarray, np.ndarray]:
    """Keras' own boxes for :data:`BOXES` (those it keeps: label not -1, some area) and its
    pixels' extents, one image per box, through the case's layer and transformation."""
    layer = case.layer()
    images = drawn().astype(np.float32)
    shape = images.shape
    t = (
        layer.get_random_transformation(images)
        if case.transformation is None
        else case.transformation(shape)
    )
    pixels = extents(layer.transform_images(images, t, training=True))
    given = {"boxes": BOXES[:, None].copy(), "labels": np.zeros((len(BOXES), 1), np.int32)}
    out = layer.transform_bounding_boxes(given, t, training=True)
    boxes, labels = np.asarray(out["boxes"])[:, 0], np.asarray(out["labels"])[:, 0]
    kept = (labels != -1) & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    return boxes[kept], pixels


@pytest.mark.parametrize("name", KERAS_CASES)
def test_boxes_move_as_keras_layers_move_them(name: str) -> None:
    case = keras_cases()[name]
    ours = moved_boxes(case.transforms, case.params, out=case.out)
    theirs, pixels = keras_moved(case)
    if case.keras_boxes_right:
        assert ours.shape == theirs.shape, (ours, theirs)
        np.testing.assert_allclose(ours, theirs, atol=0.5)
    else:
        n = min(len(theirs), case.compared)
        assert np.abs(theirs[:n] - pixels[:n]).max() > 1.5, "Keras' boxes follow its pixels now"
    shown = pixels[: case.compared]
    shown = shown[shown[:, 0] >= 0]
    np.testing.assert_allclose(ours[: len(shown)], shown, atol=1.0)


@pytest.mark.parametrize(
    ("name", "fmt"), [("translation", "rel_yxyx"), ("resizing", "center_xywh"), ("zoom-in", "xywh")]
)
def test_keras_layers_called_on_their_dict_in_any_format(name: str, fmt: str) -> None:
    """A layer called as Keras users call it (``{"images", "bounding_boxes"}``, boxes in
    ``bounding_box_format``), against daliaug's boxes given back in that format."""
    import keras

    case = keras_cases()[name]
    layer = case.layer()
    layer.bounding_box_format = fmt
    given = keras.utils.bounding_boxes.convert_format(BOXES, "xyxy", fmt, *SRC)
    data = {
        "images": drawn()[:1].astype(np.float32),
        "bounding_boxes": {"boxes": np.asarray(given)[None], "labels": np.zeros((1, 4), np.int32)},
    }
    out = layer(data, training=True)["bounding_boxes"]
    kept = np.asarray(out["labels"])[0] != -1
    ours = from_xyxy(moved_boxes(case.transforms, case.params, out=case.out), fmt, case.out)
    scale = 1.0 if not fmt.startswith("rel_") else 1.0 / max(case.out)
    np.testing.assert_allclose(ours, np.asarray(out["boxes"])[0][kept], atol=0.5 * scale)


SCENE_BOXES = np.concatenate(
    [BOXES, [[15, 12, 45, 36], [5, 25, 25, 45], [35, 2, 62, 20], [22, 8, 40, 40]]]
).astype(np.float32)


def scene() -> tuple[np.ndarray, dict[str, list[np.ndarray]]]:
    """One image per box of :data:`SCENE_BOXES`: the box white in channel 0, and its two
    keypoints (pixel centres two pixels inside its top-left and three inside its
    bottom-right corner) as 3x3 white dots in channels 1 and 2; Keras' targets dict."""
    images = drawn(SCENE_BOXES)
    images[..., 1:] = 0
    points = []
    for image, (x0, y0, x1, y1) in zip(images, SCENE_BOXES.astype(int), strict=True):
        dots = [(x0 + 2, y0 + 2), (x1 - 3, y1 - 3)]
        for channel, (px, py) in enumerate(dots, start=1):
            image[py - 1 : py + 2, px - 1 : px + 2, channel] = 255
        points.append(np.array([[[px + 0.5, py + 0.5, 1.0] for px, py in dots]], np.float32))
    y = {
        "boxes": [box[None] for box in SCENE_BOXES],
        "labels": [np.array([k]) for k in range(len(SCENE_BOXES))],
        "keypoints": points,
    }
    return images, y


PIXEL_CONFIGS = {
    # scales near 1 where a pixel stage resamples after the warp: two nearest resamplings
    # of a 3-pixel dot shrunk below 2 pixels move its centre by more than a pixel
    "affine": (
        [40, 48],
        [
            {"type": "random_resized_crop", "scale": [0.5, 1.0]},
            {"type": "flip", "horizontal": 1.0},
            {"type": "rotation", "angle": 15},
            {"type": "zoom", "factor": [0.8, 1.2]},
            {"type": "shift", "x": 0.1, "y": 0.1},
        ],
    ),
    "resize-path": (
        [36, 44],
        [
            {"type": "random_resized_crop", "scale": [0.5, 1.0]},
            {"type": "flip", "horizontal": 1.0},
            {"type": "zoom", "factor": [1.0, 1.3], "fill": "nearest"},
        ],
    ),
    "perspective": (
        [48, 64],
        [
            {"type": "flip", "horizontal": 1.0},
            {"type": "zoom", "factor": [0.9, 1.1]},
            {"type": "perspective", "distortion_scale": 0.6, "probability": 1.0},
        ],
    ),
    "keras": (
        [64, 64],
        [
            {"type": "flip", "horizontal": 1.0},
            {"type": "keras_shear", "x_factor": 0.2, "y_factor": 0.2},
            {"type": "keras_resize", "size": [64, 64], "aspect": "pad"},
            {"type": "keras_perspective", "scale": 0.4, "probability": 1.0},
        ],
    ),
}


def detection_config(name: str, **fields: Any) -> dict[str, Any]:
    """The scene through ``PIXEL_CONFIGS[name]``, sampled nearest (``resize-path``: bilinear,
    clamped at the border, axis-aligned: the engines resize a window instead of warping)."""
    size, transforms = PIXEL_CONFIGS[name]
    return {
        "source": {"type": "arrays"},
        "image_size": size,
        "batch_size": len(SCENE_BOXES),
        "shuffle": False,
        "seed": 5,
        "interpolation": "linear" if name == "resize-path" else "nearest",
        "flip_indices": [1, 0],
        "max_boxes": 2,
        "transforms": transforms,
        **fields,
    }


def first_batch(config: dict[str, Any], framework: str = "tensorflow") -> tuple[np.ndarray, dict]:
    import warnings

    from daliaug.errors import BackendWarning

    images, y = scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        dataset = daliaug.make_dataset(config, x=images, y=y, framework=framework)
    out, targets = next(iter(dataset))[:2]
    return np.asarray(out), {k: np.asarray(v) for k, v in targets.items()}


def dot_centre(channel: np.ndarray) -> np.ndarray | None:
    ys, xs = np.nonzero(channel > 127)
    return None if not len(xs) else np.array([xs.mean() + 0.5, ys.mean() + 0.5])


def assert_targets_follow_pixels(images: np.ndarray, targets: dict[str, np.ndarray]) -> None:
    """Each image's box against the extent of its white channel-0 pixels (always inside the
    box, within one pixel; equal to it within one pixel where they do not reach the border:
    a shape cut by the border leaves the box of its moved corners larger), and its
    keypoints against their dots' centres (swapped, as every config mirrors)."""
    h, w = images.shape[1:3]
    labels = targets["labels"]
    assert (np.sort(labels[:, 0]) == np.arange(len(images))).all(), labels
    for image, box, points in zip(images, targets["boxes"], targets["keypoints"], strict=True):
        found = extents(image[None, ..., :1])[0]
        assert found[0] >= 0, "the box's pixels are gone but the box was kept"
        assert (found[:2] >= box[0, :2] - 1).all() and (found[2:] <= box[0, 2:] + 1).all()
        if found[0] > 0 and found[1] > 0 and found[2] < w and found[3] < h:
            np.testing.assert_allclose(box[0], found, atol=1.0)
        for slot, channel in ((0, 2), (1, 1)):
            centre = dot_centre(image[..., channel])
            x, y, visible = points[0, slot]
            if visible:
                assert centre is not None
                np.testing.assert_allclose([x, y], centre, atol=1.0)
            else:
                assert not (0 <= x < w and 0 <= y < h)
                assert centre is None or min(*centre, w - centre[0], h - centre[1]) < 2.5


@pytest.mark.parametrize("name", list(PIXEL_CONFIGS))
def test_boxes_and_keypoints_follow_the_pixels(name: str, backend: str) -> None:
    images, targets = first_batch(detection_config(name, backend=backend))
    assert targets["boxes"].shape == (len(SCENE_BOXES), 2, 4)
    assert targets["keypoints"].shape == (len(SCENE_BOXES), 2, 2, 3)
    assert_targets_follow_pixels(images, targets)


def test_tf_engine_jax_and_pytorch_give_tf_data_s_targets() -> None:
    """The targets are made on the host from the same parameters: every engine and every
    framework's batches hold the same ones."""
    config = detection_config("affine", backend="cpu")
    _, expected = first_batch(config)
    _, on_tf = first_batch(dict(config, backend="tf"))
    for framework in ("jax", "torch"):
        _, theirs = first_batch(config, framework)
        assert sorted(theirs) == ["boxes", "keypoints", "labels"]
        for key, values in expected.items():
            np.testing.assert_array_equal(theirs[key], values, err_msg=f"{framework} {key}")
            np.testing.assert_array_equal(on_tf[key], values, err_msg=f"tf engine {key}")


def shifted_config(**fields: Any) -> dict[str, Any]:
    """The scene moved 24 pixels right (a shift of 3/8 of 64), nothing else."""
    return {
        "source": {"type": "arrays"},
        "image_size": list(SRC),
        "batch_size": len(SCENE_BOXES),
        "shuffle": False,
        "seed": 2,
        "backend": "cpu",
        "transforms": [{"type": "shift", "x": [0.375, 0.375]}],
        **fields,
    }


def test_min_area_and_min_visibility_drop_boxes_cut_by_the_border() -> None:
    moved = SCENE_BOXES + np.array([24, 0, 24, 0], np.float32)
    visible = np.clip(moved[:, 2], 0, 64) - np.clip(moved[:, 0], 0, 64)
    area = visible * (moved[:, 3] - moved[:, 1])
    share = visible / (moved[:, 2] - moved[:, 0])
    for rules, keep in (
        ({}, visible > 0),
        ({"min_area": 300}, area >= 300),
        ({"min_visibility": 0.6}, (share >= 0.6) & (visible > 0)),
    ):
        _, targets = first_batch(shifted_config(**rules))
        kept = targets["labels"][:, 0] != -1
        assert 0 < keep.sum() < len(keep)
        np.testing.assert_array_equal(kept, keep, err_msg=str(rules))
        boxes = targets["boxes"][kept, 0]
        np.testing.assert_allclose(boxes, np.clip(moved[keep], 0, [64, 48, 64, 48]), atol=1e-4)


def test_more_boxes_than_max_boxes_warn_with_the_count() -> None:
    from daliaug.errors import DataWarning

    images, _ = scene()
    y = {"boxes": [SCENE_BOXES[:3]] * 2 + [SCENE_BOXES[:1]] * 6, "labels": [np.arange(3)] * 2}
    y["labels"] += [np.array([0])] * 6
    config = shifted_config(transforms=[], max_boxes=2)
    with pytest.warns(DataWarning, match=r"2 image\(s\) .* max_boxes: 2 .*most: 3"):
        dataset = daliaug.make_dataset(config, x=images, y=y)
        _, targets = next(iter(dataset))
    assert np.asarray(targets["labels"]).tolist()[:3] == [[0, 1], [0, 1], [0, -1]]


def test_mixup_joins_each_image_s_boxes_with_its_partner_s() -> None:
    config = shifted_config(transforms=[{"type": "mixup", "alpha": 1.0}], max_boxes=3)
    images, targets = first_batch(config)
    labels, boxes = targets["labels"], targets["boxes"]
    assert (labels[:, 0] == np.arange(len(labels))).all() and (labels[:, 2] == -1).all()
    np.testing.assert_array_equal(boxes[:, 0], SCENE_BOXES)
    np.testing.assert_array_equal(boxes[:, 1], SCENE_BOXES[labels[:, 1]])
    assert sorted(labels[:, 1]) == list(range(len(labels)))  # a permutation of the batch
    # Keras' MixUp with the same partners: its boxes, own then the partner's (its labels it
    # concatenates along the batch axis, (2B, N): a Keras bug, left out)
    import keras

    given = {"boxes": SCENE_BOXES[:, None], "labels": np.arange(len(labels))[:, None]}
    order = {"permutation_order": labels[:, 1]}
    theirs = np.asarray(keras.layers.MixUp().transform_bounding_boxes(given, order)["boxes"])
    np.testing.assert_array_equal(boxes[:, :2], theirs)
    # the partner's box shows in the blended pixels (its share of them is 1 - lam > 0)
    for image, (own, partner) in zip(images, boxes[:, :2], strict=True):
        union = np.concatenate([np.minimum(own[:2], partner[:2]), np.maximum(own[2:], partner[2:])])
        ys, xs = np.nonzero(image[..., 0] > 0.5)
        np.testing.assert_array_equal([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], union)


@pytest.mark.parametrize("kind", ["cutmix", "keras_cutmix", "elastic"])
def test_detection_refuses_what_cannot_move_boxes_by_name(kind: str) -> None:
    from daliaug.errors import ConfigError

    images, y = scene()
    config = shifted_config(transforms=[{"type": kind}], backend="tf")
    with pytest.raises(ConfigError, match=f"type: {kind} "):
        daliaug.make_dataset(config, x=images, y=y)


def test_flip_indices_must_name_each_keypoint() -> None:
    from daliaug.errors import ConfigError

    images, y = scene()
    config = detection_config("perspective", backend="cpu", flip_indices=[1, 0, 2])
    with pytest.raises(ConfigError, match=r"flip_indices: \[1, 0, 2\] for 2 keypoints"):
        daliaug.make_dataset(config, x=images, y=y)


def test_flip_indices_are_a_permutation_of_keypoints_there_are() -> None:
    """[0, 0] would duplicate one mirrored keypoint and lose the other; without keypoints
    there is nothing to swap."""
    from daliaug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"flip_indices.*\[0, 0\] is not a permutation of 0..1"):
        daliaug.load_config(detection_config("perspective", flip_indices=[0, 0]))
    images, y = scene()
    config = detection_config("perspective", backend="cpu")
    without = {"boxes": y["boxes"], "labels": y["labels"]}
    with pytest.raises(ConfigError, match="flip_indices: the samples have no keypoints"):
        daliaug.make_dataset(config, x=images, y=without)
    with pytest.raises(ConfigError, match="flip_indices: the samples have no keypoints"):
        daliaug.make_dataset(config, x=images, y=np.zeros(len(images), int))


def test_class_weight_with_boxes_is_refused_by_name() -> None:
    from daliaug.errors import ConfigError

    images, y = scene()
    config = detection_config("perspective", backend="cpu")
    with pytest.raises(
        ConfigError, match=r"class_weight: .*detection targets have a class per box"
    ):
        daliaug.make_dataset(config, x=images, y=y, class_weight={0: 1.0, 1: 2.0})


def test_boxes_with_fewer_keypoints_are_named_not_broadcast() -> None:
    from daliaug.errors import DataError

    images, y = scene()
    y["keypoints"][3] = y["keypoints"][3][:, :1]
    config = detection_config("perspective", backend="cpu", flip_indices=None)
    with pytest.raises(DataError, match="image 3 has 1 keypoints per box where others have 2"):
        daliaug.make_dataset(config, x=images, y=y)


def test_a_decoded_window_moves_points_as_the_whole_image_does() -> None:
    """Files decode a leading random resized crop as a window (``fuse_roi``); their points
    start in the whole source all the same."""
    config = daliaug.load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [40, 36],
            "transforms": [{"type": "random_resized_crop"}, *FUSED],
        }
    )
    plan = config.plan
    rng = np.random.default_rng(0)
    rows = {key: rng.uniform(0.1, 0.9, 5) for key in plan.param_keys}
    source = Canvas(h=np.full(5, 48.0), w=np.full(5, 64.0))
    xy = rng.uniform(0, 64, (5, 7, 2))
    window, _ = plan.point_maps(rows, source, fuse_roi=True)
    whole, _ = plan.point_maps(rows, source, fuse_roi=False)
    np.testing.assert_allclose(window[0](xy), whole[0](xy), atol=1e-4)


@pytest.mark.parametrize(
    ("turn", "axis_aligned"),
    [
        (None, True),
        ({"type": "rotation", "angle": 30}, False),
        ({"type": "shear", "angle": 20}, False),
        ({"type": "keras_affine", "rotation_range": 10, "zoom_range": 0.2}, False),
    ],
)
def test_only_a_warp_that_turns_or_shears_moves_outlines(
    turn: dict[str, Any] | None, axis_aligned: bool
) -> None:
    """Crops, flips, zooms and shifts keep boxes rectangles: the warp's map is axis-aligned
    and boxes move as two corners; a turn or a shear moves and cuts their outlines."""
    steps = [{"type": "random_resized_crop"}, {"type": "flip"}, {"type": "zoom", "factor": 0.3}]
    steps += [{"type": "shift", "x": 0.2}, *([turn] if turn else [])]
    config = daliaug.load_config(
        {"source": {"type": "arrays"}, "image_size": [40, 36], "transforms": steps}
    )
    plan = config.plan
    rows = {key: np.random.default_rng(0).uniform(0.1, 0.9, 5) for key in plan.param_keys}
    maps, mirrored = plan.point_maps(rows, Canvas(h=np.full(5, 48.0), w=np.full(5, 64.0)), True)
    assert [m.axis_aligned for m in maps] == [axis_aligned]
    boxes = Targets.of([BOXES] * 5, [np.arange(len(BOXES))] * 5, None)
    moved = boxes.through(maps, plan.image_size, mirrored, Rules())
    assert (moved.outline is None) == axis_aligned


def test_targets_stay_with_their_images_shuffled_over_epochs(backend: str) -> None:
    """Shuffled, with a short last batch, two epochs: each image's box (flipped) is its own,
    as its pixels show."""
    images, y = scene()
    config = shifted_config(backend=backend, transforms=[{"type": "flip", "horizontal": 1.0}])
    config |= {"batch_size": 3, "shuffle": True, "seed": 2}
    dataset = daliaug.make_dataset(config, x=images[:7], y={k: v[:7] for k, v in y.items()})
    for _ in range(2):
        seen = []
        for out, targets in dataset:
            labels = np.asarray(targets["labels"])[:, 0]
            expected = SCENE_BOXES[labels] * [-1, 1, -1, 1] + [64, 0, 64, 0]
            expected = expected[:, [2, 1, 0, 3]]
            np.testing.assert_allclose(np.asarray(targets["boxes"])[:, 0], expected, atol=1e-4)
            np.testing.assert_allclose(extents(np.asarray(out)[..., :1]), expected, atol=1.0)
            seen += labels.tolist()
        assert sorted(seen) == list(range(7)) and seen != list(range(7))


@pytest.mark.parametrize("fmt", ["rel_xyxy", "rel_center_yxhw", "yxyx", "center_xywh"])
def test_bounding_box_format_in_and_out(fmt: str) -> None:
    """Boxes given in ``fmt`` on 48x64 sources come out in ``fmt`` on 24x16 outputs: a
    resize leaves relative boxes as they were."""
    import keras

    images, y = scene()
    given = keras.utils.bounding_boxes.convert_format(SCENE_BOXES, "xyxy", "rel_xyxy", *SRC)
    y["boxes"] = [box[None] for box in from_xyxy(SCENE_BOXES, fmt, SRC)]
    config = shifted_config(transforms=[], image_size=[24, 16], bounding_box_format=fmt)
    dataset = daliaug.make_dataset(config, x=images, y=y)
    boxes = np.asarray(next(iter(dataset))[1]["boxes"])[:, 0]
    out = to_xyxy(boxes, fmt, (24, 16)) / np.array([16, 24, 16, 24])
    np.testing.assert_allclose(out, given, atol=1e-5)


def eleven_with_boxes(count: int, seed: int, transforms: list[dict]) -> tuple:
    """A config (batches of 4, seed ``seed``) and the prepared samples of eleven blank 40x40
    arrays with ``count`` random boxes each (labels numbered through), for a feed."""
    from daliaug.prepare import prepare_samples

    rng = np.random.default_rng(seed - 2)
    x = np.zeros((11, 40, 40, 3), np.uint8)
    shape = (count, 2, 2)
    boxes = [np.sort(rng.uniform(0, 40, shape), axis=1).reshape(count, 4) for _ in range(11)]
    y = {"boxes": boxes, "labels": [np.arange(count) + count * i for i in range(11)]}
    source = {"type": "arrays", "boxes": True}
    fields = {"image_size": 32, "batch_size": 4, "seed": seed, "transforms": transforms}
    cfg = daliaug.load_config({"source": source, **fields})
    return cfg, prepare_samples(cfg, None, x, y)


@pytest.mark.parametrize("stage", ["mixup", "mosaic"])
def test_a_chunk_of_batches_moves_boxes_as_its_batches_do(stage: str) -> None:
    """The tf.data feed makes several batches at once: each batch's partners stay within it,
    so the chunk's boxes are its batches' boxes joined."""
    from daliaug.engines.feed import EpochFeed

    config, samples = eleven_with_boxes(3, 5, [{"type": "flip"}, {"type": stage}])
    feed = EpochFeed(spec_of(config), samples, resizes=False)
    names = ("boxes", "box_labels")
    (chunk,) = feed.chunks(0, names, 12)
    each = list(feed.chunks(0, names, 4))  # one batch at a time
    for name in names:
        np.testing.assert_array_equal(chunk[name], np.concatenate([b[name] for b in each]))


def test_the_streams_of_one_feed_move_each_chunks_boxes_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DALI's tf.data dataset reads each detection input as a stream of its own: the boxes of
    a chunk are moved once and handed to every stream (the same arrays as made alone)."""
    from daliaug.detection import BoxTargets
    from daliaug.engines.feed import EpochFeed

    made = []
    original = BoxTargets.batch
    monkeypatch.setattr(BoxTargets, "batch", lambda *a, **k: made.append(1) or original(*a, **k))
    config, samples = eleven_with_boxes(3, 5, [{"type": "flip"}, {"type": "mixup"}])
    feed = EpochFeed(spec_of(config), samples, resizes=False)
    streams = [list(feed.chunks(2, (name,), 4)) for name in ("boxes", "box_labels")]
    assert len(made) == 3  # three batches of 4, 4 and 3, each moved once for both streams
    together = list(feed.chunks(2, ("boxes", "box_labels"), 4))
    for alone, joined in zip(streams[0], together, strict=True):
        np.testing.assert_array_equal(alone["boxes"], joined["boxes"])


@pytest.mark.parametrize("per_chunk", [8, 1024])
def test_the_feeds_batches_are_made_in_chunks_and_cut_back(
    per_chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``batches`` evaluates the plan over several batches at once (``FEED_CHUNK``): the
    batches it gives are those made one at a time, the short last one included, partners
    (mosaic) and boxes within each batch."""
    from daliaug.engines import feed as feed_module

    monkeypatch.setattr(feed_module, "FEED_CHUNK", per_chunk)
    chain = [{"type": "random_resized_crop"}, {"type": "mosaic"}]
    config, samples = eleven_with_boxes(2, 6, chain)
    feed = feed_module.EpochFeed(spec_of(config), samples, resizes=True)
    names = ("index", "params", "warp", "boxes", "box_labels")
    cut = list(feed.batches(1, names))
    alone = list(feed.chunks(1, names, 4))
    assert [len(b["index"]) for b in cut] == [4, 4, 3]
    for mine, theirs in zip(cut, alone, strict=True):
        for name in names:
            np.testing.assert_array_equal(mine[name], theirs[name])
