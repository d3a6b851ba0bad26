"""Per-sample branches in DALI graphs (``daliaug.engines.dali.branches``): in a conditional
pipeline an operation sees only the samples that chose it, and every pipeline (conditional or
not) gives the chosen samples its result and the others their input unchanged; an error raised
while the graph is defined leaves as it was raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from nvidia.dali import fn, pipeline_def

from daliaug.engines.dali.branches import conditional_pipeline, where
from daliaug.errors import ConfigError

IMAGES = np.random.default_rng(0).uniform(0, 255, (6, 5, 7, 3)).astype(np.float32)
PATTERNS = {
    "some": [True, False, False, True, True, False],
    "none": [False] * 6,
    "all": [True] * 6,
}


def _graph(flags: list[bool], op: Callable[[Any], Any]) -> Callable[[], tuple]:
    def graph() -> tuple:
        images = fn.external_source(source=lambda: list(IMAGES), batch=True, layout="HWC")
        chosen = fn.external_source(source=lambda: [np.array(f) for f in flags], batch=True)
        return (where(chosen, op, images),)

    return graph


def _outputs(pipe: Any) -> np.ndarray:
    pipe.build()
    (out,) = pipe.run()
    return np.stack([np.asarray(t) for t in out])


def _expected(flags: list[bool]) -> np.ndarray:
    return np.where(np.array(flags)[:, None, None, None], 255.0 - IMAGES, IMAGES)


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_the_operation_sees_only_the_samples_that_chose_it(pattern: str) -> None:
    flags = PATTERNS[pattern]
    seen: list[int] = []

    def record(batch: list[np.ndarray]) -> list[np.ndarray]:
        seen.append(len(batch))
        return batch

    def invert(images: Any) -> Any:
        return 255.0 - fn.python_function(
            images, function=record, batch_processing=True, output_layouts="HWC"
        )

    pipe = conditional_pipeline(
        _graph(flags, invert),
        batch_size=len(IMAGES),
        num_threads=1,
        device_id=None,
        exec_async=False,
        exec_pipelined=False,
    )
    assert np.array_equal(_outputs(pipe), _expected(flags))
    assert sum(seen) == sum(flags)  # no sample that did not choose it reached it


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_outside_a_conditional_pipeline_the_values_are_the_same(pattern: str) -> None:
    flags = PATTERNS[pattern]
    graph = pipeline_def(_graph(flags, lambda images: 255.0 - images))
    pipe = graph(batch_size=len(IMAGES), num_threads=1, device_id=None)
    assert np.array_equal(_outputs(pipe), _expected(flags))


def test_a_number_chooses_for_every_sample() -> None:
    def graph() -> tuple:
        images = fn.external_source(source=lambda: list(IMAGES), batch=True, layout="HWC")
        return (where(True, lambda x: 255.0 - x, where(False, lambda x: x * 0.0, images)),)

    pipe = conditional_pipeline(graph, batch_size=len(IMAGES), num_threads=1, device_id=None)
    assert np.array_equal(_outputs(pipe), 255.0 - IMAGES)


def test_an_error_raised_while_the_graph_is_defined_leaves_unchanged() -> None:
    def graph() -> tuple:
        raise ConfigError("transforms[2].magnitude: too large")

    with pytest.raises(ConfigError) as raised:
        conditional_pipeline(graph, batch_size=1, num_threads=1, device_id=None)
    assert str(raised.value) == "transforms[2].magnitude: too large"
