"""The generated reference pages' sections: every config field from the pydantic models (its
type, default, limits and docstring) and every command's ``--help`` from the argparse parser."""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import json
import os
import re
import textwrap
from typing import Any

from pydantic import BaseModel


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring (the string after its annotation), from the model's class and
    its bases' source."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = markdown_text(after.value.value)
    return docs


def type_text(schema: dict[str, Any]) -> str:
    """A JSON Schema's type as the reference writes it: ``integer 1..64``, ``a | b``,
    ``[number, number]``, a model's name."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "discriminator" in schema:
        return f"one of {len(schema['oneOf'])} kinds, by `type` (below)"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(type_text(s) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        if "prefixItems" in schema:
            return "[" + ", ".join(type_text(s) for s in schema["prefixItems"]) + "]"
        items = type_text(schema.get("items", {}))
        if items.startswith("one of"):
            return f"list, each {items}"
        return f"list of {items}"
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if schema.get("format") == "path":
        return "path"
    if low is not None or high is not None:
        left = "(" if "exclusiveMinimum" in schema else ""
        right = ")" if "exclusiveMaximum" in schema else ""
        return f"{kind} {left}{_num(low, '-inf')}..{_num(high, 'inf')}{right}"
    if "pattern" in schema:
        return f"{kind} matching `{schema['pattern']}`"
    return kind


def _num(value: float | None, missing: str) -> str:
    if value is None:
        return missing
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"


ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]*\.)?(?P<name>[^`]+)`")


def markdown_text(doc: str) -> str:
    """A docstring's reStructuredText as Markdown on one line: ````x```` and ``:role:`a.b``` as
    code."""
    return ROLE.sub(lambda m: f"`{m['name']}`", " ".join(doc.split())).replace("``", "`")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def model_section(name: str, schema: dict[str, Any], docs: dict[str, str], level: int) -> str:
    """One model's heading, docstring and table of fields."""
    lines = [f"{'#' * level} {name}", ""]
    if schema.get("description"):
        lines += [markdown_text(schema["description"]), ""]
    required = set(schema.get("required", []))
    lines += ["| field | type and limits | default | what it is |", "| --- | --- | --- | --- |"]
    for field, prop in schema.get("properties", {}).items():
        default = "required" if field in required else f"`{json.dumps(prop.get('default'))}`"
        row = [f"`{field}`", _cell(type_text(prop)), _cell(default), _cell(docs.get(field, ""))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def config_reference() -> str:
    """Every model of a config: the top level, ``output``, each source and each transform by
    its ``type``; from :func:`daliaug.tools.schema.config_schema` and the models' docstrings."""
    from daliaug.config import Config, Output
    from daliaug.sources import SourceConfig
    from daliaug.transforms import TRANSFORMS

    schema = Config.model_json_schema()
    defs = schema["$defs"]
    parts = [model_section("Top level", schema, field_docs(Config), 3)]
    parts.append(model_section("`output`", defs["Output"], field_docs(Output), 3))
    parts.append("## Sources, by `type`\n")
    for name, cls in sorted(SourceConfig.registry.items()):
        parts.append(model_section(f"`{name}`", defs[cls.__name__], field_docs(cls), 3))
    parts.append("## Transforms, by `type`\n")
    for name, cls in sorted(TRANSFORMS.items()):
        parts.append(model_section(f"`{name}`", defs[cls.__name__], field_docs(cls), 3))
    return "\n".join(parts)


def cli_reference() -> str:
    """Each command's ``--help``, as the parser prints it at 100 columns."""
    from daliaug.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = build_parser()
        commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
        parts = [_help("daliaug --help", parser)]
        parts += [_help(f"daliaug {name} --help", sub) for name, sub in commands.items()]
    finally:
        if old is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def _help(title: str, parser: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        parser.print_help()
    return f"### `{title}`\n\n```text\n{out.getvalue().rstrip()}\n```\n"
