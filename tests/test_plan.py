"""The plan's safety nets: geometric transforms declare whether they are axis-aligned, drawn
parameters match the declared ones (an exception, not an assert that ``python -O`` strips),
and what is built from a config is built once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar, Literal

import pytest

from daliaug.algebra import Affine, Canvas, ColourMatrix, Math, Random
from daliaug.config import load_config
from daliaug.epoch import NumpyRandom
from daliaug.plan import Plan
from daliaug.transforms import ColourTransform, GeometricTransform, Transform
from daliaug.transforms.base import Params


def test_a_geometric_transform_must_declare_axis_aligned() -> None:
    with pytest.raises(TypeError, match="must declare axis_aligned"):

        class Twist(GeometricTransform):
            type: Literal["test_twist"] = "test_twist"

            def warp(self, p: Params, canvas: Canvas, m: Math) -> tuple[Affine, Canvas]:
                return Affine(b=0.5), canvas

    assert "test_twist" not in Transform.registry  # nothing half-registered


def test_drawn_parameters_must_match_the_declared_ones() -> None:
    import numpy as np

    class Sloppy(ColourTransform):
        type: Literal["test_sloppy"] = "test_sloppy"
        params: ClassVar[tuple[str, ...]] = ("gain",)

        def draw(self, rng: Random) -> Params:
            return {"gian": rng.uniform(0.5, 1.5)}

        def colour(self, p: Params, channels: int, m: Math) -> ColourMatrix:
            return ColourMatrix.diagonal(p["gain"], channels)

    try:
        plan = Plan.of([Sloppy()], (8, 8))
        with pytest.raises(TypeError, match=r"'test_sloppy' drew \['gian'\]"):
            plan.draw(NumpyRandom(np.random.default_rng(0), 4))
    finally:
        del Transform.registry["test_sloppy"]


def test_the_check_survives_python_optimisations() -> None:
    code = (
        "import numpy as np; from daliaug.plan import Plan; from daliaug.epoch import NumpyRandom;"
        "from daliaug.transforms.brightness import Brightness;"
        "Brightness.draw = lambda self, rng: {};"
        "Plan.of([Brightness(factor=0.3)], (8, 8)).draw(NumpyRandom(np.random.default_rng(0), 2))"
    )
    result = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=600
    )
    assert result.returncode != 0 and "TypeError" in result.stderr


def test_a_config_builds_its_plan_once() -> None:
    data = {
        "source": {"type": "directory", "path": "."},
        "image_size": 32,
        "transforms": [{"type": "rotation", "angle": 10}],
    }
    config = load_config(data)
    assert config.plan is config.plan
    assert load_config(data).plan is config.plan  # equal configs share it
    other = config.model_copy(update={"transforms": []})
    assert other.plan is not config.plan and other.plan.transforms == ()


def test_the_class_table_is_read_once_while_unchanged(tmp_path: Path, monkeypatch) -> None:
    import os

    from daliaug.sources import segmentation

    table = tmp_path / "classes.csv"
    table.write_text("name,r,g,b\nsky,0,0,255\nroad,128,128,128\n")
    (tmp_path / "i").mkdir()
    source = segmentation.SegmentationSource(
        images=tmp_path / "i", masks=tmp_path / "i", classes=table
    )
    reads = []
    original = segmentation.ClassTable.read
    monkeypatch.setattr(
        segmentation.ClassTable, "read", staticmethod(lambda p: reads.append(p) or original(p))
    )
    segmentation._read_class_table.cache_clear()
    assert source.mask_fill == 0 and source.mask_classes() == ["sky", "road"]
    assert len(reads) == 1
    table.write_text("name,r,g,b\nsky,0,0,0\n")
    os.utime(table, ns=(10**18, 10**18))
    assert source.mask_fill == 1 and len(reads) == 2  # a changed file is read again
