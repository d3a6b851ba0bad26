"""The fit overhead on Keras' JAX backend: ``model.fit`` of ResNet-50 (mixed precision) fed by
``make_dataset(framework="jax")`` against the same model fed one constant batch already on the
device, so with no input work at all. Run with ``KERAS_BACKEND=jax``.

The constant batch is the first batch of the same dataset, handed to ``fit`` through a Keras
data adapter as ``make_dataset``'s batches are (no copy, no conversion). Every fit runs the one
compiled model and times ``steps`` training steps after ``warmup`` untimed ones, from the end
times of the steps (:func:`daliaug.tools.doctor.step_recorder`), read by two recorders:
``async`` (``async_safe``: Keras 3 keeps its asynchronous callback dispatch, so the training
loop never waits for a step; each step's end is read on Keras' callback thread once its logs
are ready) and ``sync`` (no ``async_safe``: Keras then waits for every step's logs in the
loop, as the first GPU run's recorder did). The recorders alternate across ``repeats``
(``async`` first in even repeats, ``sync`` first in odd ones), each with both feeds. The
overhead is ``1 - fit / constant`` of the medians, per recorder; ``images_per_s`` and
``overhead`` are the ``async`` recorder's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

from bench.tools.gpu_tools import resnet50
from bench.workloads import WORKLOADS, Data


def constant_batches(batch: tuple[Any, Any], steps: int) -> Any:
    """A Keras data adapter yielding ``batch`` ``steps`` times (JAX arrays, left where they are)."""
    from keras.src.trainers.data_adapters.data_adapter import DataAdapter

    class Constant(DataAdapter):
        def get_jax_iterator(self) -> Iterator[tuple[Any, Any]]:
            return (batch for _ in range(steps))

        num_batches = steps
        batch_size = int(batch[0].shape[0])
        has_partial_batch = False
        partial_batch_size = None

    return Constant()


RECORDERS = ("async", "sync")
"""The step recorders: ``async_safe`` (Keras' asynchronous dispatch kept), then without it."""


def fit_overhead(
    data: Data,
    device: str,
    batch_size: int = 256,
    steps: int = 100,
    warmup: int = 5,
    repeats: int = 2,
    image_size: int | None = None,
) -> dict[str, Any]:
    """Images/s of both fits on workload (b)'s data (``image_size`` overrides 224, for a dry
    run) with each recorder, ``repeats`` times interleaved, and the overheads."""
    import keras

    import daliaug
    from daliaug.tools.doctor import step_rate, step_recorder

    if keras.backend.backend() != "jax":
        raise RuntimeError("run with KERAS_BACKEND=jax")
    sizes = {} if image_size is None else {"image_size": image_size}
    config = WORKLOADS["b"].daliaug_config(
        data, backend=device, batch_size=batch_size, drop_remainder=True, **sizes
    )
    samples = data.samples()
    dataset = daliaug.make_dataset(config, framework="jax", samples=samples)
    model = resnet50(config, samples.num_classes)
    total = warmup + steps
    first = next(iter(dataset))
    runs: dict[str, dict[str, list[float]]] = {
        r: {"constant": [], "make_dataset": []} for r in RECORDERS
    }
    for repeat in range(repeats):
        for recorder_name in RECORDERS[:: 1 if repeat % 2 == 0 else -1]:
            feeds = (("constant", constant_batches(first, total)), ("make_dataset", dataset))
            for name, feed in feeds:
                recorder = step_recorder(async_safe=recorder_name == "async")
                model.fit(feed, epochs=1, steps_per_epoch=total, verbose=0, callbacks=[recorder])
                rate = step_rate(recorder.times, warmup, steps, batch_size)
                runs[recorder_name][name].append(rate)
    medians = {r: {n: statistics.median(v) for n, v in feeds.items()} for r, feeds in runs.items()}
    overheads = {r: 1 - m["make_dataset"] / m["constant"] for r, m in medians.items()}
    return {
        "model": "ResNet-50, mixed_float16, SGD",
        "batch_size": batch_size,
        "image_size": config.image_size,
        "steps": steps,
        "warmup": warmup,
        "repeats": repeats,
        "recorders": {
            r: {"runs": runs[r], "images_per_s": medians[r], "overhead": overheads[r]}
            for r in RECORDERS
        },
        "images_per_s": medians["async"],
        "overhead": overheads["async"],
    }
