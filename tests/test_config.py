"""Config validation: valid configs load; every error names the field and the bad value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daliaug.config import Config, load_config
from daliaug.errors import ConfigError
from daliaug.transforms import TRANSFORMS, ColourTransform, GeometricTransform
from daliaug.transforms.base import BatchTransform, PixelTransform

PIPELINES = sorted((Path(__file__).parents[1] / "pipelines").glob("*.yaml"))
BASE = {"source": {"type": "directory", "path": "data"}, "image_size": 32}


def error_of(data: dict) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(data)
    return str(e.value)


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.name)
def test_shipped_pipelines_validate(path: Path) -> None:
    config = load_config(path)
    assert config.transforms or config.output.mean is not None
    assert load_config(config.model_dump()) == config  # the normalized form round-trips


def test_defaults_are_filled_in() -> None:
    config = load_config({**BASE, "transforms": [{"type": "random_resized_crop"}]})
    assert config.image_size == (32, 32)
    assert config.transforms[0].size == (32, 32)  # the crop resizes to image_size
    assert config.batch_size == 32 and config.label_mode == "int" and config.backend == "auto"


def test_normalize_transform_moves_into_output() -> None:
    config = load_config(
        {
            **BASE,
            "transforms": [{"type": "flip"}, {"type": "normalize", "mean": 127.5, "std": 127.5}],
        }
    )
    assert [t.type for t in config.transforms] == ["flip"]
    assert config.output.mean_std(3) == ([127.5] * 3, [127.5] * 3)


def test_yaml_json_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(BASE))
    (tmp_path / "c.yaml").write_text("source: {type: directory, path: data}\nimage_size: 32\n")
    assert load_config(tmp_path / "c.json") == load_config(tmp_path / "c.yaml")
    moved = load_config(tmp_path / "c.yaml", {"source": {"path": "elsewhere"}, "batch_size": 8})
    assert str(moved.source.path) == "elsewhere" and moved.batch_size == 8


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**BASE, "colour": 1}, "colour: Extra inputs are not permitted (got 1)"),
        (
            {**BASE, "batch_size": 0},
            "batch_size: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            {**BASE, "label_mode": "onehot"},
            "label_mode: Input should be 'int', 'categorical', 'binary'",
        ),
        (
            {**BASE, "transforms": [{"type": "rotate", "angle": 3}]},
            "transforms.0: Input tag 'rotate'",
        ),
        (
            {**BASE, "transforms": [{"type": "rotation", "angle": "lots"}]},
            "transforms.0.rotation.angle: Input should be a valid tuple (got 'lots')",
        ),
        (
            {**BASE, "transforms": [{"type": "rotation", "angle": [10, -10]}]},
            "transforms.0.rotation.angle: range must be [low, high] with low <= high",
        ),
        (
            {**BASE, "transforms": [{"type": "flip", "horizontal": 2}]},
            "transforms.0.flip.horizontal: Input should be less than or equal to 1 (got 2)",
        ),
        (
            {**BASE, "transforms": [{"type": "random_resized_crop", "scale": [0.5, 2]}]},
            "transforms.0.random_resized_crop.scale: scale is a fraction of the image area",
        ),
        (
            {**BASE, "transforms": [{"type": "resize"}]},
            "transforms.0.resize: give exactly one of 'size' or 'shorter_side'",
        ),
        (
            {**BASE, "transforms": [{"type": "normalize", "rescale": 1}, {"type": "flip"}]},
            "transforms.0: 'normalize' must be the last transform",
        ),
        (
            {
                **BASE,
                "transforms": [
                    {"type": "rotation", "angle": 5, "fill": 0},
                    {"type": "shift", "x": 0.1, "fill": "nearest"},
                ],
            },
            "transforms.0.fill=0.0, transforms.1.fill='nearest'",
        ),
        (
            {**BASE, "channels": 1, "transforms": [{"type": "hue", "degrees": 10}]},
            "transforms.0: 'hue' needs channels: 3",
        ),
        (
            {**BASE, "channels": 4},
            "channels: 4: files decode to 1 (grey) or 3 (RGB) channels",
        ),
        (
            {**BASE, "output": {"dtype": "uint8", "rescale": 0.5}},
            "output: dtype uint8 cannot carry normalized values",
        ),
        (
            {**BASE, "transforms": [{"type": "normalize", "mean": [1, 2]}]},
            "output.mean: 2 values [1.0, 2.0] for channels: 3",
        ),
        (
            {**BASE, "transforms": [{"type": "normalize"}]},
            "transforms.0.normalize: give 'rescale' or 'mean' and/or 'std'",
        ),
        ({**BASE, "source": {"type": "directory"}}, "source.directory.path: Field required"),
        ({"image_size": 32}, "source: Field required"),
    ],
)
def test_errors_name_the_field_and_value(data: dict, expected: str) -> None:
    assert expected in error_of(data)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("source: [unclosed\n")
    message = error_of_path(broken)
    assert str(broken) in message and "line" in message
    assert "cannot read config file" in error_of_path(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    assert "must hold a mapping" in error_of_path(tmp_path / "list.yaml")


def error_of_path(path: Path) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(path)
    return str(e.value)


def test_every_transform_is_one_unit() -> None:
    """Each registered transform validates alone and declares what it draws."""
    for name, cls in TRANSFORMS.items():
        assert cls.__doc__, name
        kinds = (GeometricTransform, ColourTransform, PixelTransform, BatchTransform)
        assert issubclass(cls, kinds) or name == "normalize"


_ranges = st.tuples(st.floats(-40, 40), st.floats(0, 40)).map(lambda t: [t[0], t[0] + t[1]])
_factors = st.floats(0.0, 0.9)
_transform = st.one_of(
    st.builds(lambda a: {"type": "rotation", "angle": a}, _ranges),
    st.builds(lambda a: {"type": "shear", "angle": [a[0] / 2, a[1] / 2]}, _ranges),
    st.builds(lambda x, y: {"type": "shift", "x": x, "y": y}, _factors, _factors),
    st.builds(lambda f: {"type": "zoom", "factor": f}, _factors),
    st.builds(
        lambda p, q: {"type": "flip", "horizontal": p, "vertical": q},
        st.floats(0, 1),
        st.floats(0, 1),
    ),
    st.builds(lambda f: {"type": "brightness", "factor": f}, _factors),
    st.builds(lambda f: {"type": "contrast", "factor": f}, _factors),
    st.builds(lambda f: {"type": "saturation", "factor": f}, _factors),
    st.builds(lambda a: {"type": "hue", "degrees": a}, _ranges),
    st.builds(lambda s: {"type": "resize", "size": s}, st.integers(1, 512)),
    st.builds(lambda s: {"type": "center_crop", "size": s}, st.integers(1, 512)),
    st.builds(lambda lo: {"type": "random_resized_crop", "scale": [lo, 1.0]}, st.floats(0.01, 1)),
)


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(st.lists(_transform, max_size=6))
def test_fuzzed_valid_configs_round_trip(transforms: list[dict]) -> None:
    config = load_config({**BASE, "transforms": transforms})
    assert isinstance(config, Config)
    assert load_config(config.model_dump(mode="json")) == config


_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["type", "angle", "factor", "size", "fill", "x", "p"]), _junk, max_size=4
    ),
    st.sampled_from(sorted(TRANSFORMS)),
)
def test_fuzzed_bad_transforms_fail_cleanly(fields: dict, kind: str) -> None:
    """Whatever garbage a transform entry holds, the outcome is a config or a ConfigError."""
    try:
        load_config({**BASE, "transforms": [{**fields, "type": kind}]})
    except ConfigError as e:
        assert "transforms.0" in str(e)


# ---------------------------------------------------------------- adversarial values (issue 26)

NAN, INF = float("nan"), float("inf")


def transform(entry: dict) -> dict:
    return {**BASE, "transforms": [entry]}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (transform({"type": "brightness", "factor": NAN}), "transforms.0.brightness.factor"),
        (transform({"type": "rotation", "angle": INF}), "transforms.0.rotation.angle"),
        (transform({"type": "shift", "x": -INF}), "transforms.0.shift.x"),
        (transform({"type": "zoom", "factor": [1, NAN]}), "transforms.0.zoom.factor"),
        (transform({"type": "hue", "degrees": NAN}), "transforms.0.hue.degrees"),
        (transform({"type": "random_resized_crop", "scale": [NAN, 1]}), "scale"),
        (transform({"type": "rotation", "angle": 5, "fill": NAN}), "transforms.0.rotation.fill"),
        (transform({"type": "center_crop", "size": 8, "fill": INF}), "center_crop.fill"),
        (transform({"type": "keras_affine", "shear_range": NAN}), "keras_affine.shear_range"),
        (transform({"type": "keras_affine", "width_shift_range": INF}), "width_shift_range"),
        (transform({"type": "normalize", "mean": NAN}), "transforms.0.normalize.mean"),
        (transform({"type": "normalize", "std": 0}), "transforms.0.normalize.std"),
        (transform({"type": "normalize", "std": [1, 0, 1]}), "transforms.0.normalize.std"),
        ({**BASE, "output": {"std": INF}}, "output.std"),
        ({**BASE, "output": {"rescale": NAN}}, "output.rescale"),
        ({**BASE, "output": {"std": 1e-40}}, "output: mean None and std 1e-40"),
        ({**BASE, "output": {"std": 0.001, "dtype": "float16"}}, "beyond the 6.55e+04"),
        (transform({"type": "rotation", "angle": 1e30}), "angles must lie within"),
        (transform({"type": "brightness", "factor": 10**400}), "too large for a floating"),
        (transform({"type": "keras_affine", "zoom_range": [0, 0]}), "zoom factors must lie"),
    ],
)
def test_non_finite_and_degenerate_numbers_are_refused_naming_the_field(
    data: dict, field: str
) -> None:
    """NaN, infinities, a std of 0 and numbers whose results overflow: refused when the
    config is validated (they used to pass, and give NaN or Inf pixels or an unnamed
    OverflowError at the first batch)."""
    assert field in error_of(data)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seed", -1, "greater than or equal to 0"),
        ("seed", 1e23, "must be a whole number, not a float"),
        ("seed", 2**63, "less than or equal to 9223372036854775807"),
        ("image_size", 100_000, "less than or equal to 16384"),
        ("image_size", 1e30, "must be a whole number of pixels"),
        ("batch_size", 10**9, "less than or equal to 65536"),
        ("batch_size", True, "must be a whole number, not a bool"),
        ("batch_size", "32", "must be a whole number, not a str"),
        ("channels", True, "must be a whole number, not a bool"),
        ("num_threads", 1_000_000, "less than or equal to 1024"),
        ("prefetch", 10**6, "less than or equal to 64"),
        ("device_id", -1, "greater than or equal to 0"),
    ],
)
def test_counts_and_sizes_are_strict_and_bounded(field: str, value: object, message: str) -> None:
    """Whole numbers within what the engines take (beyond, DALI and TensorFlow died of
    signals or failed at the first batch)."""
    assert f"{field}" in (error := error_of({**BASE, field: value})) and message in error


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"class_names": ["a", "a"]}, "names each class once; repeated: ['a']"),
        ({"class_names": []}, "lists no class"),
        ({"class_names": [".."]}, "class names are folder names"),
        ({"class_names": ["a/b"]}, "class names are folder names"),
        ({"path": "a\0b"}, "cannot hold a NUL character"),
    ],
)
def test_class_names_are_distinct_folder_names(source: dict, message: str) -> None:
    error = error_of({**BASE, "source": {**BASE["source"], **source}})
    assert "source.directory." in error and message in error


@pytest.mark.parametrize("kind", ["arrays", "tfrecord"])
def test_class_names_of_other_sources_are_distinct(kind: str) -> None:
    source = {"type": kind, "path": "x", "class_names": ["cat", "dog", "cat"]}
    error = error_of({**BASE, "source": source})
    assert f"source.{kind}.class_names: names each class once" in error


def test_every_bad_field_and_broken_rule_is_reported_together() -> None:
    """A rule across fields (normalize last, hue on one channel) is reported with the bad
    fields, not instead of them or only once they are fixed."""
    error = error_of(
        {
            **BASE,
            "channels": 1,
            "batch_size": 0,
            "seed": -1,
            "transforms": [
                {"type": "normalize", "rescale": 0.5},
                {"type": "hue", "degrees": 10},
                {"type": "rotation", "angle": NAN},
            ],
        }
    )
    for part in (
        "batch_size: Input should be greater than or equal to 1",
        "seed: Input should be greater than or equal to 0",
        "transforms.2.rotation.angle.0: Input should be a finite number",
        "transforms.0: 'normalize' must be the last transform",
        "transforms.1: 'hue' needs channels: 3",
    ):
        assert part in error, error


@pytest.mark.parametrize("source", [None, 3, 2.5, ["a"], b"config.yaml"])
def test_load_config_of_something_else_is_a_config_error(source: object) -> None:
    with pytest.raises(ConfigError, match=f"not {type(source).__name__}"):
        load_config(source)  # type: ignore[arg-type]


def test_shipped_configs_load_by_name() -> None:
    config = load_config("imagenet_train", {"source": {"path": "/data/train"}})
    path = next(p for p in PIPELINES if p.stem == "imagenet_train")
    assert config == load_config(path, {"source": {"path": "/data/train"}})
    with pytest.raises(ConfigError) as e:
        load_config("imagenet")
    assert "'imagenet' is neither a file nor a shipped config" in str(e.value)
    shipped = "cifar_train, demo, imagenet_randaug_mix, imagenet_train, imagenet_val, segmentation"
    assert shipped in str(e.value)


LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
"""A "billion laughs": 9 ** 9 strings from 342 bytes of nested aliases."""


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("deep.yaml", "a: " + "[" * 5000 + "]" * 5000, "nested more than 64 levels deep"),
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("long.json", '{"seed": ' + "1" * 5000 + "}", "is not valid JSON"),
        ("loop.yaml", "a: &x [1, *x]", "alias *x refers to a node holding it"),
        ("laughs.yaml", LAUGHS, "holds more than 100,000 values (aliases expanded)"),
    ],
)
def test_oversized_config_files_are_refused(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """Deep nesting and alias bombs: a ConfigError naming the file, not a RecursionError or
    minutes and gigabytes spent expanding them."""
    path = tmp_path / name
    path.write_text(text)
    error = error_of_path(path)
    assert str(path) in error and message in error
