"""The GPU suite's own tools: ``make_dataset`` on the GPU feeding a ResNet-50 training step in
mixed precision, and DALI decoding alone with the pipeline's own decode windows.

``dali-gpu-fit``: ``make_dataset`` (``backend: gpu``, DALI through its TensorFlow plugin) and
one ``train_on_batch`` of Keras' ResNet-50 (random weights, ``mixed_float16``) per batch: what a
user's training step takes from the pipeline; ``train_on_batch`` returns the loss, so each step
waits for the GPU as ``model.fit``'s per-step logs do.
``decode-gpu-roi``: each batch's files read and decoded with the decoder ``make_dataset``
builds (:func:`daliaug.engines.dali.image.decode`: its settings and, for a leading random
resized crop, only the crop window), the windows those samples get in that epoch, and nothing
after the decoder: the true ceiling of the full pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.tools import Epoch, Unavailable
from bench.tools.daliaug_tools import _config, _gpu_check
from bench.workloads import Data, Workload


def _tf_gpu() -> None:
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        raise Unavailable("TensorFlow sees no GPU (CPU-only TensorFlow build)")


def resnet50(config: Any, num_classes: int) -> Any:
    """Keras' ResNet-50 for the config's images, random weights, in mixed precision, compiled
    with XLA."""
    import keras

    keras.mixed_precision.set_global_policy("mixed_float16")
    h, w = config.image_size
    model = keras.applications.ResNet50(
        weights=None, input_shape=(h, w, config.channels), classes=num_classes
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        jit_compile=True,
    )
    return model


def training_epoch(dataset: Any, model: Any) -> Epoch:
    """Epochs of ``dataset``, one training step of ``model`` per batch."""

    def epoch() -> Iterator[int]:
        for images, labels in dataset:
            model.train_on_batch(images, labels)
            yield int(images.shape[0])

    return epoch


def dali_fit(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` on the GPU feeding ResNet-50's training step."""
    _gpu_check(device)
    _tf_gpu()
    from daliaug.outputs.dataset import make_dataset

    config = _config(workload, data, threads, backend="gpu")
    samples = data.samples()
    return training_epoch(make_dataset(config, samples=samples), resnet50(config, 1000))


def decode_roi(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """The pipeline's decoder alone, with each sample's decode window of the epoch."""
    _gpu_check(device)
    from nvidia.dali import fn, pipeline_def

    from daliaug.engines.dali.image import decode
    from daliaug.engines.dali.pipeline import RESIZES
    from daliaug.engines.feed import EpochFeed
    from daliaug.epoch import Epochs

    config = _config(workload, data, threads)
    samples = data.samples()
    epochs = Epochs.of(config, len(samples))
    feed = EpochFeed(config, samples, resizes=RESIZES, epochs=epochs)
    names = ("path", "warp")
    batches: Iterator[dict] = iter(())
    state = {"epoch": 0}

    def next_batch() -> tuple[Any, ...]:
        nonlocal batches
        batch = next(batches, None)
        if batch is None:  # the next epoch's windows
            batches = feed.batches(state["epoch"], names)
            state["epoch"] += 1
            batch = next(batches)
        return batch["path"], batch["warp"]

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.dali_threads(device),
        device_id=config.device_id if device == "gpu" else None,
        prefetch_queue_depth=config.prefetch_depth(device),
        seed=0,
    )
    def graph() -> Any:
        paths, flat = fn.external_source(source=next_batch, num_outputs=2, batch=True)
        warp = feed.layout.unpack(flat, lambda node, shape: fn.reshape(node, shape=shape))
        encoded = fn.io.file.read(paths)
        return decode(encoded, warp, config, device, samples.size_hint)

    pipe = graph()
    pipe.build()
    steps = len(epochs) - (1 if len(samples) % config.batch_size else 0)

    def epoch() -> Iterator[int]:
        for _ in range(steps):
            (images,) = pipe.run()
            yield len(images)

    return epoch
