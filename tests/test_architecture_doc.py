"""ARCHITECTURE.md names only what exists: every module path and every dotted reference
(``Plan.point_maps``, ``engines.select``) in backticks resolves in the package; the names
of other libraries (``tf.data``) are left to them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "daliaug"
TEXT = (ROOT / "ARCHITECTURE.md").read_text()
TOKENS = sorted(set(re.findall(r"`([^`\s]+)`", TEXT)))
FOREIGN = ("tf.", "np.", "fn.", "keras.", "torch.", "jax.", "nvidia.", "model.", "Dataset.", "os.")
NOT_THERE = {"core/"}
"""Paths ARCHITECTURE.md names as what the package does not have."""
"""Prefixes of other libraries' names."""

PATHS = [t for t in TOKENS if re.fullmatch(r"[\w./]+(\.py|/)", t) and t not in NOT_THERE]
DOTTED = [
    t
    for t in TOKENS
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", t)
    and not t.startswith(FOREIGN)
    and not t.endswith((".py", ".md", ".yaml", ".npz", ".json"))
]


LISTED = sorted(set(re.findall(r"\b(\w+\.py)\b", TEXT.split("```text")[1].split("```")[0])))
"""The module files the layout listing names."""


@pytest.mark.parametrize("name", LISTED)
def test_a_listed_module_exists(name: str) -> None:
    found = [*PACKAGE.rglob(name), *(ROOT / "tests").rglob(name)]
    assert found, f"ARCHITECTURE.md's listing names {name}, which is not there"


@pytest.mark.parametrize("path", PATHS)
def test_a_named_path_exists(path: str) -> None:
    places = [PACKAGE / path, ROOT / path, PACKAGE / "engines" / path, PACKAGE / "outputs" / path]
    places += [PACKAGE / "sources" / path, PACKAGE / "transforms" / path]
    places += [PACKAGE / "engines" / "tf" / path, PACKAGE / "engines" / "dali" / path]
    assert any(p.exists() for p in places), f"ARCHITECTURE.md names {path}, which is not there"


def _module_file(name: str) -> Path | None:
    """The module ``daliaug.<name>``, or the one module whose file or folder is ``name``."""
    path = PACKAGE.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    found = [*PACKAGE.rglob(f"{name}.py"), *PACKAGE.rglob(f"{name}/__init__.py")]
    return found[0] if len(found) == 1 else None


def _class_file(name: str) -> Path | None:
    pattern = re.compile(rf"^class {name}\b", re.M)
    return next((f for f in PACKAGE.rglob("*.py") if pattern.search(f.read_text())), None)


def _defines(source: str, attr: str) -> bool:
    """Whether a module's or class's source defines or imports ``attr``."""
    pattern = rf"^\s*(def |class |async def )?{attr}\b\s*[(:=]|^from .* import .*\b{attr}\b"
    return bool(re.search(pattern, source, re.M))


@pytest.mark.parametrize("reference", DOTTED)
def test_a_dotted_reference_resolves(reference: str) -> None:
    parts = reference.removeprefix("daliaug.").split(".")
    for cut in range(len(parts), 0, -1):  # the longest module prefix, then a name in it
        module = _module_file(".".join(parts[:cut]))
        if module is not None:
            rest = parts[cut:]
            source = module.read_text()
            assert not rest or _defines(source, rest[0]), f"{reference}: no {rest[0]} in {module}"
            return
    if _defines((PACKAGE / "__init__.py").read_text(), parts[0]):
        return  # the package's own face: daliaug.make_dataset
    owner = _class_file(parts[0])
    assert owner is not None, f"ARCHITECTURE.md names {reference}: no module or class {parts[0]}"
    assert _defines(owner.read_text(), parts[1]), f"{reference}: no {parts[1]} in {owner}"
