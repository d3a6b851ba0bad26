"""The fit overhead on Keras' JAX backend: ``model.fit`` of ResNet-50 (mixed precision) fed by
``make_dataset(framework="jax")`` against the same model fed one constant batch already on the
device, so with no input work at all. Run with ``KERAS_BACKEND=jax``.

The constant batch is the first batch of the same dataset, handed to ``fit`` through a Keras
data adapter as ``make_dataset``'s batches are (no copy, no conversion). Both fits run the one
compiled model; each times ``steps`` training steps after ``warmup`` untimed ones, from the
end times of the steps (:func:`daliaug.tools.doctor.step_recorder`). The overhead is
``1 - fit / constant``.
"""

from __future__ import annotations

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


def fit_overhead(
    data: Data,
    device: str,
    batch_size: int = 256,
    steps: int = 30,
    warmup: int = 5,
    image_size: int | None = None,
) -> dict[str, Any]:
    """Images/s of both fits on workload (b)'s data (``image_size`` overrides 224, for a dry
    run), and the overhead."""
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
    rates = {}
    first = next(iter(dataset))
    for name, feed in (("constant", constant_batches(first, total)), ("make_dataset", dataset)):
        recorder = step_recorder()
        model.fit(feed, epochs=1, steps_per_epoch=total, verbose=0, callbacks=[recorder])
        rates[name] = step_rate(recorder.times, warmup, steps, batch_size)
    return {
        "model": "ResNet-50, mixed_float16, SGD",
        "batch_size": batch_size,
        "image_size": config.image_size,
        "steps": steps,
        "warmup": warmup,
        "images_per_s": rates,
        "overhead": 1 - rates["make_dataset"] / rates["constant"],
    }
