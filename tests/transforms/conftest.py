"""The per-transform tests run on every engine of the one list (:data:`daliaug.engines.NAMES`),
each on the CPU: ``backend`` is the config's placement that runs it (``cpu``: DALI's CPU
pipeline, ``tf``, ``opencv``), ``engine`` its name (for
:func:`daliaug.outputs.bridges.engine_batches`).
A test that compares particular engines names them itself."""

from __future__ import annotations

import pytest

from tests.helpers import BACKENDS, ENGINES


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each engine's placement on the CPU: ``cpu`` (DALI), ``tf``, ``opencv``."""
    return request.param


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Each engine by name: ``dali`` (on the CPU), ``tf``, ``opencv``."""
    return request.param
