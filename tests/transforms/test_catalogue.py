"""Every registered transform has its own test file, so a new transform cannot land without
its tests."""

from __future__ import annotations

from pathlib import Path

from daliaug.transforms import TRANSFORMS


def test_every_transform_has_its_own_test_file() -> None:
    here = Path(__file__).parent
    missing = [name for name in TRANSFORMS if not (here / f"test_{name}.py").is_file()]
    assert TRANSFORMS and not missing, f"no tests/transforms/test_<type>.py for {missing}"
