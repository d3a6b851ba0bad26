"""ARCHITECTURE.md's import rules hold: layers import downwards only, no import cycles."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "daliaug"
ORCHESTRATORS = {"daliaug", "daliaug.prepare"}
LAYERS = (
    "core",
    "engines",
    "orchestrators",
    "outputs",
    "keras",
    "torchvision",
    "parity",
    "tools",
    "cli",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    if module in ORCHESTRATORS:
        return "orchestrators"
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return top if top in LAYERS else "core"


def imports(path: Path, module_level: bool) -> Iterator[str]:
    """The daliaug modules ``path`` imports (with ``module_level``, only the imports at module
    level, outside ``if TYPE_CHECKING:``; else all of them, lazy and typing ones too)."""
    tree = ast.parse(path.read_text())
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    nodes = tree.body if module_level else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("daliaug"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            if base.startswith("daliaug"):
                yield base


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def resolve(name: str) -> str:
    """The module an import names (``from daliaug.x import y`` may name module ``daliaug.x.y``)."""
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers_import_downwards(module: str) -> None:
    mine = layer(module)
    for imported in map(resolve, imports(MODULES[module], module_level=False)):
        theirs = layer(imported)
        if mine == "keras" and theirs == "engines":
            assert imported.count(".") <= 2, f"{module} reaches into engine internals: {imported}"
        if module == "daliaug" and theirs in ("outputs", "keras", "torchvision"):
            continue  # the public face: checked below, lazily, inside functions
        assert LAYERS.index(theirs) <= LAYERS.index(mine), f"{module} ({mine}) imports {imported}"


def test_package_imports_outputs_and_keras_lazily() -> None:
    top = {resolve(m) for m in imports(MODULES["daliaug"], module_level=True)}
    assert not {m for m in top if layer(m) in ("outputs", "engines", "keras", "torchvision")}


def test_no_import_cycles() -> None:
    """No cycle, counting lazy and typing-only imports: a package importing its own submodules
    (``__init__.py``'s dispatch) is the one exception."""
    graph = {
        m: {resolve(i) for i in imports(p, module_level=False)} - {m} for m, p in MODULES.items()
    }
    # a package's __init__ is imported on the way to its submodules
    for m in list(graph):
        parent = m.rpartition(".")[0]
        if parent in graph:
            graph[m].add(parent)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(f"{node}."):
                continue  # a package importing its own submodule
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] if nxt in path else path
                raise AssertionError(f"import cycle: {' -> '.join([*cycle, nxt])}")
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


OUTPUT_PEERS = ("daliaug.outputs.tfdata", "daliaug.outputs.jax", "daliaug.outputs.torch")
"""The frameworks' outputs besides NumPy's (``outputs/batches.py``, which JAX and PyTorch
build on)."""


def output_peer(module: str) -> str | None:
    return next((p for p in OUTPUT_PEERS if module == p or module.startswith(f"{p}.")), None)


def test_make_dataset_is_the_one_front_door_of_peer_outputs() -> None:
    """``make_dataset`` lives in ``outputs/dataset.py``, the only module of ``outputs/`` that
    picks among the frameworks' outputs; they never import one another (``outputs.bridges``
    reaches each engine's ``tf.data`` dataset in ``tfdata``)."""
    definers = {
        m
        for m, p in MODULES.items()
        for node in ast.parse(p.read_text()).body
        if isinstance(node, ast.FunctionDef) and node.name == "make_dataset"
    }
    assert definers == {"daliaug", "daliaug.outputs.dataset"}  # the public face, the front door
    assert "daliaug.outputs.dataset" in set(imports(MODULES["daliaug"], module_level=False))
    for module, path in MODULES.items():
        if not module.startswith("daliaug.outputs.") or module == "daliaug.outputs.dataset":
            continue
        mine = output_peer(module)
        reached = {output_peer(resolve(i)) for i in imports(path, module_level=False)}
        bridges = "daliaug.outputs.tfdata" if module == "daliaug.outputs.bridges" else None
        allowed = {None, mine, bridges}
        assert reached <= allowed, f"{module} imports the output of {reached - allowed}"


RECORD_READERS = {
    "daliaug.engines.feed",  # graph_inputs: packed record rows (RecordLayout) or columns
    "daliaug.engines.dali.pipeline",  # DALI's own reader (fn.readers.tfrecord)
    "daliaug.engines.tf.records",  # TensorFlow's reader (TFRecordDataset)
}
"""The engines' readers of TFRecords: each picks its reader for a kind of sample set."""


def _compares_with_tfrecord(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Constant) and node.value == "tfrecord"
        for compare in ast.walk(tree)
        if isinstance(compare, ast.Compare)
        for node in (compare.left, *compare.comparators)
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_record_special_cases_in_one_place(module: str) -> None:
    """TFRecords' special cases live in ``sources/`` (``RecordSamples``, a ``SampleSet``) and
    the engines' readers: no other module names ``RecordSamples`` or tests for ``tfrecord``."""
    if module.startswith("daliaug.sources") or module in RECORD_READERS:
        return
    text = MODULES[module].read_text()
    assert "RecordSamples" not in text, f"{module} names RecordSamples; ask the SampleSet instead"
    assert not _compares_with_tfrecord(ast.parse(text)), f"{module} tests for 'tfrecord'"


BACKEND_FIELD_READERS = {
    "daliaug.config": "validates the user's `backend` field (a fill that needs backend: tf)",
    "daliaug.keras.compile": "keeps a user's `backend: tf` where a layer's fill needs it",
    "daliaug.keras.generator": "ImageDataGenerator's `backend=` argument, against its stages",
}
"""Modules that compare the user's ``backend`` value (whose placements share names with the
host engines), never to pick an engine's code."""


def _compares_with_engine_name(tree: ast.AST) -> bool:
    from daliaug.engine_names import ENGINE_NAMES

    return any(
        isinstance(node, ast.Constant) and node.value in ENGINE_NAMES
        for compare in ast.walk(tree)
        if isinstance(compare, ast.Compare)
        for node in (
            compare.left,
            *compare.comparators,
            *getattr(compare.comparators[0], "elts", ()),
        )
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_engines_are_asked_not_named(module: str) -> None:
    """Outside ``engines/`` no module compares an engine's name: it asks the engine object
    (``engines.engine(name)``: label, device, lacks) or its bridge (``outputs/bridges.py``)."""
    if module.startswith("daliaug.engines") or module in BACKEND_FIELD_READERS:
        return
    tree = ast.parse(MODULES[module].read_text())
    assert not _compares_with_engine_name(tree), f"{module} compares an engine's name"


def test_every_engine_has_its_bridges() -> None:
    from daliaug.engine_names import ENGINE_NAMES
    from daliaug.outputs.bridges import BRIDGES

    assert tuple(BRIDGES) == ENGINE_NAMES
