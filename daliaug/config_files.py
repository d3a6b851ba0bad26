"""Config files: YAML and JSON read within bounds, and the shipped configs found by name;
:func:`read_text`, the one way a text file is read (sources' lists and annotations too).

A config is a few dozen values a few levels deep. Anything far larger is refused with a
:class:`~daliaug.errors.ConfigError` before it can cost time or memory: nesting deeper than
:data:`MAX_DEPTH` (PyYAML's composer and Python's ``json`` would recurse until a
``RecursionError``), or more than :data:`MAX_NODES` values counting each YAML alias as the
values it stands for (a few hundred bytes of nested aliases, "billion laughs", would expand
to billions). A key given twice in one mapping is refused too, naming the key and its line
(YAML and JSON parsers keep the last value silently).
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from daliaug.errors import ConfigError, DaliaugError, DataError

MAX_DEPTH = 64
MAX_NODES = 100_000


def read_text(path: Path | str, what: str, error: type[DaliaugError] = DataError) -> str:
    """The UTF-8 text of ``path`` (its line ends made ``\\n``, as Python's text files make
    them), or an ``error`` that starts with ``what`` and names it. Read as bytes, then
    decoded: half the time of a text file's read, for a listing that reads one small file an
    image (YOLO's label files)."""
    try:
        with open(os.path.expanduser(path), "rb") as file:
            text = file.read().decode("utf-8")
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    except OSError as e:
        raise error(f"{what} {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise error(f"{what} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from e


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting the depth and the nodes it composes (an alias counts as
    the nodes of what it refers to)."""

    def __init__(self, stream: str, name: str) -> None:
        super().__init__(stream)
        self.name = name  # for the marks in error messages
        self.depth = 0
        self.nodes = 0
        self.sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self.sizes:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"alias *{event.anchor} refers to a node holding it",
                    event.start_mark,
                )
            self._count(self.sizes.get(id(target), 1), event)
            return super().compose_node(parent, index)
        event = self.peek_event()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark
            )
        before = self.nodes
        self._count(1, event)
        node = super().compose_node(parent, index)
        self.depth -= 1
        self.sizes[id(node)] = self.nodes - before
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """PyYAML's mapping, refusing a key written twice in it (keys merged in by ``<<`` may
        be overridden, as YAML says)."""
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found key {key!r} twice (first on line {seen[key].line + 1}); "
                    "a config gives each key once",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def _count(self, nodes: int, event: yaml.Event) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"holds more than {MAX_NODES:,} values (aliases expanded)",
                event.start_mark,
            )


def _load_yaml(text: str, name: str) -> Any:
    loader = _BoundedLoader(text, name)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"found key {key!r} twice in one object; a config gives each key once")
        data[key] = value
    return data


def check_size(data: Any, origin: str) -> None:
    """A :class:`ConfigError` if ``data`` nests deeper than :data:`MAX_DEPTH` or holds more
    than :data:`MAX_NODES` values (shared ones counted each time they appear)."""
    pending, nodes = [(data, 1)], 0
    while pending:
        value, depth = pending.pop()
        nodes += 1
        if depth > MAX_DEPTH or nodes > MAX_NODES:
            what = (
                f"nested more than {MAX_DEPTH} levels deep"
                if depth > MAX_DEPTH
                else (f"holds more than {MAX_NODES:,} values")
            )
            raise ConfigError(f"config {origin} {what}; a config is a few levels of settings")
        if isinstance(value, Mapping):
            pending.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend((v, depth + 1) for v in value)


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a YAML or JSON file into a dict; errors name the file (and line for YAML)."""
    p = Path(path)
    text = read_text(p, "cannot read config file", ConfigError)
    kind = "JSON" if p.suffix.lower() == ".json" else "YAML"
    try:
        data = (
            json.loads(text, object_pairs_hook=_unique_keys)
            if kind == "JSON"
            else _load_yaml(text, str(p))
        )
    except RecursionError:
        raise ConfigError(f"config file {p} is nested too deeply to be a config") from None
    except (ValueError, yaml.YAMLError) as e:  # JSONDecodeError, a number too long to read
        raise ConfigError(f"config file {p} is not valid {kind}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys, got {type(data).__name__}")
    check_size(data, str(p))
    return data


def shipped_configs() -> dict[str, Path]:
    """The configs that ship with daliaug (``pipelines/*.yaml``), by name."""
    folder = resources.files("daliaug.pipelines")
    return {
        entry.name.removesuffix(".yaml"): Path(str(entry))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    }


def config_path(source: str | os.PathLike[str]) -> Path:
    """The file ``source`` names: a path, or the name of a shipped config (a string with no
    folder and no suffix that is not a file here)."""
    if not isinstance(source, str) or "/" in source or os.sep in source:
        return Path(source)
    if Path(source).suffix or Path(source).exists():
        return Path(source)
    shipped = shipped_configs()
    if source not in shipped:
        raise ConfigError(
            f"config {source!r} is neither a file nor a shipped config (shipped: "
            f"{', '.join(shipped)})"
        )
    return shipped[source]
