"""`import daliaug` and the DALI layer never import TensorFlow (the GPU host has none)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.parametrize(
    "module",
    [
        "daliaug",
        "daliaug.outputs.dataset",
        "daliaug.outputs.tfdata.dataset",
        "daliaug.engines",
        "daliaug.engines.dali",
        "daliaug.engines.dali.pipeline",
        "daliaug.outputs.dali_loader",
        "daliaug.engines.feed",
        "daliaug.outputs",
        "daliaug.outputs.batches",
        "daliaug.outputs.shards",
        "daliaug.cli",
        "daliaug.cli.parity",
        "daliaug.tools.preview",
        "daliaug.tools.demo_data",
        "daliaug.tools.demo_sources",
        "daliaug.parity",
        "daliaug.torchvision.compile",
    ],
)
def test_module_does_not_import_tensorflow(module: str) -> None:
    code = f"import sys, {module}; print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.split() == ["False", "False"]


def test_parity_package_imports_neither_tensorflow_nor_dali() -> None:
    """The reference check runs where TensorFlow is missing; DALI loads only when it runs."""
    code = (
        "import sys, daliaug.parity; "
        "print('tensorflow' in sys.modules, 'nvidia.dali' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.split() == ["False", "False"]


def test_import_daliaug_loads_neither_framework_and_its_loader_dali_alone() -> None:
    """``import daliaug`` loads neither TensorFlow nor DALI; ``daliaug.DaliLoader`` (the public
    name of the NumPy loader) loads DALI on first use, still without TensorFlow."""
    code = (
        "import sys, daliaug; seen = lambda: ('tensorflow' in sys.modules, 'nvidia.dali' in "
        "sys.modules); before = seen(); daliaug.DaliLoader; print(*before, *seen())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.split() == ["False", "False", "False", "True"]


def test_from_torchvision_imports_neither_torch_nor_torchvision() -> None:
    """It reads the transforms' attributes: compiling a pipeline needs neither imported by
    daliaug (the user's own import of torchvision brings them)."""
    code = (
        "import sys, daliaug; daliaug.from_torchvision; "
        "print('torch' in sys.modules, 'torchvision' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.split() == ["False", "False"]
