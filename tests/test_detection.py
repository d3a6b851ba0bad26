"""Detection end to end, against the real things: boxes moved by each geometric transform (with
its parameters pinned) against torchvision v2's functional box ops and Keras' own layers with
``bounding_box_format``; boxes and keypoints against the pixels they stand for (drawn white on
black and warped by the engines, DALI on the CPU and TensorFlow); the same boxes on tf.data,
JAX and PyTorch; and the rules: ``min_area``, ``min_visibility``, ``max_boxes``, ``mixup``, and
what detection refuses.

Conventions found on the way (each checked below): torchvision's ``affine`` turns clockwise for
a positive ``angle`` (``rotate``, like daliaug's ``rotation`` and Keras, counter-clockwise) and
shears ``x' = x - tan(shear) (y - H/2)`` (daliaug's ``shear``: ``+``); torchvision's
perspective maps its start points as pixel-corner coordinates, so its ``RandomPerspective``
corners ``[0, 0] ... [W - 1, H - 1]`` are half a pixel off the corner pixel centres its docs
name, while daliaug's ``perspective`` maps the centres themselves (the same map as
torchvision's from ``start + 0.5`` to ``end + 0.5``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.algebra import Canvas
from daliaug.boxes import Rules, Targets

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
    points, mirrored = plan.point_map(rows, source, fuse_roi=False)
    targets = Targets.of([boxes], [np.arange(len(boxes))], None)
    moved = targets.moved(points, plan.image_size, mirrored, rules or Rules())
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
