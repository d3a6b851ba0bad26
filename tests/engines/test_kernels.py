"""Each engine's kernels are the :class:`daliaug.kernels.Kernels` protocol: every kernel, with its
parameters by name and order; one the DALI engine lacks is declared so by the transforms that use
it (``dali_lacks`` on both devices). The TensorFlow and OpenCV engines bind the kernels written
once (:class:`daliaug.kernels.formulas.ArrayKernels`) and write their own only where they say
why."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

from daliaug.kernels import Kernels
from daliaug.kernels.formulas import ArrayKernels
from daliaug.transforms import TRANSFORMS

KERNELS = {
    name: [p for p in inspect.signature(f).parameters if p != "self"]
    for name, f in inspect.getmembers(Kernels, inspect.isfunction)
    if not name.startswith("_")
}


def test_the_protocol_names_every_kernel_the_stages_call() -> None:
    assert {"perspective", "mix", "choose", "each_sample", "clahe"} <= set(KERNELS)


def _kernels(engine: str) -> Any:
    """The engine's kernels: its ``pixels.KERNELS``, or DALI's ``pixels`` module itself."""
    module = importlib.import_module(f"daliaug.engines.{engine}.pixels")
    return getattr(module, "KERNELS", module)


@pytest.mark.parametrize("engine", ["tf", "dali", "opencv"])
def test_an_engine_supplies_every_kernel(engine: str) -> None:
    kernels = _kernels(engine)
    lacking = []
    for name, parameters in KERNELS.items():
        kernel = getattr(kernels, name, None)
        if kernel is None:
            lacking.append(name)
            continue
        assert list(inspect.signature(kernel).parameters) == parameters, name
    if engine != "dali":
        assert not lacking
    for name in lacking:  # only kernels of transforms DALI cannot run anywhere
        users = [t for t in TRANSFORMS.values() if t.tag() == name]
        assert users and all({"cpu", "gpu"} <= set(t.dali_lacks) for t in users), name


@pytest.mark.parametrize("engine", ["tf", "opencv"])
def test_an_engine_writes_its_own_kernel_only_where_it_says_why(engine: str) -> None:
    """A kernel an engine writes again in its own library says so in its docstring (OpenCV's
    filters, histogram and colour conversion; TensorFlow's image ops and control flow), and
    none of the kernels written once is written again."""
    kernels = _kernels(engine)
    own = {
        name
        for name in KERNELS
        if getattr(type(kernels), name) is not getattr(ArrayKernels, name, None)
    }
    assert own == set(KERNELS) - set(vars(ArrayKernels)), engine
    for name in own:
        assert getattr(kernels, name).__doc__, name
