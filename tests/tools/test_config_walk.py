"""bench.config_walk: the floors it reads from the import graph and the walk it traces."""

from __future__ import annotations

from pathlib import Path

import pytest

import daliaug
from bench.config_walk import heights, house, import_graph, walk_config


def test_heights_count_up_from_the_bottom_and_set_circles_aside() -> None:
    graph = {"a": {"b"}, "b": set(), "c": {"a", "b"}}
    assert heights(graph).height == {"a": 1, "b": 0, "c": 2}
    circle = heights({"a": {"b"}, "b": {"a"}})
    assert circle.back_arrows == [("b", "a")]


def test_the_package_has_rooms_on_floors_and_no_circle_of_modules() -> None:
    built = house(import_graph(Path(daliaug.__file__).parent))
    assert built.module_back_arrows == []  # as tests/test_architecture.py asserts
    assert 10 <= built.rooms < built.modules
    assert 2 <= built.room_floors <= built.rooms
    assert built.module_arrows > built.room_arrows > built.rooms


@pytest.mark.slow  # a dataset built and a batch taken under the profiler (end to end)
def test_the_walk_of_a_tiny_config_enters_the_front_door_first() -> None:
    """On the OpenCV engine's NumPy batches: neither TensorFlow nor DALI is imported."""
    argument, attribute = walk_config("opencv", framework="numpy")
    assert argument.files[:2] == ["daliaug/__init__.py", "daliaug/outputs/dataset.py"]
    assert "daliaug/config.py" in argument.files
    assert set(argument.files) <= set(attribute.files)
    assert 3 <= len(argument.files) <= argument.steps <= attribute.steps
    assert len(argument.climbs) < len(argument.path)
    assert all(argument.floor[b] > argument.floor[a] for a, b in argument.climbs)
