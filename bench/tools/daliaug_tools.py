"""daliaug's own paths: ``make_dataset`` as a user gets it (``backend: auto``), forced onto DALI
on the CPU or GPU or onto the TF backend, ``DaliLoader`` (DALI only, no TensorFlow), and DALI
decoding alone as a ceiling."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.tools import Epoch, Unavailable
from bench.workloads import Data, Workload


def _config(workload: Workload, data: Data, threads: int | None, **fields: Any) -> Any:
    from daliaug.errors import ConfigError

    extra = {"num_threads": threads} if threads is not None else {}
    try:
        return workload.daliaug_config(data, **extra, **fields)
    except ConfigError as e:
        raise Unavailable(f"not available in this build: {str(e).splitlines()[-1].strip()}") from e


def _gpu_check(device: str) -> None:
    from daliaug.engines.select import dali_gpu_count

    if device == "gpu" and dali_gpu_count() == 0:
        raise Unavailable("no CUDA GPU visible to DALI on this machine")


def _dataset_epoch(config: Any, data: Data) -> Epoch:
    """Epochs of one ``make_dataset`` (an arrays source gets the arrays as ``x``/``y``), built
    once and iterated once per epoch, as ``model.fit`` does."""
    import tensorflow as tf

    from daliaug.outputs.dataset import make_dataset

    if config.backend == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise Unavailable("TensorFlow sees no GPU (CPU-only TensorFlow build)")
    dataset = make_dataset(config, samples=data.samples())

    def epoch() -> Iterator[int]:
        for images, _ in dataset:
            yield int(images.shape[0])

    return epoch


def default_dataset(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` with ``backend: auto``: DALI on the GPU where DALI sees one, else the
    faster CPU path for the source kind and plan (:func:`daliaug.engines.select.cpu_placement`)."""
    return _dataset_epoch(_config(workload, data, threads, backend="auto"), data)


def dali_dataset(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` with ``backend: cpu`` or ``gpu`` (DALI through its TF plugin)."""
    _gpu_check(device)
    return _dataset_epoch(_config(workload, data, threads, backend=device), data)


def tf_backend(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` with ``backend: tf`` (the TensorFlow fallback, no DALI)."""
    return _dataset_epoch(_config(workload, data, threads, backend="tf"), data)


def opencv_dataset(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``make_dataset`` with ``backend: opencv`` (the OpenCV engine's ``tf.data`` output)."""
    return _dataset_epoch(_config(workload, data, threads, backend="opencv"), data)


def opencv_loader(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``CvLoader``: the OpenCV engine's NumPy batches (what JAX and PyTorch users get)."""
    from daliaug.outputs.cv_loader import CvLoader

    cv = CvLoader(_config(workload, data, threads, backend="opencv"), samples=data.samples())

    def epoch() -> Iterator[int]:
        for images, *_ in cv:
            yield len(images)

    return epoch


def loader(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """``DaliLoader`` on ``device``: NumPy batches on the CPU; on the GPU the raw DALI outputs,
    left on the device (no copy to the host, as a GPU training step would take them); the
    images first, then the targets (a detection workload's: boxes, labels)."""
    _gpu_check(device)
    from daliaug import DaliLoader  # the public name: the GPU probe runs it on older trees too

    config = _config(workload, data, threads, backend=device)
    dali = DaliLoader(config, samples=data.samples(), device=device)

    def epoch() -> Iterator[int]:  # runs on across DaliLoader's epochs (a reset is cheap)
        while True:
            for images, *_ in dali.raw_batches() if device == "gpu" else dali:
                yield len(images)

    return epoch


def decode_only(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """Read and decode the same files with DALI and nothing else (``mixed`` = nvJPEG on the
    GPU): the ceiling a full pipeline can approach."""
    _gpu_check(device)
    from nvidia.dali import fn, pipeline_def, types

    config = _config(workload, data, threads)
    paths = data.samples().paths
    batch = config.batch_size

    @pipeline_def(
        batch_size=batch,
        num_threads=config.dali_threads(device),
        device_id=0 if device == "gpu" else None,
        prefetch_queue_depth=config.prefetch_depth(device),
        seed=0,
    )
    def graph() -> Any:
        encoded, _ = fn.readers.file(files=paths, random_shuffle=True, name="files")
        return fn.decoders.image(
            encoded, device="mixed" if device == "gpu" else "cpu", output_type=types.RGB
        )

    pipe = graph()
    pipe.build()
    steps = len(paths) // batch

    def epoch() -> Iterator[int]:
        for _ in range(steps):
            (images,) = pipe.run()
            yield len(images)

    return epoch
