"""Each engine's pixel module is the :class:`daliaug.kernels.Kernels` protocol: every kernel,
with its parameters by name and order; one the DALI engine lacks is declared so by the
transforms that use it (``dali_lacks`` on both devices)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from daliaug.kernels import Kernels
from daliaug.transforms import TRANSFORMS

KERNELS = {
    name: [p for p in inspect.signature(f).parameters if p != "self"]
    for name, f in inspect.getmembers(Kernels, inspect.isfunction)
    if not name.startswith("_")
}


def test_the_protocol_names_every_kernel_the_stages_call() -> None:
    assert {"perspective", "mix", "choose", "each_sample", "clahe"} <= set(KERNELS)


@pytest.mark.parametrize("engine", ["tf", "dali", "opencv"])
def test_an_engine_supplies_every_kernel(engine: str) -> None:
    module = importlib.import_module(f"daliaug.engines.{engine}.pixels")
    lacking = []
    for name, parameters in KERNELS.items():
        kernel = getattr(module, name, None)
        if kernel is None:
            lacking.append(name)
            continue
        assert list(inspect.signature(kernel).parameters) == parameters, name
    if engine != "dali":
        assert not lacking
    for name in lacking:  # only kernels of transforms DALI cannot run anywhere
        users = [t for t in TRANSFORMS.values() if t.tag() == name]
        assert users and all({"cpu", "gpu"} <= set(t.dali_lacks) for t in users), name
