"""The tools under test: each builds, from a workload, a fresh epoch of materialised batches.

A tool's ``build(workload, data, threads)`` returns a callable that starts one epoch and yields
the number of images in each batch it materialises (NumPy arrays, eager tensors, or DALI
outputs left on the GPU); closing the generator tears the epoch's iterator, pool or pipeline
down. ``threads`` is the tool's own parallelism knob (``None``: its default); see
:attr:`Tool.parallelism`. Modules are imported lazily, so that the GPU suite runs without
TensorFlow.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.workloads import Data, Workload
from daliaug.config import default_threads as daliaug_threads

Epoch = Callable[[], Iterator[int]]


class Unavailable(Exception):
    """The tool cannot run here (no GPU, a backend missing from this build); says why."""


def sync(device: str) -> None:
    """Wait for the work a GPU tool queued (before a clock is read): TensorFlow's GPU ops run
    asynchronously (DALI's own outputs come back synchronised with the host)."""
    import sys

    if device == "gpu" and "tensorflow" in sys.modules:
        sys.modules["tensorflow"].test.experimental.sync_devices()


@dataclass(frozen=True)
class Tool:
    name: str
    label: str
    builder: str
    """``module:function`` under :mod:`bench.tools`, called with ``(workload, data, threads,
    device)``, returning an :data:`Epoch` or raising :class:`Unavailable`."""
    workloads: tuple[str, ...]
    parallelism: str
    """What ``threads`` sets."""
    default_threads: Callable[[], int | None]
    device: str = "cpu"
    role: str = "contender"
    """``contender``, ``baseline`` or ``reference`` (a ceiling, not a pipeline)."""

    def build(self, workload: Workload, data: Data, threads: int | None) -> Epoch:
        module, function = self.builder.split(":")
        make = getattr(importlib.import_module(f"bench.tools.{module}"), function)
        return make(workload, data, self.threads(threads), self.device)

    def threads(self, threads: int | None) -> int | None:
        """The effective setting: ``threads``, or this tool's default."""
        return self.default_threads() if threads is None else threads


def _dali_default() -> int:
    """daliaug's DALI threads by default on this machine's CPU."""
    return daliaug_threads("cpu")


def _dali_gpu_default() -> int:
    """daliaug's DALI threads by default for one GPU on this machine."""
    return daliaug_threads("gpu")


def _cores() -> int:
    return os.cpu_count() or 1


def _unset() -> None:
    """No explicit setting: tf.data's AUTOTUNE, or a tool without a knob."""
    return None


AB = ("a", "b")
ABC = ("a", "b", "c")
TOOLS = {
    t.name: t
    for t in [
        Tool(
            "daliaug",
            "daliaug default (make_dataset, backend: auto)",
            "daliaug_tools:default_dataset",
            ABC,
            "num_threads (DALI's or tf.data's pool)",
            _unset,
        ),
        Tool(
            "dali-gpu",
            "daliaug DALI-GPU (make_dataset)",
            "daliaug_tools:dali_dataset",
            ABC,
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
        ),
        Tool(
            "dali-cpu",
            "daliaug DALI-CPU (make_dataset)",
            "daliaug_tools:dali_dataset",
            ABC,
            "DALI num_threads",
            _dali_default,
        ),
        Tool(
            "loader-cpu",
            "daliaug DALI-CPU (DaliLoader, NumPy)",
            "daliaug_tools:loader",
            ABC,
            "DALI num_threads",
            _dali_default,
        ),
        Tool(
            "loader-gpu",
            "daliaug DALI-GPU (DaliLoader, raw)",
            "daliaug_tools:loader",
            ABC,
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
        ),
        Tool(
            "daliaug-tf",
            "daliaug TF backend (make_dataset)",
            "daliaug_tools:tf_backend",
            ABC,
            "num_threads (tf.data's pool)",
            _unset,
        ),
        Tool(
            "opencv",
            "daliaug OpenCV engine (make_dataset, tf.data)",
            "daliaug_tools:opencv_dataset",
            ABC,
            "num_threads (the engine's thread pool)",
            _unset,
        ),
        Tool(
            "opencv-numpy",
            "daliaug OpenCV engine (CvLoader, NumPy)",
            "daliaug_tools:opencv_loader",
            ABC,
            "num_threads (the engine's thread pool)",
            _unset,
        ),
        Tool(
            "idg",
            "ImageDataGenerator, 1 process",
            "idg:single",
            AB,
            "none",
            _unset,
            role="baseline",
        ),
        Tool(
            "idg-daliaug",
            "daliaug.keras ImageDataGenerator (drop-in)",
            "dropin:dropin",
            AB,
            "none (DALI's default threads, tf.data AUTOTUNE)",
            _unset,
        ),
        Tool(
            "idg-pool",
            "ImageDataGenerator + PyDataset pool",
            "idg:pool",
            AB,
            "pool workers",
            _cores,
            role="baseline",
        ),
        Tool(
            "tfdata-layers",
            "tf.data + Keras layers",
            "tfdata:keras_layers",
            AB,
            "num_parallel_calls",
            _unset,
            role="baseline",
        ),
        Tool(
            "tfdata-tuned",
            "tf.data hand-tuned",
            "tfdata:hand_tuned",
            ("b",),
            "num_parallel_calls",
            _unset,
            role="baseline",
        ),
        Tool(
            "keras-layers",
            "Keras layers in tf.data ((b) as layers)",
            "keras_layers:keras_way",
            ("b",),
            "num_parallel_calls",
            _unset,
            role="baseline",
        ),
        Tool(
            "from-keras",
            "daliaug.from_keras, backend auto",
            "keras_layers:compiled",
            ("b",),
            "num_threads (DALI's or tf.data's pool)",
            _unset,
            device="default",
        ),
        Tool(
            "from-keras-cpu",
            "daliaug.from_keras, DALI-CPU",
            "keras_layers:compiled",
            ("b",),
            "DALI num_threads",
            _dali_default,
        ),
        Tool(
            "from-keras-tf",
            "daliaug.from_keras, TF engine",
            "keras_layers:compiled",
            ("b",),
            "num_threads (tf.data's pool)",
            _unset,
            device="tf",
        ),
        Tool(
            "keras-augmix",
            "Keras layers in tf.data (flip, AugMix)",
            "keras_layers:keras_way_aug_mix",
            ("b",),
            "num_parallel_calls",
            _unset,
            role="baseline",
        ),
        Tool(
            "from-keras-augmix-cpu",
            "daliaug.from_keras (flip, AugMix), DALI-CPU",
            "keras_layers:compiled_aug_mix",
            ("b",),
            "DALI num_threads",
            _dali_default,
        ),
        Tool(
            "from-keras-augmix-tf",
            "daliaug.from_keras (flip, AugMix), TF engine",
            "keras_layers:compiled_aug_mix",
            ("b",),
            "num_threads (tf.data's pool)",
            _unset,
            device="tf",
        ),
        Tool(
            "keras-randaug",
            "tf.data + Keras 3 layers (RandAugment, MixUp, CutMix)",
            "policies:keras_layers",
            ("c",),
            "num_parallel_calls",
            _unset,
            role="baseline",
        ),
        Tool(
            "dali-autoaug-cpu",
            "hand-written DALI, auto_aug.rand_augment, CPU",
            "policies:dali_pipeline",
            ("c",),
            "DALI num_threads",
            _dali_default,
            role="baseline",
        ),
        Tool(
            "dali-autoaug-gpu",
            "hand-written DALI, auto_aug.rand_augment, GPU",
            "policies:dali_pipeline",
            ("c",),
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
            role="baseline",
        ),
        Tool(
            "decode-cpu",
            "DALI decode only, CPU (ceiling)",
            "daliaug_tools:decode_only",
            ("b",),
            "DALI num_threads",
            _dali_default,
            role="reference",
        ),
        Tool(
            "decode-gpu",
            "DALI decode only, nvJPEG (ceiling)",
            "daliaug_tools:decode_only",
            ("b",),
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
            role="reference",
        ),
        Tool(
            "decode-gpu-roi",
            "DALI decode only, nvJPEG, the pipeline's windows (ceiling)",
            "gpu_tools:decode_roi",
            ("b",),
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
            role="reference",
        ),
        Tool(
            "jax",
            "daliaug JAX output (make_dataset, framework jax)",
            "gpu_tools:jax_output",
            ABC,
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
        ),
        Tool(
            "dali-rn50",
            "hand-written DALI, rn50-style (image_random_crop, resize, color_twist, CMN)",
            "gpu_tools:dali_rn50",
            ("b",),
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
            role="baseline",
        ),
        Tool(
            "dali-gpu-fit",
            "daliaug DALI-GPU (make_dataset) + ResNet-50 step, mixed precision",
            "gpu_tools:dali_fit",
            ("b",),
            "DALI num_threads",
            _dali_gpu_default,
            device="gpu",
        ),
    ]
}
