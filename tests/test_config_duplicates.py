"""A key given twice in one mapping of a config file is refused, naming the key and its line
(YAML and JSON parsers would keep the last value silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from daliaug.config import load_config
from daliaug.errors import ConfigError


def test_yaml_key_twice_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "source: {type: directory, path: data}\n"
        "transforms:\n  - type: flip\n"
        "image_size: 32\n"
        "transforms:\n  - type: rotation\n    degrees: 10\n"
    )
    with pytest.raises(ConfigError) as e:
        load_config(path)
    message = str(e.value)
    assert str(path) in message and "'transforms' twice" in message
    assert "first on line 2" in message and "line 5" in message


def test_nested_yaml_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("source: {type: directory, path: data, path: other}\nimage_size: 32\n")
    with pytest.raises(ConfigError, match="'path' twice"):
        load_config(path)


def test_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    """YAML's ``<<`` merge is not a key given twice: the mapping's own key wins, as YAML says."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "base: &base {type: directory, path: data}\n"
        "source:\n  <<: *base\n  path: elsewhere\n"
        "image_size: 32\n"
    )
    with pytest.raises(ConfigError, match="base"):  # an unknown top-level field, not a duplicate
        load_config(path)
    path.write_text(
        "source:\n  <<: {type: directory, path: data}\n  path: elsewhere\nimage_size: 32\n"
    )
    assert str(load_config(path).source.path) == "elsewhere"


def test_json_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        '{"source": {"type": "directory", "path": "data"}, "image_size": 32, "image_size": 64}'
    )
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(path) in str(e.value) and "'image_size' twice" in str(e.value)
