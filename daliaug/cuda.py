"""What daliaug knows of this host's CUDA without importing TensorFlow or DALI: whether a CUDA
driver is present, whether TensorFlow's runtime has started, and TensorFlow's GPU memory
policy, which must be in place before that runtime starts.

TensorFlow takes nearly all of a GPU's memory when its runtime starts (the first op, a
``tf.distribute`` strategy, ``tf.device``), unless memory growth is on; DALI, which builds its
pipelines later, then runs out of memory (NVIDIA/DALI#2326). The runtime reads
``TF_FORCE_GPU_ALLOW_GROWTH`` when it creates its GPU devices, so ``import daliaug`` sets it to
``true`` where a CUDA driver is present and the user has not set it (:func:`grow_gpu_memory`).
``TF_FORCE_GPU_ALLOW_GROWTH=false`` keeps TensorFlow's default.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Literal

GROWTH_VARIABLE = "TF_FORCE_GPU_ALLOW_GROWTH"

GrowthPolicy = Literal["set", "user", "no driver", "too late"]
"""How :func:`grow_gpu_memory` found TensorFlow's memory policy: ``set`` (daliaug turned
memory growth on before TensorFlow's runtime started), ``user`` (``TF_FORCE_GPU_ALLOW_GROWTH``
was already set), ``no driver`` (no CUDA driver: nothing to do), ``too late`` (the runtime had
started: only ``tf.config`` settings made before it count)."""


@functools.cache
def cuda_driver() -> bool:
    """Whether this host has a CUDA driver (``libcuda``). Without one no GPU is usable, which
    is known without importing DALI (about 60 MiB of a process that then runs TensorFlow)."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def tf_runtime_started() -> bool:
    """Whether TensorFlow's runtime (its eager context, which creates the GPU devices with
    their memory settings) has started in this process. Never imports TensorFlow: without it
    imported the runtime cannot have started."""
    context = sys.modules.get("tensorflow.python.eager.context")
    if context is None:
        return False
    current = context.context_safe()
    return current is not None and getattr(current, "_context_handle", None) is not None


def grow_gpu_memory() -> GrowthPolicy:
    """Turn TensorFlow's memory growth on (``TF_FORCE_GPU_ALLOW_GROWTH=true``) where a CUDA
    driver is present, the user has not set the variable and TensorFlow's runtime has not
    started; say which of these held (:data:`GrowthPolicy`)."""
    if GROWTH_VARIABLE in os.environ:
        return "user"
    if not cuda_driver():
        return "no driver"
    if tf_runtime_started():
        return "too late"
    os.environ[GROWTH_VARIABLE] = "true"
    return "set"


GROWTH: GrowthPolicy = grow_gpu_memory()
"""What ``import daliaug`` found and did (see :func:`grow_gpu_memory`)."""
