"""The GPU suite's own tools: ``make_dataset`` on the GPU feeding a ResNet-50 training step in
mixed precision, DALI decoding alone with the pipeline's own decode windows, the JAX output,
and DALI's own hand-written rn50-style pipeline.

``dali-gpu-fit``: ``make_dataset`` (``backend: gpu``, DALI through its TensorFlow plugin) and
one ``train_on_batch`` of Keras' ResNet-50 (random weights, ``mixed_float16``) per batch: what a
user's training step takes from the pipeline; ``train_on_batch`` returns the loss, so each step
waits for the GPU as ``model.fit``'s per-step logs do.
``decode-gpu-roi``: each batch's files read and decoded with the decoder ``make_dataset``
builds (:func:`daliaug.engines.dali.image.decode`: its settings and, for a leading random
resized crop, only the crop window), the windows those samples get in that epoch, and nothing
after the decoder: the true ceiling of the full pipeline.
``jax``: ``make_dataset(config, framework="jax")`` (Keras on JAX; on the GPU DALI's own JAX
iterator), each batch's images waited for (``block_until_ready``).
``dali-rn50``: DALI's ResNet-50 training pipeline as DALI's own examples write it
(``readers.file``, ``decoders.image_random_crop`` on ``mixed``, ``resize``, then
``crop_mirror_normalize`` with a random mirror), with (b)'s colour jitter as one
``color_twist``: the same work as (b), by hand.
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

    from daliaug.engine_names import Choice
    from daliaug.engines.dali.image import decode
    from daliaug.engines.dali.pipeline import RESIZES
    from daliaug.engines.feed import EpochFeed
    from daliaug.run import Run

    config = _config(workload, data, threads)
    samples = data.samples()
    run = Run.of(config, samples, Choice("dali", device))
    epochs = run.epochs()
    feed = EpochFeed(run.spec, samples, resizes=RESIZES, epochs=epochs)
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
        return decode(encoded, warp, run.spec, samples.size_hint)

    pipe = graph()
    pipe.build()
    steps = len(epochs) - (1 if len(samples) % config.batch_size else 0)

    def epoch() -> Iterator[int]:
        for _ in range(steps):
            (images,) = pipe.run()
            yield len(images)

    return epoch


EXAMPLE_PADDING = {"device_memory_padding": 211025920, "host_memory_padding": 140544512}
"""nvJPEG's buffers as DALI's ResNet-50 examples allocate them up front on the GPU
(docs/examples/use_cases/pytorch/resnet50/main.py)."""


def random_crop_front(
    paths: list[str], labels: Any, eq: Any, gpu: bool, hw_decoder_load: float
) -> tuple[Any, Any]:
    """Inside a DALI pipeline: the files read in a random order, a random resized crop decoded
    and resized to the workload's size as DALI's ResNet-50 examples write it (``mixed`` with
    ``hw_decoder_load`` and the examples' memory paddings on the GPU, 100 attempts, a
    triangular resize); ``(images, labels)``."""
    from nvidia.dali import fn

    encoded, label = fn.readers.file(
        files=paths, labels=[int(v) for v in labels], random_shuffle=True, name="files"
    )
    return random_crop(encoded, eq, gpu, hw_decoder_load), label


def example_decoder(gpu: bool, hw_decoder_load: float) -> dict[str, Any]:
    """The decoder's arguments in DALI's ResNet-50 examples: ``mixed`` with ``hw_decoder_load``
    and the examples' memory paddings on the GPU, RGB."""
    from nvidia.dali import types

    on_gpu = {"device": "mixed", "hw_decoder_load": hw_decoder_load, **EXAMPLE_PADDING}
    return {"output_type": types.RGB, **(on_gpu if gpu else {})}


def random_crop(encoded: Any, eq: Any, gpu: bool, hw_decoder_load: float) -> Any:
    """Inside a DALI pipeline: a random resized crop of ``encoded`` decoded and resized to the
    workload's size as DALI's ResNet-50 examples write it (:func:`example_decoder`, 100
    attempts, a triangular resize)."""
    from nvidia.dali import fn, types

    images = fn.decoders.image_random_crop(
        encoded,
        random_area=list(eq.crop_scale),
        random_aspect_ratio=list(eq.crop_ratio),
        num_attempts=100,
        **example_decoder(gpu, hw_decoder_load),
    )
    return fn.resize(images, size=list(eq.size), interp_type=types.INTERP_TRIANGULAR)


def pipeline_epochs(pipe: Any, steps: int) -> Epoch:
    """Epochs of ``steps`` runs of a built DALI pipeline, the batch size of each."""

    def epoch() -> Iterator[int]:
        for _ in range(steps):
            yield len(pipe.run()[0])

    return epoch


def dali_rn50(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """DALI's own rn50-style pipeline doing (b)'s work."""
    _gpu_check(device)
    from nvidia.dali import fn, pipeline_def, types

    config = _config(workload, data, threads)
    eq = workload.equivalent
    paths, labels, _ = data.files()
    gpu = device == "gpu"

    def jitter(spread: float) -> Any:
        return fn.random.uniform(range=[1.0 - spread, 1.0 + spread])

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.dali_threads(device),
        device_id=0 if gpu else None,
        prefetch_queue_depth=config.prefetch_depth(device),
        seed=0,
    )
    def graph() -> Any:
        images, label = random_crop_front(paths, labels, eq, gpu, config.hw_decoder_load)
        images = fn.color_twist(
            images,
            brightness=jitter(eq.brightness),
            contrast=jitter(eq.contrast),
            saturation=jitter(eq.saturation),
        )
        images = fn.crop_mirror_normalize(
            images,
            mean=list(eq.mean),
            std=list(eq.std),
            mirror=fn.random.coin_flip(),
            dtype=types.FLOAT,
            output_layout="HWC",
        )
        return images, label

    pipe = graph()
    pipe.build()
    return pipeline_epochs(pipe, len(paths) // config.batch_size)


def jax_output(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` for Keras on JAX, DALI on ``device``."""
    _gpu_check(device)
    import keras

    import daliaug

    if keras.backend.backend() != "jax":
        raise Unavailable("Keras runs on another backend: set KERAS_BACKEND=jax")
    config = _config(workload, data, threads, backend=device)
    dataset = daliaug.make_dataset(config, framework="jax", samples=data.samples())

    def epoch() -> Iterator[int]:
        while True:  # runs on across epochs, as DaliLoader's tool does
            for images, _ in dataset:
                images.block_until_ready()
                yield int(images.shape[0])

    return epoch
