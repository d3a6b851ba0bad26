"""ARCHITECTURE.md's promise, kept by doing it: a newcomer adds a per-sample pixel stage and a
batch stage, each as one module in ``daliaug/transforms/`` and nothing else, and every engine
(the one list, ``engines.NAMES``), the parity harness and ``daliaug preview`` run them.

The two modules are written into a copy of the package (the real one stays as it is); the
checks run in a process that imports the copy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from daliaug.engines import NAMES
from tests.helpers import structured_image, write_image_dir

PACKAGE = Path(__file__).parents[1] / "daliaug"

PIXEL_STAGE = '''
"""Every value of a random share of the samples inverted (a newcomer's pixel stage)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from daliaug.algebra import Random
from daliaug.transforms.base import Params, PixelTransform, Probability


class PixelInvert(PixelTransform):
    type: Literal["pixel_invert"] = "pixel_invert"
    probability: Probability = 0.5
    params: ClassVar[tuple[str, ...]] = ("on",)

    def draw(self, rng: Random) -> Params:
        return {"on": rng.bernoulli(self.probability)}

    def pixels(self, images: Any, p: Params, ops: Any) -> Any:
        return ops.select(p["on"], lambda x: 255.0 - x, images)
'''

BATCH_STAGE = '''
"""Each real sample of a batch swapped with the one half a batch away (a newcomer's batch
stage, with a pairing of its own)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np

from daliaug.algebra import Math, mul
from daliaug.transforms.base import BatchTransform, Params


class SwapHalves(BatchTransform):
    type: Literal["swap_halves"] = "swap_halves"
    stage_params: ClassVar[tuple[str, ...] | None] = ("partner", "kept")

    def partners(self, draws: np.ndarray, valid: np.ndarray) -> np.ndarray:
        out = np.arange(len(draws), dtype=np.float32)
        real = np.flatnonzero(valid)
        out[real] = np.roll(real, len(real) // 2)
        return out

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        return {"partner": p["partner"], "kept": mul(p["partner"], 0.0)}

    def images(self, images: Any, p: Params, ops: Any) -> Any:
        return ops.mix(images, p["partner"], p["kept"])

    def targets(self, targets: Any, p: Params, ops: Any, masks: bool) -> Any:
        return ops.mix(targets, p["partner"], p["kept"])
'''

CHECKS = """
import json, sys
import numpy as np
import daliaug
from daliaug.engines import NAMES
from daliaug.outputs.bridges import engine_batches as batches
from daliaug.sources.arrays import array_samples

assert daliaug.__file__.startswith(sys.argv[1]), daliaug.__file__
values = np.array([10, 40, 70, 100, 130, 160, 190, 220], np.uint8)
x = np.broadcast_to(values[:, None, None, None], (8, 6, 6, 3)).copy()
labels = np.arange(8)
config = daliaug.load_config({
    "source": {"type": "arrays"}, "image_size": 6, "batch_size": 8, "shuffle": False,
    "label_mode": "categorical", "seed": 3,
    "transforms": [{"type": "pixel_invert", "probability": 0.5}, {"type": "swap_halves"}],
})
out = {}
for engine in NAMES:
    images, targets = next(batches(engine, config, array_samples(x, labels), "cpu"))
    out[engine] = {"images": images[:, 0, 0, 0].tolist(), "targets": targets.tolist(),
                   "constant": float(np.ptp(images, axis=(1, 2, 3)).max())}
print(json.dumps(out))
"""


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root)},
        timeout=300,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package with the two new modules, and nothing else changed."""
    root = tmp_path_factory.mktemp("newcomer")
    shutil.copytree(PACKAGE, root / "daliaug", ignore=shutil.ignore_patterns("__pycache__"))
    transforms = root / "daliaug" / "transforms"
    (transforms / "pixel_invert.py").write_text(PIXEL_STAGE)
    (transforms / "swap_halves.py").write_text(BATCH_STAGE)
    return root


@pytest.mark.slow
def test_every_engine_runs_the_new_stages(copy: Path) -> None:
    result = run(copy, "-c", CHECKS, str(copy))
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    values = [10, 40, 70, 100, 130, 160, 190, 220]
    partner = [4, 5, 6, 7, 0, 1, 2, 3]
    inverted = []
    assert list(out) == list(NAMES)
    for engine in NAMES:
        got = out[engine]
        assert got["constant"] < 1e-3
        for i, value in enumerate(got["images"]):
            source = values[partner[i]]  # swapped, then inverted or not, as drawn
            assert abs(value - source) < 1e-3 or abs(value - (255 - source)) < 1e-3
            inverted.append(abs(value - source) > 1e-3)
            assert got["targets"][i] == [float(k == partner[i]) for k in range(8)]
    assert all(got == out["dali"] for got in out.values())
    assert 0 < sum(inverted) < len(inverted)  # the probability took effect both ways


@pytest.mark.slow
def test_parity_and_preview_see_the_new_stages(copy: Path) -> None:
    images = [structured_image(40, 48, seed=i) for i in range(8)]
    data = write_image_dir(copy / "data", {"a": images[:4], "b": images[4:]})
    config = copy / "new.json"
    config.write_text(
        json.dumps(
            {
                "source": {"type": "directory", "path": str(data)},
                "image_size": 32,
                "batch_size": 4,
                "label_mode": "categorical",
                "transforms": [
                    {"type": "pixel_invert", "probability": 0.5},
                    {"type": "swap_halves"},
                ],
            }
        )
    )
    report = copy / "parity.json"
    parity = run(copy, "-m", "daliaug.cli", "parity", str(config), "--json", str(report))
    assert parity.returncode == 0, parity.stdout[-2000:] + parity.stderr[-2000:]
    checked = {r["name"] for r in json.loads(report.read_text())["results"]}
    assert any("pixel_invert" in n for n in checked) and any("swap_halves" in n for n in checked)
    png = copy / "preview.png"
    preview = run(copy, "-m", "daliaug.cli", "preview", str(config), "--out", str(png))
    assert preview.returncode == 0, preview.stderr[-2000:]
    assert png.stat().st_size > 1000
