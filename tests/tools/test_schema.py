"""``daliaug schema``: the JSON Schema editors check configs with. Checked with the
``jsonschema`` package as an editor's validator reads it: every shipped config and every
example the schema carries validates, each transform's parity example too (the schema is never
stricter than the model), configs the model refuses for a field's type or limit are refused,
and the copy that ships beside the shipped configs is the one the command writes now."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from daliaug.cli import main
from daliaug.config import load_config
from daliaug.config_files import shipped_configs
from daliaug.parity.examples import TRANSFORM_EXAMPLES
from daliaug.tools.schema import EXAMPLES, SHIPPED_NAME, config_schema, schema_text, shipped_schema

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).parents[2]
LINE = re.compile(r"^# yaml-language-server: \$schema=(?P<path>\S+)\n")


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = config_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_the_shipped_schema_is_what_the_command_writes() -> None:
    assert shipped_schema().resolve() == ROOT / "pipelines" / SHIPPED_NAME
    assert shipped_schema().read_text() == schema_text(), (
        "run: daliaug schema --out pipelines/config.schema.json"
    )


@pytest.mark.parametrize("name", sorted(shipped_configs()))
def test_each_shipped_config_names_the_schema_and_validates(name: str, validator: Any) -> None:
    path = shipped_configs()[name]
    text = path.read_text()
    line = LINE.match(text)
    assert line, f"{path.name}: its first line names no schema"
    assert (path.parent / line["path"]).resolve() == shipped_schema().resolve()
    validator.validate(yaml.safe_load(text))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["source"]["type"])
def test_the_schema_examples_are_valid_configs(example: dict, validator: Any) -> None:
    validator.validate(example)
    load_config(example)


@pytest.mark.parametrize("transform", TRANSFORM_EXAMPLES, ids=lambda t: t["type"])
def test_every_transform_example_validates(transform: dict, validator: Any) -> None:
    config = {
        "source": {"type": "directory", "path": "data"},
        "image_size": 64,
        "label_mode": "categorical",
        "transforms": [transform],
    }
    load_config(config)
    validator.validate(config)


def edited(path: str, value: Any) -> dict:
    """The first schema example with the field at dotted ``path`` set to ``value``."""
    config = copy.deepcopy(EXAMPLES[0])
    *parents, last = path.split(".")
    node: Any = config
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[int(last) if last.isdigit() else last] = value
    return config


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("batch_size", 0),
        ("batch_size", 32.5),
        ("image_size", [224]),
        ("label_mode", "onehot"),
        ("shuffle", [True]),
        ("source.type", "folders"),
        ("source.pth", "data"),
        ("transforms.1.type", "flips"),
        ("transforms.1.horizontal", 1.5),
        ("transforms.0.scale", [0.1, 0.2, 0.3]),
        ("transforms.1", {"type": "rotation", "angle": [-400, 10]}),  # beyond a whole turn
        ("transforms.1", {"type": "brightness", "factor": [0.5, 101]}),
        ("output", {"dtype": "int8"}),
    ],
)
def test_a_field_the_model_refuses_the_schema_refuses(
    path: str, value: Any, validator: Any
) -> None:
    config = edited(path, value)
    with pytest.raises(Exception, match="invalid config"):
        load_config(config)
    assert not validator.is_valid(config)


def test_the_command_prints_or_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == schema_text()
    out = tmp_path / "new" / "schema.json"
    assert main(["schema", "--out", str(out)]) == 0
    assert out.read_text() == schema_text()
    assert str(out) in capsys.readouterr().err
