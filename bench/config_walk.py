"""The walk of ``make_dataset``'s config through the package: which files it visits, how often
it climbs back up the import graph (issue 47, item 3).

    python -m bench.config_walk [--backend tf cpu] [--json]

It measures the tree that ``import daliaug`` finds (set ``PYTHONPATH`` to compare two
checkouts with the same tool).

**Floors.** The import graph has one node per module of ``daliaug/`` and one arrow per daliaug
module a module imports, read with :mod:`ast` as ``tests/test_architecture.py`` reads them:
every ``import``/``from ... import`` anywhere in the file (module level, lazy imports inside
functions, and those under ``if TYPE_CHECKING:``), ``from daliaug.x import y`` naming module
``daliaug.x.y`` where that is a module, else the deepest module of the dotted name. A module's
floor is its height in that graph: 0 for a module importing no daliaug module, else one more
than the highest module it imports. An arrow that would close a circle (none is expected: the
architecture test forbids them) is set aside and listed as a back arrow.

**Rooms.** A room is a module in the package's root folder (``daliaug/__init__.py`` is room
``daliaug``, ``config.py`` room ``daliaug.config``) or a first-level subpackage with everything
below it (``daliaug.engines``, subfolders included). Room arrows: the distinct (room, room)
pairs of module arrows between two rooms. Room floors: the longest chain of room arrows,
counted in rooms; an arrow closing a circle of rooms (met in sorted order) is set aside as a
back arrow. The issue's author counted "24 rooms on 12 floors, 114 import arrows" by rules they
did not write down; these are this tool's rules, the same on every tree.

**The walk.** ``daliaug.make_dataset(config)`` runs on a small class-folder dataset (PNGs
written to a temporary folder) with the shipped ``demo.yaml``'s transforms, loaded with
``daliaug.load_config("demo", overrides)`` (the overrides: that folder, ``backend``, a batch of
4 and 32x32 images); it builds the dataset and takes one batch, under :func:`sys.setprofile`
(every thread). A step of the walk is a call into a daliaug function one of whose arguments
(``*args`` and ``**kwargs`` and a list, tuple or dict passed looked into one level) is a
:class:`daliaug.config.Config`: the loaded one, or any derived from it. A second count also
takes the steps where an argument holds the Config as an attribute (``self.config``,
``prepared.config``). The path: the steps' files in call order, a step into the file of the
step before left out. Files visited: the distinct files of the path. A climb back up: a move
along the path to a file on a higher floor than the one before it (the walk came down to
``config.py`` and goes back up to the next module that takes the config). A call up: a step
whose caller, the nearest daliaug frame below it on the stack (calls through a library such as
pydantic or tf.data followed through it), is on a lower floor than its callee; with the
import graph's arrows all pointing down this is rare, and zero on both trees measured.

TensorFlow, Keras and DALI are imported before the walk starts, so their own imports are not
profiled.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import itertools
import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGE = "daliaug"


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` under the package folder ``root``."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def named_imports(path: Path, name: str) -> Iterator[str]:
    """The daliaug names that the module ``name`` at ``path`` imports, anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = ".".join(package.split(".")[: package.count(".") + 2 - node.level])
                base = f"{up}.{base}" if base else up
            yield from (f"{base}.{a.name}" for a in node.names)


@functools.cache
def import_graph(root: Path) -> dict[str, set[str]]:
    """Every daliaug module under ``root`` and the daliaug modules it imports (read once per
    process: not to be changed)."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}

    def resolve(imported: str) -> str | None:
        while imported not in paths and "." in imported:
            imported = imported.rpartition(".")[0]
        return imported if imported in paths else None

    return {
        name: {m for m in map(resolve, named_imports(path, name)) if m and m != name}
        for name, path in paths.items()
    }


@dataclass
class Heights:
    """Each node's height in a graph, and the arrows set aside because they closed a circle."""

    height: dict[str, int]
    back_arrows: list[tuple[str, str]]


def heights(graph: dict[str, set[str]]) -> Heights:
    """Heights in ``graph`` (0: points at nothing), visiting nodes and arrows in sorted order."""
    height: dict[str, int] = {}
    back: list[tuple[str, str]] = []
    on_path: set[str] = set()

    def visit(node: str) -> int:
        on_path.add(node)
        below = -1
        for nxt in sorted(graph[node]):
            if nxt in on_path:
                back.append((node, nxt))
                continue
            below = max(below, height[nxt] if nxt in height else visit(nxt))
        on_path.discard(node)
        height[node] = below + 1
        return below + 1

    for node in sorted(graph):
        if node not in height:
            visit(node)
    return Heights(height, back)


def room_of(module: str, graph: dict[str, set[str]]) -> str:
    """A root-folder module's own room, or its first-level subpackage's."""
    parts = module.split(".")
    first = ".".join(parts[:2])
    return first if len(parts) > 2 or any(m.startswith(f"{first}.") for m in graph) else module


@dataclass
class House:
    """The package seen as rooms on floors: the counts the issue quotes, by this tool's rules."""

    modules: int
    module_arrows: int
    module_floors: int
    module_back_arrows: list[tuple[str, str]]
    rooms: int
    room_arrows: int
    room_floors: int
    room_back_arrows: list[tuple[str, str]]


def house(graph: dict[str, set[str]]) -> House:
    """Modules, rooms, their floors and arrows (see the module's docstring)."""
    modules = heights(graph)
    room = {m: room_of(m, graph) for m in graph}
    rooms: dict[str, set[str]] = {r: set() for r in room.values()}
    for m, imported in graph.items():
        rooms[room[m]] |= {room[i] for i in imported} - {room[m]}
    floors = heights(rooms)
    return House(
        modules=len(graph),
        module_arrows=sum(map(len, graph.values())),
        module_floors=max(modules.height.values()) + 1,
        module_back_arrows=modules.back_arrows,
        rooms=len(rooms),
        room_arrows=sum(map(len, rooms.values())),
        room_floors=max(floors.height.values()) + 1,
        room_back_arrows=floors.back_arrows,
    )


@dataclass
class Walk:
    """One walk of a config: its path through the files, and how often it climbs."""

    backend: str
    reach: str
    """``argument``: steps with the Config as an argument; ``attribute``: or as an attribute
    of an argument."""
    steps: int
    """Calls into daliaug that carried the config."""
    path: list[str]
    """Each step's file, a step into the file of the step before left out."""
    floor: dict[str, int]
    """The floor of every file on the path."""
    files: list[str]
    """The distinct files of the path, in the order first entered."""
    climbs: list[tuple[str, str]]
    """The moves of the path to a file on a higher floor than the one before it."""
    call_climbs: list[tuple[str, str]]
    """The distinct (caller file, callee file) pairs of steps whose callee is higher."""
    functions: dict[str, list[str]]
    """The functions of each file that the config entered, in the order first entered."""


class Tracer:
    """The profile function that records the steps of a walk (see the module's docstring)."""

    def __init__(self, root: Path, config_type: type) -> None:
        self.root = root
        self.files = {str(p) for p in root.rglob("*.py")}
        self.prefix = str(root)
        self.config_type = config_type
        self.steps: list[tuple[str | None, str, bool, str]] = []
        self.lock = threading.Lock()

    def caller(self, frame: FrameType | None) -> str | None:
        while frame is not None and frame.f_code.co_filename not in self.files:
            frame = frame.f_back
        return frame.f_code.co_filename if frame is not None else None

    def config_held(self, frame: FrameType) -> bool | None:
        """True where an argument is a Config, False where one holds a Config in an attribute
        (``self.config``, ``prepared.config``), None where the config is not in reach."""
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        local = frame.f_locals
        values: list[Any] = [local.get(n) for n in code.co_varnames[:count]]
        for value in list(values):  # one level into *args, **kwargs and containers passed
            if isinstance(value, tuple | list):
                values += value
            elif isinstance(value, dict):
                values += value.values()
        if any(isinstance(v, self.config_type) for v in values):
            return True
        for value in values:
            if isinstance(value, type):
                continue
            held = list(getattr(value, "__dict__", {}).values())
            if dataclasses.is_dataclass(value):
                held += [getattr(value, f.name, None) for f in dataclasses.fields(value)]
            if any(isinstance(h, self.config_type) for h in held):
                return False
        return None

    def __call__(self, frame: FrameType, event: str, _arg: object) -> None:
        callee = frame.f_code.co_filename
        if event != "call" or not callee.startswith(self.prefix) or callee not in self.files:
            return
        direct = self.config_held(frame)
        if direct is not None:
            caller = self.caller(frame.f_back)
            with self.lock:
                self.steps.append((caller, callee, direct, frame.f_code.co_qualname))

    def walk(self, backend: str, floor: dict[str, int], reach: str) -> Walk:
        """The steps recorded, as a :class:`Walk` on floors ``floor`` (module: floor): those
        with the config as an argument (``reach`` "argument"), or held too ("attribute")."""
        taken = [s for s in self.steps if s[2] or reach == "attribute"]
        steps = [(a, b) for a, b, _, _ in taken]
        file_floor = {f: floor[module_name(Path(f), self.root)] for f in self.files}
        name = {f: str(Path(f).relative_to(self.root.parent)) for f in self.files}
        path = [b for i, (_, b) in enumerate(steps) if i == 0 or steps[i - 1][1] != b]
        climbs = [(a, b) for a, b in itertools.pairwise(path) if file_floor[b] > file_floor[a]]
        calls = [(a, b) for a, b in steps if a and file_floor[b] > file_floor[a]]
        return Walk(
            backend=backend,
            reach=reach,
            steps=len(steps),
            path=[name[f] for f in path],
            floor={name[f]: file_floor[f] for f in path},
            files=[name[f] for f in dict.fromkeys(path)],
            climbs=[(name[a], name[b]) for a, b in climbs],
            call_climbs=[(name[a], name[b]) for a, b in dict.fromkeys(calls)],
            functions={
                name[f]: list(dict.fromkeys(q for _, b, _, q in taken if b == f))
                for f in dict.fromkeys(path)
            },
        )


def write_images(folder: Path, classes: int = 2, per_class: int = 4, size: int = 40) -> Path:
    """A class-folder dataset of small random PNGs under ``folder``."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in range(classes):
        (folder / f"class{c}").mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"class{c}" / f"{i}.png")
    return folder


def walk_config(backend: str, framework: str | None = None) -> list[Walk]:
    """Trace ``make_dataset`` of the demo's transforms with ``backend`` on a few PNGs: the
    dataset built and one batch taken (``framework``: make_dataset's, None for its default)."""
    import daliaug
    from daliaug.config import Config

    root = Path(daliaug.__file__).parent
    tracer = Tracer(root, Config)
    with tempfile.TemporaryDirectory() as tmp:
        data = write_images(Path(tmp) / "data")
        overrides = {
            "source": {"type": "directory", "path": str(data)},
            "backend": backend,
            "batch_size": 4,
            "image_size": 32,
        }
        config = daliaug.load_config("demo", overrides)
        kwargs = {} if framework is None else {"framework": framework}
        threading.setprofile(tracer)
        sys.setprofile(tracer)
        try:
            dataset = daliaug.make_dataset(config, **kwargs)
            next(iter(dataset))
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    floor = heights(import_graph(root)).height
    return [tracer.walk(backend, floor, reach) for reach in ("argument", "attribute")]


def import_engines(backends: list[str]) -> None:
    """Import the frameworks the walks will load, outside the profiled region."""
    import keras  # noqa: F401
    import tensorflow  # noqa: F401

    if "cpu" in backends or "gpu" in backends:
        import nvidia.dali
        import nvidia.dali.plugin.tf  # noqa: F401


def report(tree: Path, built: House, walks: list[Walk]) -> str:
    """The measurements as Markdown."""
    lines = [
        f"tree: `{tree}`",
        "",
        f"- modules {built.modules}, module arrows {built.module_arrows}, "
        f"module floors {built.module_floors}, circles set aside {built.module_back_arrows}",
        f"- rooms {built.rooms}, room arrows {built.room_arrows}, room floors "
        f"{built.room_floors}, back arrows {built.room_back_arrows}",
    ]
    for w in walks:
        lines += [
            "",
            f"backend `{w.backend}`, the config as an {w.reach}: {len(w.files)} files visited, "
            f"{len(w.climbs)} climbs back up along the path, {len(w.call_climbs)} calls up "
            f"({w.steps} steps)",
            "",
            "path (file, floor): " + " -> ".join(f"`{f}` {w.floor[f]}" for f in w.path),
            "",
            "climbs back up: " + (", ".join(f"`{a}` -> `{b}`" for a, b in w.climbs) or "none"),
            "",
            "functions entered: "
            + "; ".join(f"`{f}` {', '.join(q)}" for f, q in w.functions.items()),
            "",
            "calls up: " + (", ".join(f"`{a}` -> `{b}`" for a, b in w.call_climbs) or "none"),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", nargs="+", default=["tf", "cpu"])
    parser.add_argument("--json", action="store_true", help="print JSON, not Markdown")
    args = parser.parse_args(argv)
    import daliaug

    root = Path(daliaug.__file__).parent
    built = house(import_graph(root))
    import_engines(args.backend)
    walks = [w for b in args.backend for w in walk_config(b)]
    if args.json:
        found = {
            "tree": str(root.parent),
            "house": asdict(built),
            "walks": list(map(asdict, walks)),
        }
        print(json.dumps(found, indent=1))
    else:
        print(report(root.parent, built, walks))


if __name__ == "__main__":
    main()
