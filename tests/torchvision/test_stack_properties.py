"""Properties of ``from_torchvision`` over stacks hypothesis builds from torchvision v2's
transforms (the converted ones with ordinary, extreme and invalid arguments, refused ones, a
subclass, v1's, a plain function), nested in ``Compose``, ``RandomApply``, ``RandomChoice`` and
``RandomOrder``:

* every exception that leaves it is a :class:`daliaug.DaliaugError` (never torchvision's,
  NumPy's or Python's own);
* what it accepts drops nothing: each transform that does something in training became one
  daliaug transform.

Few examples (it must stay quick); tests/torchvision/test_from_torchvision.py holds the cases
by name."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import daliaug
from daliaug.errors import DaliaugError
from tests.torchvision.conftest import v2

NO_TRANSFORM = {
    "ToImage",
    "PILToTensor",
    "ToPureTensor",
    "Identity",
    "ToDtype",
    "Normalize",
    "ClampBoundingBoxes",
    "SanitizeBoundingBoxes",
}
"""Classes that become the output's dtype and normalization, config fields, or nothing."""

CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")


def makers(t: Any) -> list[Callable[[], Any]]:
    """One transform each; some with arguments daliaug or torchvision refuse."""
    import torch
    from torchvision import transforms as v1

    return [
        lambda: t.RandomResizedCrop(24),
        lambda: t.RandomResizedCrop((16, 20), scale=(0.5, 0.5), ratio=(0.01, 100.0)),
        lambda: t.RandomResizedCrop(8, interpolation=t.InterpolationMode.NEAREST),
        lambda: t.RandomHorizontalFlip(),
        lambda: t.RandomVerticalFlip(p=0.0),
        lambda: t.Resize((20, 24)),
        lambda: t.Resize(16),
        lambda: t.Resize(16, max_size=20),
        lambda: t.CenterCrop(12),
        lambda: t.CenterCrop((0, 3)),
        lambda: t.ColorJitter(brightness=0.3),
        lambda: t.ColorJitter(saturation=(0.0, 5.0)),
        lambda: t.ColorJitter(0.4, 0.4, 0.4, 0.1),
        lambda: t.ColorJitter(hue=0.3),
        lambda: t.ColorJitter(),
        lambda: t.RandomAffine(20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10),
        lambda: t.RandomAffine(0, center=(1, 1)),
        lambda: t.RandomAffine(5, interpolation=t.InterpolationMode.BILINEAR, fill=3),
        lambda: t.RandomCrop(16, padding=2, padding_mode="edge"),
        lambda: t.RandomCrop(16, padding=2, padding_mode="reflect"),
        lambda: t.RandomCrop(40, pad_if_needed=True, fill=5),
        lambda: t.RandomCrop(20),
        lambda: t.RandomPerspective(0.3),
        lambda: t.RandomPerspective(1.0),
        lambda: t.MixUp(alpha=0.3, num_classes=4),
        lambda: t.CutMix(),
        lambda: t.SanitizeBoundingBoxes(min_size=2),
        lambda: t.ClampBoundingBoxes(),
        lambda: t.RandAugment(num_ops=3, magnitude=30),
        lambda: t.RandAugment(num_ops=0),
        lambda: t.RandAugment(num_ops=20, magnitude=40, num_magnitude_bins=10),
        lambda: t.TrivialAugmentWide(fill=300),
        lambda: t.AutoAugment(),
        lambda: t.AugMix(severity=11),
        lambda: t.AugMix(chain_depth=2, fill=[1, 2, 3]),
        lambda: t.RandomErasing(p=1.0, value=(0.5, 0.5, 0.5)),
        lambda: t.RandomErasing(value=7),
        lambda: t.ToImage(),
        lambda: t.ToDtype(torch.float32, scale=True),
        lambda: t.ToDtype(torch.float32),
        lambda: t.ToDtype({t.Image if hasattr(t, "Image") else str: torch.float32}),
        lambda: t.Normalize([0.5], [0.25]),
        lambda: t.Normalize([0.5, 0.4, 0.3], [0.0, 1.0, 1.0]),
        lambda: t.ElasticTransform(),
        lambda: t.Lambda(lambda x: x),
        lambda: type("Mine", (t.CenterCrop,), {})(12),
        lambda: v1.RandomHorizontalFlip(),
        lambda: lambda x: x,
    ]


@st.composite
def stacks(draw: st.DrawFn, depth: int = 2) -> Any:
    """A transform, or a container of 1 to 3 stacks; ``None`` where torchvision refuses the
    arguments (not daliaug's to name)."""
    t = v2()
    if depth == 0 or draw(st.booleans()):
        try:
            return draw(st.sampled_from(makers(t)))()
        except (ValueError, TypeError):
            return None
    inner = draw(st.lists(stacks(depth - 1), min_size=1, max_size=3))
    if any(x is None for x in inner):
        return None
    kind = draw(st.sampled_from(CONTAINERS))
    try:
        if kind == "RandomApply":
            return t.RandomApply(inner, p=draw(st.sampled_from([0.0, 0.5, 1.0])))
        return getattr(t, kind)(inner)
    except (ValueError, TypeError):
        return None


def leaves(transform: Any) -> list[Any]:
    if type(transform).__name__ in CONTAINERS and hasattr(transform, "transforms"):
        return [leaf for each in transform.transforms for leaf in leaves(each)]
    return [transform]


def expected_transforms(stack: Any) -> int:
    """One daliaug transform per leaf that does something (a RandomApply of p=0's included,
    kept with probability 0; a ColorJitter of no factor and RandAugment of no op do
    nothing)."""
    idle = [
        x
        for x in leaves(stack)
        if (type(x).__name__ == "RandAugment" and x.num_ops == 0)
        or (
            type(x).__name__ == "ColorJitter"
            and all(getattr(x, f) is None for f in ("brightness", "contrast", "saturation", "hue"))
        )
    ]
    return sum(type(leaf).__name__ not in NO_TRANSFORM for leaf in leaves(stack)) - len(idle)


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(stacks())
def test_every_failure_is_named_and_nothing_is_dropped(stack: Any) -> None:
    if stack is None:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            config = daliaug.from_torchvision(
                v2().Compose([v2().CenterCrop(32), stack]),
                source={"type": "arrays"},
            )
    except DaliaugError:
        event("refused")
        return
    event("accepted")
    assert len(config.transforms) == expected_transforms(stack) + 1
