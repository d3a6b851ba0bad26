"""The README's commands are the ones CI runs, and its examples name real things."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()


def commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", README)


def test_readme_has_exactly_two_setup_commands() -> None:
    demo, tests = commands()[:2]
    assert demo.endswith("daliaug demo") and "pytest" in tests
    assert demo.rsplit("&&", 1)[0] == tests.rsplit("&&", 1)[0]  # the same set-up


def test_ci_runs_the_readme_test_command_exactly() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands()[1] in ci


def test_readme_lists_every_transform_and_shipped_pipeline() -> None:
    from daliaug.transforms import TRANSFORMS

    for name in TRANSFORMS:
        assert f"`{name}`" in README, name
    for path in (ROOT / "pipelines").glob("*.yaml"):
        assert f"`{path.name}`" in README, path.name
