"""The README's commands are the ones CI runs, its examples name real things, and every Python
block in it runs as written.

Each Python block runs in a process of its own (a block may pick Keras' backend), in a folder
where the paths the README uses hold small data (an empty one for a block that picks Keras'
backend: it makes its own): ``data/train`` and ``data/val`` are class folders of a few
procedural images, and ``keras.datasets.cifar10.load_data`` returns 40 random
32x32 images instead of downloading CIFAR-10 (that swap is the prelude below), and a block that
imports torchvision gets the two op declarations PyPI's torchvision needs against the CPU torch
(:func:`tests.test_detection.torchvision_functional`): the only things added to a block. A
block preceded by ``<!-- not run: ... -->`` needs a GPU or several hosts; it is still compiled,
so it cannot hold a syntax error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"(?:<!-- not run: (?P<why>[^>]*?) -->\n)?```python\n(?P<code>.*?)\n```", re.S)
TINY_CIFAR = """\
import keras as _keras
import numpy as _np


def _tiny_cifar10():
    rng = _np.random.default_rng(0)
    x = rng.integers(0, 256, (40, 32, 32, 3), dtype=_np.uint8)
    y = rng.integers(0, 10, (40, 1), dtype=_np.uint8)
    return (x, y), (x[:8], y[:8])


_keras.datasets.cifar10.load_data = _tiny_cifar10
"""

TORCHVISION = "from tests.test_detection import torchvision_functional\ntorchvision_functional()\n"


def commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", README)


def python_blocks() -> list[tuple[int, str, str | None]]:
    """Each Python block: its line in the README, its code, and why it is not run (or None)."""
    return [
        (README[: m.start("code")].count("\n") + 1, m["code"], m["why"])
        for m in BLOCK.finditer(README)
    ]


BLOCKS = python_blocks()
RUN = [(line, code) for line, code, why in BLOCKS if why is None]


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


def test_blocks_not_run_need_a_gpu_or_several_hosts() -> None:
    assert RUN, "no runnable Python block found"
    for line, code, why in BLOCKS:
        compile(code, f"README.md:{line}", "exec")
        if why is not None:
            assert "GPU" in why or "hosts" in why, f"README.md:{line}: {why}"


@pytest.fixture(scope="module")
def readme_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding what the README's paths name, small."""
    from daliaug.tools.demo_data import write_classification_dataset

    folder = tmp_path_factory.mktemp("readme")
    write_classification_dataset(folder / "data" / "train", per_class=4, size=(48, 64), seed=0)
    write_classification_dataset(folder / "data" / "val", per_class=2, size=(48, 64), seed=1)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(("line", "code"), RUN, ids=[f"line{line}" for line, _ in RUN])
def test_python_block_runs(line: int, code: str, readme_folder: Path, tmp_path: Path) -> None:
    """A block that picks Keras' backend (the JAX/PyTorch one, KerasHub's) makes its own data:
    it runs in an empty folder."""
    own_data = "KERAS_BACKEND" in code
    prelude = "" if own_data else TINY_CIFAR
    if "torchvision" in code:
        prelude += TORCHVISION
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env.update(
        PYTHONPATH=f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}",
        TF_CPP_MIN_LOG_LEVEL="2",
        DALIAUG_CACHE=str(readme_folder / "cache"),
    )
    run = subprocess.run(
        [sys.executable, "-c", prelude + code],
        cwd=tmp_path if own_data else readme_folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert run.returncode == 0, f"README.md:{line} failed:\n{run.stderr[-3000:]}"
