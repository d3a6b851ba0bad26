"""Keras' geometric layers used with ``bounding_box_format``, through ``from_keras``: the boxes
in daliaug's batches (``make_dataset`` on ``y={"boxes", "labels"}``) are the boxes Keras' own
layer gives for ``{"images", "bounding_boxes"}`` with the same random parameters, within half a
pixel.

The parameters are pinned on both sides: daliaug's rows (its epoch's draws patched), and
Keras' layer given the same ones (a factor ``(a, a)``, or its ``get_random_transformation``
patched as the pixel tests of ``test_from_keras.py`` pin it). Where Keras' boxes disagree with
Keras' own pixels, the boxes are compared with the pixels instead (``RandomCrop``). Keras
clips a box and marks it with label -1 where none of it is left, in place; daliaug drops it and
packs the rest: the boxes Keras keeps (label not -1), in order, are compared.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import yaml

import daliaug
from daliaug.boxes import FORMATS, from_xyxy, to_xyxy
from daliaug.cli import main as cli
from daliaug.config import Config, load_config
from daliaug.errors import ConfigError, DataWarning
from daliaug.transforms.base import random_partners
from tests.keras.conftest import photos
from tests.transforms.helpers import pin_keras_draws, rows_of
from tests.transforms.test_keras_perspective import APPLIED, AT, FACTORS

SIZE = (48, 64)
X = photos(*SIZE)
N = len(X)
L = keras.layers
XYXY = {"bounding_box_format": "xyxy"}
CONSTANT = {"fill_mode": "constant", **XYXY}

BOXES = [
    np.array([[5, 6, 30, 40], [40, 10, 63, 47], [0, 0, 12, 9]], np.float32),
    np.array([[20, 15, 44, 33], [50, 2, 64, 20]], np.float32),
    np.array([[1, 30, 22, 48], [30, 5, 60, 28], [10, 10, 14, 16]], np.float32),
    np.array([[16, 12, 48, 36]], np.float32),
]
"""Boxes (absolute xyxy on 48x64) per image: some at the border, some that a crop or a move
takes out."""
LABELS = [np.arange(len(b), dtype=np.int32) + 3 * i for i, b in enumerate(BOXES)]


def padded(fmt: str = "xyxy") -> dict[str, np.ndarray]:
    """The boxes in ``fmt`` as Keras takes a batch of them: padded with -1."""
    most = max(map(len, BOXES))
    boxes = np.full((N, most, 4), -1.0, np.float32)
    labels = np.full((N, most), -1, np.int32)
    for i, (b, c) in enumerate(zip(BOXES, LABELS, strict=True)):
        boxes[i, : len(b)] = np.asarray(from_format(b, fmt))
        labels[i, : len(c)] = c
    return {"boxes": boxes, "labels": labels}


def from_format(boxes: np.ndarray, fmt: str) -> np.ndarray:
    return from_xyxy(boxes, fmt, SIZE)


def convert(layers: list[Any], **fields: Any) -> Config:
    """The layers' config for ``X`` in one batch, in order (the TF engine unless ``backend``
    says: boxes are moved on the host, the same for every engine)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return daliaug.from_keras(
            layers,
            source={"type": "arrays"},
            image_size=SIZE,
            batch_size=N,
            shuffle=False,
            seed=0,
            **{"backend": "tf", **fields},
        )


def pin_rows(monkeypatch: pytest.MonkeyPatch, rows: np.ndarray) -> None:
    """daliaug's epochs draw ``rows`` (one per position, repeated past them)."""

    def drawn(plan: Any, rng: Any, count: int) -> np.ndarray:
        return np.resize(rows, (count, rows.shape[1])).astype(np.float32)

    monkeypatch.setattr("daliaug.epoch.draw_rows", drawn)


def ours(config: Config, fmt: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each image's boxes (absolute xyxy) and labels from ``make_dataset``'s first batch."""
    y = {"boxes": [from_format(b, fmt) for b in BOXES], "labels": LABELS}
    images, targets = next(iter(daliaug.make_dataset(config, x=X, y=y)))
    size = tuple(np.asarray(images).shape[1:3])
    return kept(np.asarray(targets["boxes"]), np.asarray(targets["labels"]), fmt, size)


def kept(
    boxes: np.ndarray, labels: np.ndarray, fmt: str, size: tuple[int, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per image, the boxes whose label is not -1 (absolute xyxy) and their labels."""
    xyxy = to_xyxy(boxes, fmt, size[:2])
    return [(xyxy[i][labels[i] != -1], labels[i][labels[i] != -1]) for i in range(len(boxes))]


def theirs(layer: Any, fmt: str, pinned: dict[str, Any] | None = None) -> list[Any]:
    """Keras' layer on ``{"images", "bounding_boxes"}``, its draws replaced by ``pinned``."""
    if pinned is not None:
        draw = layer.get_random_transformation

        def fixed(data: Any, training: bool = True, seed: Any = None) -> Any:
            drawn = draw(data, training=training, seed=seed)
            return {**drawn, **pinned} if isinstance(drawn, dict) else pinned

        layer.get_random_transformation = fixed
    out = layer({"images": X.astype(np.float32), "bounding_boxes": padded(fmt)}, training=True)
    size = tuple(np.asarray(out["images"]).shape[1:3])
    boxes = out["bounding_boxes"]
    return kept(np.asarray(boxes["boxes"]), np.asarray(boxes["labels"]), fmt, size)


def assert_boxes_match(found: list[Any], expected: list[Any]) -> None:
    for i, ((b, c), (eb, ec)) in enumerate(zip(found, expected, strict=True)):
        np.testing.assert_array_equal(c, ec, err_msg=f"image {i}: labels")
        np.testing.assert_allclose(b, eb, atol=0.5, err_msg=f"image {i}: boxes")


@dataclass(frozen=True)
class Case:
    """One layer: daliaug's parameters by name (``None``: the pinned factors fix them) and the
    same draws for Keras' layer (from the rows)."""

    name: str
    layer: Callable[[], Any]
    params: dict[str, Any] | None = None
    keras: Callable[[np.ndarray], Any] | None = None
    formats: tuple[str, ...] = ("xyxy",)
    extra: dict[str, Any] = field(default_factory=dict)


POINTS = ("apply_perspective", "start_points", "end_points")
FLIPS = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
SIGNS = np.array([1.0, -1.0, 1.0, -1.0], np.float32)
PARTNERS = np.array([0.3, 0.9, 0.1, 0.6], np.float32)
WEIGHTS = np.array([0.2, 0.7, 0.5, 0.9], np.float32)


def _flips(rows: np.ndarray) -> dict[str, Any]:
    return {"flips": rows[:, :1].astype(bool).reshape(-1, 1, 1, 1)}


def _shears(rows: np.ndarray) -> dict[str, Any]:
    return {"shear_factor": rows[:, :1] * rows[:, 1:]}


def _mixup(rows: np.ndarray) -> dict[str, Any]:
    order = random_partners(rows[:, 0], np.ones(N, bool)).astype(np.int64)
    return {"mix_weight": rows[:, 1], "permutation_order": order}


CASES = [
    Case(
        "flip-horizontal",
        lambda: L.RandomFlip("horizontal", **XYXY),
        {"flip": FLIPS},
        _flips,
    ),
    Case(
        "flip-both",
        lambda: L.RandomFlip(bounding_box_format="rel_yxyx"),
        {"flip": FLIPS},
        _flips,
        formats=("rel_yxyx",),
    ),
    Case(
        "flip-vertical",
        lambda: L.RandomFlip("vertical", bounding_box_format="center_xywh"),
        {"flip": FLIPS},
        _flips,
        formats=("center_xywh",),
    ),
    Case("zoom-in", lambda: L.RandomZoom((-0.3, -0.3), (-0.2, -0.2), **CONSTANT)),
    Case("zoom-out", lambda: L.RandomZoom((0.25, 0.25), **CONSTANT)),
    Case(
        "translation",
        lambda: L.RandomTranslation((0.1, 0.1), (-0.2, -0.2), **CONSTANT),
    ),
    Case(
        "translation-yxyx",
        lambda: L.RandomTranslation(
            (-0.15, -0.15), (0.3, 0.3), fill_mode="nearest", bounding_box_format="yxyx"
        ),
        formats=("yxyx",),
    ),
    Case("center-crop", lambda: L.CenterCrop(30, 40, **XYXY)),
    Case("center-crop-up", lambda: L.CenterCrop(56, 40, **XYXY)),
    Case("resizing", lambda: L.Resizing(24, 40, **XYXY)),
    Case(
        "resizing-rel",
        lambda: L.Resizing(40, 30, bounding_box_format="rel_xyxy"),
        formats=("rel_xyxy",),
    ),
    Case("resizing-crop", lambda: L.Resizing(32, 32, crop_to_aspect_ratio=True, **XYXY)),
    Case("resizing-pad", lambda: L.Resizing(40, 40, pad_to_aspect_ratio=True, **XYXY)),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_layer_moves_boxes_as_keras(monkeypatch: pytest.MonkeyPatch, case: Case) -> None:
    layer = case.layer()
    config = convert([layer])
    (fmt,) = case.formats
    assert config.bounding_box_format == fmt
    pinned = None
    if case.params is not None:
        rows = rows_of(config, case.params, N)
        pin_rows(monkeypatch, rows)
        assert case.keras is not None
        pinned = case.keras(rows)
    assert_boxes_match(ours(config, fmt), theirs(layer, fmt, pinned))


def test_mixup_joins_both_images_boxes_as_keras(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each image's boxes, then its partner's (Keras concatenates the labels on the batch
    axis, a quirk of its MixUp: they are read here as each image's own, then its partner's)."""
    layer = L.MixUp(alpha=0.4, **XYXY)
    config = convert([layer])
    rows = rows_of(config, {"partner": PARTNERS, "lam": WEIGHTS}, N)
    pin_rows(monkeypatch, rows)
    pinned = _mixup(rows)
    layer.get_random_transformation = lambda data, training=True, seed=None: pinned
    out = layer({"images": X.astype(np.float32), "bounding_boxes": padded()}, training=True)
    boxes = np.asarray(out["bounding_boxes"]["boxes"])
    own = padded()["labels"]
    labels = np.concatenate([own, own[pinned["permutation_order"]]], axis=1)
    assert np.asarray(out["bounding_boxes"]["labels"]).shape == (2 * N, own.shape[1])
    assert_boxes_match(ours(config, "xyxy"), kept(boxes, labels, "xyxy", SIZE))


@pytest.mark.parametrize("factor", [0.07, -0.13, 0.3])
def test_rotation_turns_boxes_about_the_centre_its_pixels_turn_about(factor: float) -> None:
    """Keras turns boxes about ``((W - 1) / 2, (H - 1) / 2)`` of the box coordinates, half a
    pixel off the centre its pixels turn about (``(W / 2, H / 2)``, pixel corners; daliaug's
    pixels are Keras' in ``test_from_keras.py``): given the boxes half a pixel up and left and
    taken back, Keras' boxes are daliaug's (the clip then half a pixel off at the left and top
    borders)."""
    layer = L.RandomRotation((factor, factor), **CONSTANT)
    config = convert([layer])
    source = padded()
    valid = source["labels"][..., None] != -1
    source["boxes"] = np.where(valid, source["boxes"] - 0.5, -1.0)
    out = layer({"images": X.astype(np.float32), "bounding_boxes": source}, training=True)
    boxes, labels = (np.asarray(out["bounding_boxes"][k]) for k in ("boxes", "labels"))
    expected = kept(np.clip(boxes + 0.5, 0, [64, 48, 64, 48]), labels, "xyxy", SIZE)
    assert_boxes_match(ours(config, "xyxy"), expected)


def pixel_extents(move: Callable[[np.ndarray, int], Any], level: float) -> list[np.ndarray]:
    """Each box drawn as a filled mask and moved by Keras' own pixels (``move(masks, i)``: the
    layer's ``transform_images`` with image ``i``'s draws): the extent of the mask's pixels
    over ``level`` (of 1), per image (the boxes whose mask is gone left out)."""
    out = []
    for i, box in enumerate(BOXES):
        masks = np.zeros((len(box), *SIZE, 3), np.float32)
        for j, (x0, y0, x1, y1) in enumerate(box.astype(int)):
            masks[j, y0:y1, x0:x1] = 255.0
        extents = []
        for mask in np.asarray(move(masks, i))[..., 0] > 255.0 * level:
            ys, xs = np.nonzero(mask)
            if len(xs):
                extents.append([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
        out.append(np.array(extents, np.float32).reshape(-1, 4))
    return out


def assert_within_pixels(found: list[Any], move: Callable[[np.ndarray, int], Any]) -> None:
    """Each moved box holds the extent of the pixels its mask covers over half, moved by
    ``move`` (within half a pixel: a pixel over half covered counts whole) and, where the clip
    does not cut it (the enclosing box of the moved corners, clipped, may hold more than the
    clipped shape's pixels), lies within the extent of those it touches (to 0.05 pixel: a
    touch that small may round to no value)."""
    half, touched, unclipped = pixel_extents(move, 0.5), pixel_extents(move, 1e-3), 0
    for (b, _), inner, outer in zip(found, half, touched, strict=True):
        assert b.shape == inner.shape == outer.shape
        assert np.all(b[:, :2] <= inner[:, :2] + 0.5) and np.all(b[:, 2:] >= inner[:, 2:] - 0.5)
        whole = np.all((b > 0) & (b < [64, 48, 64, 48]), axis=1)
        assert np.all(b[whole, :2] >= outer[whole, :2] - 0.05), b
        assert np.all(b[whole, 2:] <= outer[whole, 2:] + 0.05), b
        unclipped += int(whole.sum())
    assert unclipped >= 3


def test_shear_moves_boxes_as_keras_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras shears boxes in relative coordinates (``x - s y`` on ``rel_xyxy``), which its
    pixels, sheared in pixels, do not follow on a non-square image: daliaug's boxes are held to
    Keras' pixels instead (each box a filled mask through Keras' shear)."""
    layer = L.RandomShear(0.3, 0.2, **CONSTANT)
    config = convert([layer])
    params = {"sign": SIGNS, "shear_x": np.float32(0.25), "shear_y": np.float32(0.1)}
    rows = rows_of(config, params, N)
    pin_rows(monkeypatch, rows)
    found = ours(config, "xyxy")
    factors = _shears(rows)["shear_factor"]

    def move(masks: np.ndarray, i: int) -> Any:
        each = {"shear_factor": np.repeat(factors[i : i + 1], len(masks), 0)}
        return layer.transform_images(masks, {**each, "input_shape": masks.shape})

    assert_within_pixels(found, move)
    keras_boxes = theirs(layer, "xyxy", _shears(rows))
    assert not all(
        np.allclose(b, k, atol=1.0) for (b, _), (k, _) in zip(found, keras_boxes, strict=True)
    )


def test_random_crop_moves_boxes_as_keras_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras' ``RandomCrop`` takes its row offset from the boxes' x and its column offset from
    their y, and leaves them past the crop's far edges (its boxes disagree with its pixels):
    daliaug's boxes are the extents of Keras' own cropped pixels (each box a filled mask),
    exactly; with equal offsets, Keras' boxes clipped to the crop are daliaug's too."""
    layer = L.RandomCrop(30, 40, **XYXY)
    config = convert([layer])
    for top, left in ((5, 11), (8, 8)):
        u, v = (left + 0.5) / (64 - 40 + 1), (top + 0.5) / (48 - 30 + 1)
        pin_rows(monkeypatch, rows_of(config, {"u": np.float32(u), "v": np.float32(v)}, N))
        found = ours(config, "xyxy")
        corner = (top, left)
        extents = pixel_extents(lambda masks, _, at=corner: layer.transform_images(masks, at), 0.5)
        for (b, _), extent in zip(found, extents, strict=True):
            np.testing.assert_allclose(b, extent, atol=1e-4)
    layer.get_random_transformation = lambda data, training=True, seed=None: (8, 8)
    out = layer({"images": X.astype(np.float32), "bounding_boxes": padded()}, training=True)
    boxes = np.clip(np.asarray(out["bounding_boxes"]["boxes"]), 0, [40, 30, 40, 30])
    labels = np.asarray(out["bounding_boxes"]["labels"])
    area = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    assert_boxes_match(found, kept(boxes, np.where(area > 0, labels, -1), "xyxy", (30, 40)))


@pytest.mark.slow
def test_perspective_moves_boxes_as_keras_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    """``RandomPerspective`` with its draws pinned as in ``test_keras_perspective.py``: Keras
    maps the box corners in pixel-index coordinates (its boxes half a pixel off its pixels,
    which map pixel centres), so daliaug's boxes are held to Keras' pixels (each box a filled
    mask through Keras' layer); Keras' boxes are within a pixel of them."""
    layer = L.RandomPerspective(factor=1.0, scale=0.8, fill_value=0.0, **XYXY)
    config = convert([layer])
    draws = {"perspective": APPLIED, **{k: FACTORS[:, i, a] for k, (i, a) in AT.items()}}
    pin_rows(monkeypatch, rows_of(config, draws, N))
    found = ours(config, "xyxy")
    threshold = np.where(APPLIED > 0, 0.0, 0.9).astype(np.float32)
    pin_keras_draws(monkeypatch, uniform=[np.full(N, 0.5, np.float32), threshold, FACTORS])
    drawn = layer.get_random_transformation(X.astype(np.float32))

    def move(masks: np.ndarray, i: int) -> Any:
        each = {k: np.repeat(np.asarray(drawn[k])[i : i + 1], len(masks), 0) for k in POINTS}
        return layer.transform_images(masks, {**each, "input_shape": masks.shape})

    assert_within_pixels(found, move)
    pin_keras_draws(monkeypatch, uniform=[np.full(N, 0.5, np.float32), threshold, FACTORS])
    for (b, _), (k, _) in zip(found, theirs(layer, "xyxy"), strict=True):
        np.testing.assert_allclose(b, k, atol=1.0)


def test_max_num_bounding_boxes_pads_as_keras(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """``max_boxes`` from ``MaxNumBoundingBoxes``: padded with -1 to its count; an image with
    more keeps its first ones, as Keras', with a ``DataWarning`` (Keras cuts silently); on
    both engines."""
    flip = L.RandomFlip("horizontal", **XYXY)
    config = convert([flip, L.MaxNumBoundingBoxes(2, **XYXY)], backend=backend)
    assert (config.max_boxes, config.bounding_box_format) == (2, "xyxy")
    rows = rows_of(config, {"flip": FLIPS}, N)
    pin_rows(monkeypatch, rows)
    y = {"boxes": BOXES, "labels": LABELS}
    with pytest.warns(DataWarning, match="most: 3"):
        _, targets = next(iter(daliaug.make_dataset(config, x=X, y=y)))
    boxes, labels = np.asarray(targets["boxes"]), np.asarray(targets["labels"])
    assert boxes.shape == (N, 2, 4) and labels.shape == (N, 2)
    pinned = _flips(rows)
    flip.get_random_transformation = lambda data, training=True, seed=None: {
        **pinned,
        "input_shape": np.shape(data["images"]),
    }
    stack = L.Pipeline([flip, L.MaxNumBoundingBoxes(2, **XYXY)])
    out = stack({"images": X.astype(np.float32), "bounding_boxes": padded()}, training=True)
    theirs_boxes = np.asarray(out["bounding_boxes"]["boxes"])
    assert theirs_boxes.shape == (N, 2, 4)
    expected = kept(theirs_boxes, np.asarray(out["bounding_boxes"]["labels"]), "xyxy", SIZE)
    assert_boxes_match(kept(boxes, labels, "xyxy", SIZE), expected)


@pytest.mark.parametrize(
    ("layers", "named"),
    [
        (
            lambda: [
                L.RandomFlip(name="f", **XYXY),
                L.RandomZoom(0.1, name="z", **{"bounding_box_format": "yxyx"}),
            ],
            r"RandomZoom 'z': the layers give different bounding_box_format "
            r"\(RandomFlip 'f': 'xyxy', RandomZoom 'z': 'yxyx'\)",
        ),
        (
            lambda: [L.RandomFlip(**XYXY), L.RandomBrightness(0.1, name="b")],
            r"RandomBrightness 'b': the layers give different bounding_box_format .*'b': None",
        ),
        (
            lambda: [L.CutMix(name="c", **XYXY)],
            r"CutMix 'c': bounding_box_format='xyxy', but Keras' own layer cannot move boxes",
        ),
        (
            lambda: [L.RandomElasticTransform(name="e", **XYXY)],
            r"RandomElasticTransform 'e': bounding_box_format='xyxy', but Keras' own layer",
        ),
        (
            lambda: [L.MaxNumBoundingBoxes(4, fill_value=0, name="m")],
            r"MaxNumBoundingBoxes 'm': fill_value=0; daliaug pads boxes and labels with -1",
        ),
        (
            lambda: [L.MaxNumBoundingBoxes(4, name="m", **XYXY), L.MixUp(name="x", **XYXY)],
            r"MixUp 'x': it comes after MaxNumBoundingBoxes 'm'",
        ),
    ],
)
def test_what_cannot_move_boxes_as_keras_is_named(
    layers: Callable[[], list[Any]], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        convert(layers())


def test_the_config_fields_agree_with_the_layers() -> None:
    layers = [L.RandomFlip(**XYXY), L.MaxNumBoundingBoxes(9, **XYXY)]
    config = convert(layers, max_boxes=9, label_mode="none")
    assert (config.bounding_box_format, config.max_boxes, config.source.boxes) == ("xyxy", 9, True)
    with pytest.raises(ConfigError, match="bounding_box_format: 'yxyx', but the layers give"):
        convert(layers, bounding_box_format="yxyx")
    with pytest.raises(ConfigError, match="max_boxes: 3, but the layers give 9"):
        convert(layers, max_boxes=3)
    plain = convert([L.RandomFlip()])
    assert (plain.bounding_box_format, plain.max_boxes, plain.source.boxes) == ("xyxy", 100, False)


def test_split_model_gives_the_box_fields_and_keeps_what_cannot_move_boxes() -> None:
    stack = [
        L.RandomFlip(bounding_box_format="center_xywh"),
        L.CutMix(name="c", **{"bounding_box_format": "center_xywh"}),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fields, trimmed = daliaug.split_model(stack, image_size=SIZE, unsupported="keep")
    assert fields["bounding_box_format"] == "center_xywh" and "max_boxes" not in fields
    assert [type(x).__name__ for x in trimmed.layers] == ["CutMix"]
    assert any("CutMix 'c' stays in the model" in str(w.message) for w in caught)
    padded_stack = [L.RandomZoom(0.2, **XYXY), L.MaxNumBoundingBoxes(5, **XYXY)]
    fields, trimmed = daliaug.split_model(padded_stack, image_size=SIZE)
    assert (fields["bounding_box_format"], fields["max_boxes"]) == ("xyxy", 5)
    assert [type(x).__name__ for x in trimmed.layers] == ["MaxNumBoundingBoxes"]


def test_convert_from_keras_writes_the_box_fields(tmp_path: Path) -> None:
    fmt = {"bounding_box_format": "rel_center_xywh"}
    model = keras.Sequential(
        [
            keras.Input((*SIZE, 3)),
            L.RandomFlip(**fmt),
            L.RandomTranslation(0.1, 0.1, fill_mode="constant", **fmt),
            L.MaxNumBoundingBoxes(7, **fmt),
            L.Flatten(),
            L.Dense(2),
        ]
    )
    saved = tmp_path / "model.keras"
    model.save(saved)
    out = tmp_path / "config.yaml"
    assert cli(["convert", "--from-keras", str(saved), "-o", str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    assert (written["bounding_box_format"], written["max_boxes"]) == ("rel_center_xywh", 7)
    assert load_config(out).bounding_box_format == "rel_center_xywh"


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "rel_center_yxhw"])
def test_box_formats_are_keras_own(fmt: str) -> None:
    """daliaug's conversions to and from each of Keras' formats are Keras' ``convert_format``
    (all but ``rel_center_yxhw``, which Keras' formats name and its ``convert_format``
    refuses)."""
    from keras.utils.bounding_boxes import convert_format

    boxes = np.concatenate(BOXES)
    theirs = np.asarray(convert_format(boxes, "xyxy", fmt, height=SIZE[0], width=SIZE[1]))
    np.testing.assert_allclose(from_xyxy(boxes, fmt, SIZE), theirs, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(to_xyxy(theirs, fmt, SIZE), boxes, rtol=1e-6, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize(("op", "a", "b"), [("translate", 0.15, -0.25), ("color", 0.6, 0.0)])
def test_rand_augment_moves_boxes_as_keras(
    monkeypatch: pytest.MonkeyPatch, op: str, a: float, b: float
) -> None:
    """``RandAugment`` with the op and its draw pinned per image (as its pixel tests pin it):
    a geometric op moves the boxes as Keras' sub-layer does, a colour op leaves them."""
    from tests.transforms.test_keras_rand_augment import (
        KERAS_OPS,
        LAYERS,
        _columns,
        _constant_fill,
        _our_values,
        _pin,
    )

    layer = _constant_fill(L.RandAugment(num_ops=1, factor=0.5, bounding_box_format="xyxy"))
    _pin(layer, op, a, b)
    config = convert([layer])
    columns, source = _columns(config), padded()
    rows = np.zeros((N, len(config.plan.param_keys)), np.float32)
    expected = []
    for i in range(N):
        t = layer.get_random_transformation(X[i : i + 1].astype(np.float32), training=True)
        t["layer_idxes"] = np.array([KERAS_OPS.index(op)], np.int32)
        one = {k: v[i : i + 1].copy() for k, v in source.items()}
        moved = layer.transform_bounding_boxes(one, t, training=True)
        expected += kept(np.asarray(moved["boxes"]), np.asarray(moved["labels"]), "xyxy", SIZE)
        rows[i, columns[f"0_{op}"]] = 1.0
        for name, value in _our_values(op, t["transforms"][LAYERS[op]], (1, *SIZE)).items():
            rows[i, columns[name]] = value
    pin_rows(monkeypatch, rows)
    found = ours(config, "xyxy")
    assert_boxes_match(found, expected)
    moved_any = any(not np.array_equal(b, o) for (b, _), o in zip(found, BOXES, strict=True))
    assert moved_any == (op == "translate")
