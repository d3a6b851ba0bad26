"""``from_torchvision`` against torchvision v2 itself: the ImageNet recipe's config, each
refusal named, and pixels on every engine (DALI on the CPU, TensorFlow, OpenCV) within two
levels of 255 (mean under half a level: :data:`MAX_LEVELS`) of torchvision's own output on
the same parameters."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import daliaug
from daliaug.algebra import Canvas, Math
from daliaug.config import Config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError
from daliaug.outputs.bridges import engine_batches
from daliaug.sources.arrays import array_samples
from tests.keras.conftest import photos
from tests.torchvision.conftest import v2

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MAX_LEVELS, MEAN_LEVELS = 2.0, 0.5
"""The tolerance on the 0..255 scale: torchvision rounds to uint8 after a resize and truncates
after each colour op (an error the next factor scales: 1.3 x 0.5 + 1 at most here), daliaug
rounds once."""


def compile_for(transforms: Any) -> Config:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return daliaug.from_torchvision(
            transforms,
            source={"type": "arrays"},
            batch_size=4,
            shuffle=False,
            label_mode="none",
            seed=0,
        )


def levels(config: Config, images: np.ndarray) -> np.ndarray:
    """NCHW output back on the 0..255 scale."""
    mean, std = (np.asarray(v).reshape(1, -1, 1, 1) for v in config.output.mean_std(3))
    return np.asarray(images, np.float64) * std + mean


def as_tensors(x: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def _center_flip_normalize(t: Any) -> Any:
    import torch

    return t.Compose(
        [
            t.CenterCrop((32, 40)),
            t.RandomHorizontalFlip(p=1.0),
            t.ToImage(),
            t.ToDtype(torch.float32, scale=True),
            t.Normalize(MEAN, STD),
        ]
    )


def _resize_brightness(t: Any) -> Any:
    import torch

    return t.Compose(
        [
            t.Resize((24, 32), antialias=False),
            t.ColorJitter(brightness=(1.3, 1.3)),
            t.ToDtype(torch.float32, scale=True),
        ]
    )


def _saturation(t: Any) -> Any:
    """On floats (on uint8 torchvision truncates the blend: 0.7 of a level lower on average)."""
    import torch

    return t.Compose(
        [
            t.CenterCrop((48, 64)),
            t.ToDtype(torch.float32, scale=True),
            t.ColorJitter(saturation=(0.4, 0.4)),
        ]
    )


def _vertical_flip_uint8(t: Any) -> Any:
    return t.Compose([t.RandomVerticalFlip(p=1.0), t.CenterCrop((40, 40))])


def _eval_recipe(t: Any) -> Any:
    """PyTorch's evaluation recipe, at a size where the longer side is whole."""
    import torch

    return t.Compose(
        [
            t.Resize(24, antialias=False),
            t.CenterCrop(20),
            t.PILToTensor(),
            t.ToDtype(torch.float32, scale=True),
            t.Normalize(MEAN, STD),
        ]
    )


FIXED: dict[str, Callable[[Any], Any]] = {
    "eval_recipe": _eval_recipe,
    "center_flip_normalize": _center_flip_normalize,
    "resize_brightness": _resize_brightness,
    "saturation": _saturation,
    "vertical_flip_uint8": _vertical_flip_uint8,
}
"""Chains whose every parameter is fixed: torchvision's output is the batch's."""


def ours(config: Config, engine: str, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    batches = engine_batches(engine, config, array_samples(x, None), "cpu", params=rows)
    return levels(config, np.concatenate([batch[0] for batch in batches]))


def assert_close(found: np.ndarray, expected: np.ndarray) -> None:
    assert found.shape == expected.shape, (found.shape, expected.shape)
    diff = np.abs(found - expected)
    assert diff.max() <= MAX_LEVELS and diff.mean() <= MEAN_LEVELS, (diff.max(), diff.mean())


ENGINES = ["dali", "tf", "opencv"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_chains_match_torchvision_on_every_engine(engine: str, name: str) -> None:
    t = v2()
    x = photos()
    transforms = FIXED[name](t)
    config = compile_for(transforms)
    expected = levels(config, transforms(as_tensors(x)).numpy())
    rows = draw_rows(config.plan, np.random.default_rng(0), len(x))
    assert_close(ours(config, engine, x, rows), expected)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_random_resized_crop_matches_torchvision_on_the_same_windows(engine: str) -> None:
    """The window daliaug draws (its parameter rows, torchvision's ``scale`` and ``ratio``),
    cut and resized by torchvision's ``resized_crop``: the same pixels."""
    import torch

    t = v2()
    from torchvision.transforms.v2 import functional

    x = photos()
    transforms = t.Compose(
        [
            t.RandomResizedCrop((24, 24), scale=(0.3, 0.9), antialias=False),
            t.ToDtype(torch.float32, scale=True),
            t.Normalize(MEAN, STD),
        ]
    )
    config = compile_for(transforms)
    rows = draw_rows(config.plan, np.random.default_rng(1), len(x))
    keys = list(config.plan.param_keys)
    found = ours(config, engine, x, rows)
    for i, image in enumerate(as_tensors(x)):
        p = {k.rpartition(".")[2]: float(rows[i, keys.index(k)]) for k in keys}
        box = config.transforms[0].crop_box(p, Canvas(*map(float, x.shape[1:3])), Math.of(np))
        crop = functional.resized_crop(
            image, int(box.y), int(box.x), int(box.h), int(box.w), [24, 24], antialias=False
        )
        for each in transforms.transforms[1:]:
            crop = each(crop)
        assert_close(found[i : i + 1], levels(config, crop.numpy()[None]))


def drawn(config: Config, rows: np.ndarray, index: int) -> list[dict[str, float]]:
    """Per sample, the parameters of the transform at ``index``, by name."""
    keys = list(config.plan.param_keys)
    prefix = f"{index}."
    return [
        {k[len(prefix) :]: float(row[i]) for i, k in enumerate(keys) if k.startswith(prefix)}
        for row in rows
    ]


Expected = Callable[[Any, dict[str, float]], Any]


def same_draws(engine: str, random: Any, expected: Expected, seed: int, slack: Any = None) -> None:
    """``Resize`` to the images' own size (no crop: after one, daliaug's one warp shows the
    image around it where torchvision fills, a warning), ``random``, ``ToDtype``: daliaug's
    batch against torchvision's functional ``expected(image, params)`` on the parameters
    daliaug drew (bilinear: the tolerance is :data:`MAX_LEVELS`, as the chains', plus ``slack
    (image, params)`` per pixel where given)."""
    import torch

    t = v2()
    x = np.concatenate([photos(), photos()[:, ::-1]])
    head = t.Resize(x.shape[1:3])
    config = compile_for(t.Compose([head, random, t.ToDtype(torch.float32, scale=True)]))
    rows = draw_rows(config.plan, np.random.default_rng(seed), len(x))
    found = ours(config, engine, x, rows)
    for i, (image, p) in enumerate(zip(as_tensors(x), drawn(config, rows, 1), strict=True)):
        theirs = levels(config, expected(image.float() / 255.0, p).numpy()[None])
        if slack is None:
            assert_close(found[i : i + 1], theirs)
            continue
        diff = np.abs(found[i : i + 1] - theirs) - slack(image, p)
        assert diff.max() <= MAX_LEVELS, (i, diff.max())


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_random_affine_matches_torchvision_on_the_same_draws(engine: str) -> None:
    """Rotation, whole-pixel translation, scale and both shears: torchvision's ``affine`` on
    the parameters daliaug drew."""
    t = v2()
    from torchvision.transforms.v2 import functional

    bilinear = t.InterpolationMode.BILINEAR
    random = t.RandomAffine(30, (0.2, 0.1), (0.7, 1.3), (-20, 20, -10, 10), interpolation=bilinear)

    def expected(image: Any, p: dict[str, float]) -> Any:
        shift = [round(p["tx"] * 0.2 * 64), round(p["ty"] * 0.1 * 48)]
        shear = [p["shear_x"], p["shear_y"]]
        return functional.affine(
            image, p["angle"], shift, p["scale"], shear, interpolation=bilinear
        )

    same_draws(engine, random, expected, seed=5)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("fields", "pad"),
    [
        ({"padding": (3, 5, 7, 2), "fill": 102}, {"fill": 0.4}),
        ({"padding": 6, "padding_mode": "edge"}, {"padding_mode": "edge"}),
        ({"pad_if_needed": True, "fill": 51}, {"fill": 0.2}),
    ],
)
def test_random_crop_matches_torchvision_on_the_same_draws(
    engine: str, fields: dict, pad: dict
) -> None:
    """torchvision's padding (constant on the uint8 images: 102 is the floats' 0.4; edge) and
    ``pad_if_needed``, then its window at the corner daliaug drew: the same pixels."""
    t = v2()
    from torchvision.transforms.v2 import functional

    size = (52, 60) if fields.get("pad_if_needed") else (40, 44)
    random = t.RandomCrop(size, **fields)

    def expected(image: Any, p: dict[str, float]) -> Any:
        left, right, top, bottom = random.padding or (0, 0, 0, 0)
        if random.pad_if_needed:
            lack_h, lack_w = max(size[0] - 48, 0), max(size[1] - 64, 0)
            left, right, top, bottom = left + lack_w, right + lack_w, top + lack_h, bottom + lack_h
        padded = functional.pad(image, [left, top, right, bottom], **pad)
        y = int(p["v"] * (padded.shape[-2] - size[0] + 1))
        x = int(p["u"] * (padded.shape[-1] - size[1] + 1))
        return functional.crop(padded, y, x, *size)

    same_draws(engine, random, expected, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_random_perspective_matches_torchvision_on_the_same_draws(engine: str) -> None:
    """torchvision's corner draw (whole pixels inward) and its ``perspective`` on them: within
    :data:`MAX_LEVELS` but on the one-pixel edge of the warped image, where torchvision's fill
    blend differs (``slack``: up to 64 levels there)."""
    t = v2()
    from torchvision.transforms.v2 import functional

    def corners(image: Any, p: dict[str, float]) -> tuple[list, list]:
        h, w = image.shape[-2:]
        bound = {"x": int(0.6 * (w // 2)) + 1, "y": int(0.6 * (h // 2)) + 1}
        k = {name: int(p[name] * bound[name[-1]]) for name in p if name != "perspective"}
        ends = [
            [k["tl_x"], k["tl_y"]],
            [w - 1 - k["tr_x"], k["tr_y"]],
            [w - 1 - k["br_x"], h - 1 - k["br_y"]],
            [k["bl_x"], h - 1 - k["bl_y"]],
        ]
        return [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], ends

    def expected(image: Any, p: dict[str, float]) -> Any:
        if not p["perspective"]:
            return image
        return functional.perspective(image, *corners(image, p), fill=0.2)

    def slack(image: Any, p: dict[str, float]) -> np.ndarray:
        """Where the warped image's edge crosses a pixel's bilinear footprint (the share ``m``
        of it inside): torchvision weighs the image's share twice, ``m·Σw·v + (1 − m)·fill``,
        where daliaug blends ``Σw·v + (1 − m)·fill``, up to ``255·m·(1 − m)`` apart."""
        if not p["perspective"]:
            return np.zeros(1)
        ones = image[:1].float() * 0 + 1  # torchvision gives m·m for it
        m = functional.perspective(ones, *corners(image, p), fill=0.0).sqrt()
        return 255.0 * (m * (1 - m)).numpy()[None]

    # on the uint8 images: fill 51 is the floats' 0.2
    same_draws(engine, t.RandomPerspective(0.6, p=0.7, fill=51), expected, 6, slack)


def test_the_imagenet_recipe_becomes_one_config_channels_first() -> None:
    """PyTorch's reference recipe (its RandAugment variant): one config, torchvision's
    statistics on the 0..255 scale, NCHW float32, each distribution difference warned."""
    import torch

    t = v2()
    recipe = t.Compose(
        [
            t.RandomResizedCrop(224),
            t.RandomHorizontalFlip(),
            t.RandAugment(),
            t.PILToTensor(),
            t.ToDtype(torch.float32, scale=True),
            t.Normalize(MEAN, STD),
            t.RandomErasing(0.25),
        ]
    )
    with pytest.warns(UserWarning) as caught:
        config = daliaug.from_torchvision(recipe, source={"type": "arrays"})
    named = sorted({str(w.message).split(":")[0] for w in caught})
    assert named == ["RandAugment", "RandomErasing", "RandomResizedCrop"]
    assert [x.type for x in config.transforms] == [
        "random_resized_crop",
        "flip",
        "rand_augment",
        "random_erasing",
    ]
    assert config.image_size == (224, 224) and config.output.layout == "NCHW"
    assert config.output.dtype == "float32"
    assert np.allclose(config.output.mean, np.multiply(MEAN, 255))
    assert np.allclose(config.output.std, np.multiply(STD, 255))
    assert np.allclose(config.transforms[3].value, np.multiply(MEAN, 255))  # 0 after Normalize
    rand = config.transforms[2]
    assert (rand.num_ops, rand.magnitude, rand.num_magnitude_bins) == (2, 9, 31)


def jitter_steps(config: Config, rows: np.ndarray, index: int) -> list[list[tuple[str, float]]]:
    """Per sample, the ``color_jitter`` at ``index``'s factors in the order daliaug drew."""
    keys = list(config.plan.param_keys)
    jitter = config.transforms[index]
    out = []
    for row in rows:
        p = {
            k.partition(".")[2]: float(row[i])
            for i, k in enumerate(keys)
            if k.startswith(f"{index}.")
        }
        if jitter.clip == "once":
            order = list(jitter.given)
        else:
            order = [n for j in range(len(jitter.given)) for n in jitter.given if p[f"{j}_{n}"]]
        out.append([(name, p[name]) for name in order])
    return out


def torchvision_jitter(image: Any, steps: list[tuple[str, float]]) -> Any:
    """torchvision's ``adjust_*`` in ``steps``' order: what its ``ColorJitter`` does for that
    permutation and those factors."""
    from torchvision.transforms.v2 import functional

    for name, factor in steps:
        image = getattr(functional, f"adjust_{name}")(image, factor)
    return image


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("uint8", [False, True])
def test_color_jitter_matches_torchvision_in_the_order_drawn(engine: str, uint8: bool) -> None:
    """All four factors, each image in its own random order, clipped after each: torchvision's
    ``adjust_*`` in the order and with the factors daliaug drew, on floats (its own path) and
    on uint8, where torchvision truncates after each factor (under a level each, scaled by the
    factors after it: measured up to 4.6 levels, 1.7 on average per image, hence 5 and 2)."""
    import torch

    t = v2()
    x = np.concatenate([photos(), photos()[:, ::-1]])
    jitter = t.ColorJitter(brightness=0.5, contrast=0.5, saturation=0.7, hue=0.2)
    head = [t.CenterCrop((40, 56))]
    tail = [t.ToDtype(torch.float32, scale=True)]
    transforms = t.Compose([*head, jitter, *tail] if uint8 else [*head, *tail, jitter])
    config = compile_for(transforms)
    rows = draw_rows(config.plan, np.random.default_rng(3), len(x))
    index = [e.type for e in config.transforms].index("color_jitter")
    steps = jitter_steps(config, rows, index)
    max_levels, mean_levels = (5.0, 2.0) if uint8 else (MAX_LEVELS, 0.05)
    assert len({tuple(n for n, _ in s) for s in steps}) > 2  # several orders drawn
    found = ours(config, engine, x, rows)
    for i, image in enumerate(t.CenterCrop((40, 56))(as_tensors(x))):
        image = image if uint8 else image.float() / 255.0
        out = torchvision_jitter(image, steps[i])
        out = out.float() / 255.0 if uint8 else out
        expected = levels(config, out.numpy()[None])
        diff = np.abs(found[i : i + 1] - expected)
        assert diff.mean() <= mean_levels and diff.max() <= max_levels, (i, steps[i], diff.max())


def test_color_jitter_before_geometry_joins_the_colour_pass_with_a_warning() -> None:
    """Followed by a flip (or a policy), a ColorJitter without hue becomes one colour map with
    one clip, warned; with factors that never leave the range it is torchvision's in any
    order."""
    import torch

    t = v2()
    jitter = t.ColorJitter(brightness=(0.6, 0.9), contrast=(0.5, 1.0), saturation=(0.3, 1.0))
    transforms = t.Compose(
        [
            t.CenterCrop((40, 56)),
            t.ToDtype(torch.float32, scale=True),
            jitter,
            t.RandomHorizontalFlip(1.0),
        ]
    )
    with pytest.warns(UserWarning, match="ColorJitter: RandomHorizontalFlip follows it"):
        config = daliaug.from_torchvision(
            transforms, source={"type": "arrays"}, batch_size=4, shuffle=False, label_mode="none"
        )
    assert config.transforms[1].clip == "once"
    x = photos()
    rows = draw_rows(config.plan, np.random.default_rng(4), len(x))
    steps = jitter_steps(config, rows, 1)
    found = ours(config, "opencv", x, rows)
    crops = t.CenterCrop((40, 56))(as_tensors(x)).float() / 255.0
    for i, image in enumerate(crops):
        out = t.functional.horizontal_flip(torchvision_jitter(image, steps[i][::-1]))
        assert_close(found[i : i + 1], levels(config, out.numpy()[None]))
    hue = t.Compose([t.CenterCrop(8), t.ColorJitter(hue=0.1), t.RandAugment()])
    with pytest.raises(ConfigError, match="RandAugment: it comes after ColorJitter"):
        compile_for(hue)


def test_geometry_after_a_crop_warns_that_the_image_around_it_shows() -> None:
    """daliaug's one warp shows the image around a crop where a later RandomAffine reveals
    area; torchvision fills it: a warning names both. RandomAffine's default interpolation
    (nearest) becomes the warp's (after a bilinear RandomResizedCrop: refused, one warp)."""
    t = v2()
    bilinear = t.InterpolationMode.BILINEAR
    stack = t.Compose([t.RandomResizedCrop(16), t.RandomAffine(10, interpolation=bilinear)])
    with pytest.warns(UserWarning, match="RandomAffine: where it reveals area outside the window"):
        config = daliaug.from_torchvision(stack, source={"type": "arrays"})
    assert [x.type for x in config.transforms] == ["random_resized_crop", "random_affine"]
    assert compile_for(t.Compose([t.CenterCrop(8), t.RandomAffine(10)])).interpolation == "nearest"
    with pytest.raises(ConfigError, match="RandomAffine: the transforms fuse into one warp"):
        compile_for(t.Compose([t.RandomResizedCrop(16), t.RandomAffine(10)]))


@pytest.mark.parametrize("name", ["eval_recipe", "vertical_flip_uint8"])
def test_torch_batches_have_torchvisions_layout_and_dtype(name: str) -> None:
    """``make_dataset(..., framework="torch")`` of the config hands tensors shaped and typed as
    torchvision's output of the same transforms (channels first; float32 after ToDtype,
    uint8 without), though the config's default layout stays NHWC (Keras on PyTorch is
    channels last): from_torchvision writes ``output.layout: NCHW``."""
    import torch

    t = v2()
    x = photos()
    transforms = FIXED[name](t)
    config = compile_for(transforms)
    assert (
        config.output.layout == "NCHW"
        and daliaug.load_config({"source": {"type": "arrays"}, "image_size": 8}).output.layout
        == "NHWC"
    )
    (images,) = next(iter(daliaug.make_dataset(config, x=x, framework="torch")))
    theirs = transforms(as_tensors(x))
    assert isinstance(images, torch.Tensor) and images.dtype == theirs.dtype
    assert images.shape == theirs.shape


def test_the_issues_recipe_with_color_jitter_before_rand_augment() -> None:
    """``RandomResizedCrop, RandomHorizontalFlip, ColorJitter, RandAugment, ToDtype,
    Normalize``: RandAugment's geometry and colour follow ColorJitter, which joins the colour
    pass (one clip, warned)."""
    import torch

    t = v2()
    recipe = t.Compose(
        [
            t.RandomResizedCrop(224),
            t.RandomHorizontalFlip(),
            t.ColorJitter(0.4, 0.4, 0.4),
            t.RandAugment(),
            t.ToDtype(torch.float32, scale=True),
            t.Normalize(MEAN, STD),
        ]
    )
    with pytest.warns(UserWarning, match="ColorJitter: RandAugment follows it"):
        config = daliaug.from_torchvision(recipe, source={"type": "arrays"})
    types = [x.type for x in config.transforms]
    assert types == ["random_resized_crop", "flip", "color_jitter", "rand_augment"]
    assert config.transforms[2].clip == "once" and config.output.layout == "NCHW"


def _refusals(t: Any) -> list[tuple[Any, str]]:
    import torch

    return [
        (
            t.Compose([t.ColorJitter(hue=0.1), t.RandomVerticalFlip()]),
            "RandomVerticalFlip: it comes after ColorJitter",
        ),
        (t.RandomAffine(10, center=(2, 3)), "RandomAffine: center=[2, 3]"),
        (t.RandomCrop(8, 2, padding_mode="reflect"), "RandomCrop: padding_mode='reflect'"),
        (t.RandomPerspective(1.0), "RandomPerspective: distortion_scale=1.0"),
        (
            t.RandomPerspective(interpolation=t.InterpolationMode.NEAREST),
            "RandomPerspective: interpolation='nearest'",
        ),
        (t.RandomApply([t.RandomHorizontalFlip(), t.CenterCrop(8)]), "RandomApply: it holds 2"),
        (t.RandomOrder([t.RandomHorizontalFlip(), t.RandomVerticalFlip()]), "RandomOrder"),
        (t.RandomApply([t.CenterCrop(8)], p=0.5), "RandomApply: p=0.5 over CenterCrop"),
        (t.Normalize(MEAN, STD), "Normalize: torchvision normalizes float images only"),
        (t.AutoAugment(t.AutoAugmentPolicy.CIFAR10), "AutoAugment: policy='cifar10'"),
        (t.RandomErasing(value="random"), "RandomErasing: value='random'"),
        (t.Resize(16, interpolation=t.InterpolationMode.BICUBIC), "interpolation='bicubic'"),
        (t.ToDtype(torch.float16), "ToDtype: dtype=torch.float16"),
        (t.GaussianBlur(3), "GaussianBlur: daliaug has no equivalent"),
        (type("MyFlip", (t.RandomHorizontalFlip,), {})(), "MyFlip: a subclass of torchvision"),
        (
            t.Compose([t.ToDtype(torch.float32), t.ColorJitter(brightness=0.2)]),
            "ColorJitter: the images reach it as",
        ),
        (t.Compose([t.RandomErasing(), t.CenterCrop(8)]), "CenterCrop: it comes after Random"),
        (t.AutoAugment(fill=9), "AutoAugment: the transforms fuse into one warp with one fill"),
    ]


def test_what_cannot_run_exactly_is_refused_by_name() -> None:
    t = v2()
    for transform, named in _refusals(t):
        stack = t.Compose([t.CenterCrop(16), transform])
        with pytest.raises(ConfigError, match="daliaug compiles") as caught:
            compile_for(stack)
        assert named in str(caught.value), (named, str(caught.value))


def test_random_apply_of_one_transform_scales_its_probability() -> None:
    t = v2()
    stack = t.Compose([t.CenterCrop(16), t.RandomApply([t.RandomErasing(p=0.5)], p=0.5)])
    assert compile_for(stack).transforms[1].probability == 0.25
    jitter = t.RandomApply([t.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)
    assert compile_for(t.Compose([t.CenterCrop(16), jitter])).transforms[1].probability == 0.8
    choice = t.RandomChoice([t.RandomVerticalFlip(0.3)])
    assert compile_for(t.Compose([choice, t.CenterCrop(16)])).transforms[0].vertical == 0.3


def test_a_pipeline_keeping_each_images_size_is_told_to_end_at_one() -> None:
    with pytest.raises(ConfigError, match="image_size: the transforms keep each image's"):
        compile_for(v2().Compose([v2().Resize(32)]))


@pytest.mark.parametrize(("name", "wide"), [("RandAugment", False), ("TrivialAugmentWide", True)])
def test_the_policies_ops_and_magnitude_bins_are_torchvisions(name: str, wide: bool) -> None:
    """daliaug's op list, tables (translations as fractions of the side, solarize's threshold
    on 0..255) and signs are those torchvision's policy reads, bin for bin."""
    from daliaug.transforms.policy import RAND_AUGMENT_OPS, SIGNED_OPS, magnitudes

    space = getattr(v2(), name)()._AUGMENTATION_SPACE
    ours = [op.replace("_", "") for op in RAND_AUGMENT_OPS]
    assert [n.lower() for n in space] == ours
    for (tv_name, (table, signed)), op in zip(space.items(), RAND_AUGMENT_OPS, strict=True):
        theirs = np.asarray(table(31, 1, 1), np.float64).reshape(-1)
        theirs = theirs * 255.0 if tv_name == "Solarize" else theirs
        found = np.asarray(magnitudes(op, 31, wide=wide))
        assert np.allclose(found, theirs if theirs.size > 1 else found[0]), tv_name
        assert signed == (op in SIGNED_OPS), tv_name


def test_the_policies_arguments_carry_over() -> None:
    t = v2()
    stack = t.Compose(
        [
            t.CenterCrop(16),
            t.RandomChoice(
                [t.AugMix(severity=5, mixture_width=2, chain_depth=1, alpha=0.5, all_ops=False)]
            ),
        ]
    )
    mix = compile_for(stack).transforms[1]
    assert (mix.type, mix.severity, mix.mixture_width, mix.chain_depth) == ("aug_mix", 5, 2, 1)
    assert (mix.alpha, mix.all_ops) == (0.5, False)
    trivial = compile_for(t.Compose([t.RandomResizedCrop(8), t.TrivialAugmentWide(15, fill=9)]))
    assert (trivial.transforms[1].num_magnitude_bins, trivial.transforms[1].fill) == (15, 9.0)
