"""``from_torchvision`` for detection: boxes given as torchvision's ``tv_tensors.BoundingBoxes``
would be (``box_format``: XYXY, XYWH, CXCYWH) come out where torchvision's own ``Compose`` puts
them, their labels with them; ``SanitizeBoundingBoxes`` and ``ClampBoundingBoxes`` converted."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.errors import ConfigError
from tests.test_detection import BOXES, SRC, drawn
from tests.torchvision.conftest import v2

FORMATS = {"XYXY": "xyxy", "XYWH": "xywh", "CXCYWH": "center_xywh"}


def _recipe(t: Any) -> Any:
    """Deterministic: every parameter fixed, so torchvision's output is the batch's."""
    return t.Compose(
        [
            t.RandomHorizontalFlip(p=1.0),
            t.Resize((24, 32), antialias=False),
            t.CenterCrop((20, 28)),
            t.ClampBoundingBoxes(),
            t.SanitizeBoundingBoxes(min_size=2),
        ]
    )


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_boxes_land_where_torchvisions_compose_puts_them(fmt: str) -> None:
    """Four images, each with all of :data:`BOXES` in ``fmt`` (one of them cut by the crop):
    daliaug's batch (NCHW images, boxes padded to ``max_boxes``) holds torchvision's boxes
    and labels, in ``fmt``."""
    import torch

    t = v2()
    from torchvision import tv_tensors

    images = drawn(BOXES)
    xyxy = tv_tensors.BoundingBoxes(torch.from_numpy(BOXES), format="XYXY", canvas_size=SRC)
    given = t.functional.convert_bounding_box_format(xyxy, new_format=fmt).numpy()
    y = {"boxes": [given] * len(images), "labels": [np.arange(4) + 10 * i for i in range(4)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        config = daliaug.from_torchvision(
            _recipe(t),
            source={"type": "arrays"},
            batch_size=4,
            box_format=getattr(tv_tensors.BoundingBoxFormat, fmt),
            shuffle=False,
            max_boxes=4,
            backend="opencv",
        )
    assert config.bounding_box_format == FORMATS[fmt] and config.min_area == 4.0
    batch_images, targets = next(
        iter(daliaug.make_dataset(config, x=images, y=y, framework="torch"))
    )
    assert tuple(batch_images.shape) == (4, 3, 20, 28)
    for i, image in enumerate(images):
        sample = {
            "image": tv_tensors.Image(torch.from_numpy(image.transpose(2, 0, 1).copy())),
            "boxes": tv_tensors.BoundingBoxes(torch.from_numpy(given), format=fmt, canvas_size=SRC),
            "labels": torch.from_numpy(y["labels"][i]),
        }
        out = _recipe(t)(sample)
        kept = np.asarray(targets["labels"][i]) >= 0
        np.testing.assert_array_equal(np.asarray(targets["labels"][i])[kept], out["labels"].numpy())
        np.testing.assert_allclose(
            np.asarray(targets["boxes"][i])[kept], out["boxes"].numpy(), atol=1e-3
        )


def test_what_detection_cannot_take_is_refused_by_name() -> None:
    t = v2()
    with pytest.raises(ConfigError, match="box_format: XYWHR is not one of"):
        daliaug.from_torchvision(_recipe(t), source={"type": "arrays"}, box_format="XYWHR")
    sanitize = t.SanitizeBoundingBoxes(labels_getter=None)
    with pytest.raises(ConfigError, match="SanitizeBoundingBoxes: labels_getter=None"):
        daliaug.from_torchvision(t.Compose([t.CenterCrop(8), sanitize]), source={"type": "arrays"})


def test_mixup_and_cutmix_become_batch_stages_with_soft_labels() -> None:
    """torchvision's MixUp and CutMix (called on batches there) end the config as daliaug's
    batch stages, labels one-hot (categorical); each warns that its draw is per image; the
    batches from ``framework='torch'`` hold mixed labels summing to 1, images NCHW."""
    import torch

    t = v2()
    mix = t.Compose(
        [
            t.CenterCrop(16),
            t.ToDtype(torch.float32, scale=True),
            t.MixUp(alpha=0.4, num_classes=3),
            t.CutMix(alpha=1.0, num_classes=3),
            t.Normalize([0.5] * 3, [0.25] * 3),
        ]
    )
    with pytest.warns(UserWarning) as caught:
        config = daliaug.from_torchvision(
            mix, source={"type": "arrays"}, batch_size=4, backend="opencv", seed=3
        )
    named = sorted({str(w.message).split(":")[0] for w in caught})
    assert named == ["CenterCrop", "CutMix", "MixUp"]
    assert [x.type for x in config.transforms] == ["center_crop", "mixup", "cutmix"]
    assert config.label_mode == "categorical" and config.transforms[1].alpha == 0.4
    x = np.random.default_rng(0).integers(0, 256, (8, 20, 20, 3), dtype=np.uint8)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    images, labels = next(iter(daliaug.make_dataset(config, x=x, y=y, framework="torch")))
    assert tuple(images.shape) == (4, 3, 16, 16) and tuple(labels.shape) == (4, 3)
    np.testing.assert_allclose(labels.sum(1).numpy(), 1.0, atol=1e-5)
    assert (labels.max(1).values < 1.0).any()  # mixed


def test_batch_stages_come_last() -> None:
    t = v2()
    for stack, named in [
        (
            t.Compose([t.CenterCrop(8), t.MixUp(), t.RandomHorizontalFlip()]),
            "RandomHorizontalFlip: it comes after MixUp",
        ),
        (
            t.Compose([t.CenterCrop(8), t.CutMix(), t.RandomErasing()]),
            "RandomErasing: it comes after CutMix",
        ),
        (
            t.Compose([t.CenterCrop(8), t.RandomChoice([t.CutMix(), t.MixUp()])]),
            "RandomChoice: it holds 2",
        ),
        (
            t.Compose([t.CenterCrop(8), t.MixUp(labels_getter=None)]),
            "MixUp: a labels_getter of its own",
        ),
    ]:
        with pytest.raises(ConfigError, match=named):
            daliaug.from_torchvision(stack, source={"type": "arrays"})
