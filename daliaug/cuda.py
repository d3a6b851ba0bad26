"""What daliaug knows of this host's CUDA without importing TensorFlow or DALI: whether a CUDA
driver is present, whether TensorFlow's runtime has started, and TensorFlow's GPU memory
policy, which must be in place before that runtime starts.

TensorFlow takes nearly all of a GPU's memory when its runtime starts (the first op, a
``tf.distribute`` strategy, ``tf.device``), unless memory growth is on; DALI, which builds its
pipelines later, then runs out of memory (NVIDIA/DALI#2326). The runtime reads
``TF_FORCE_GPU_ALLOW_GROWTH`` when it creates its GPU devices, so ``import daliaug`` sets it to
``true`` where a CUDA driver is present and the user has not set it (:func:`grow_gpu_memory`).
``TF_FORCE_GPU_ALLOW_GROWTH=false`` keeps TensorFlow's default.

XLA may capture CUDA graphs (its command buffers) while DALI runs on the same GPU, which DALI
documents as unsafe (DALI 2.1's release notes, NVIDIA/DALI#6286 and #6449) and answers with
``XLA_FLAGS=--xla_gpu_enable_command_buffer=``. XLA reads ``XLA_FLAGS`` when JAX starts its
backend, so ``import daliaug`` (where a CUDA driver is present) and the JAX output on GPUs
add the flag before then (:func:`xla_command_buffers_off`), keeping the user's other flags and
any command-buffer setting of theirs.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Literal

GROWTH_VARIABLE = "TF_FORCE_GPU_ALLOW_GROWTH"
XLA_VARIABLE = "XLA_FLAGS"
COMMAND_BUFFER_FLAG = "--xla_gpu_enable_command_buffer"
COMMAND_BUFFERS_OFF = f"{COMMAND_BUFFER_FLAG}="
"""XLA's command buffers (CUDA graphs) off: no command types, DALI's advice beside JAX."""

CommandBufferPolicy = Literal["set", "user", "too late"]
"""How :func:`xla_command_buffers_off` found ``XLA_FLAGS``: ``set`` (daliaug added
:data:`COMMAND_BUFFERS_OFF` before JAX's backend started), ``user`` (the flags already set
command buffers, whichever way), ``too late`` (JAX's backend had started without the flag)."""

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


def jax_backend_started() -> bool:
    """Whether JAX has started a backend (and so read ``XLA_FLAGS``) in this process. Never
    imports JAX: without it imported no backend can have started."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(getattr(bridge, "_backends", None))


def xla_command_buffers_off() -> CommandBufferPolicy:
    """Add :data:`COMMAND_BUFFERS_OFF` to ``XLA_FLAGS`` (after the user's flags) unless the
    flags set command buffers already or JAX's backend has started; say which held
    (:data:`CommandBufferPolicy`)."""
    flags = os.environ.get(XLA_VARIABLE, "")
    if any(flag.split("=", 1)[0] == COMMAND_BUFFER_FLAG for flag in flags.split()):
        return "user"
    if jax_backend_started():
        return "too late"
    os.environ[XLA_VARIABLE] = f"{flags} {COMMAND_BUFFERS_OFF}".strip()
    return "set"


XLA: CommandBufferPolicy | None = xla_command_buffers_off() if cuda_driver() else None
"""What ``import daliaug`` did to XLA's command buffers on a host with a CUDA driver (see
:func:`xla_command_buffers_off`: most Keras-on-JAX scripts import daliaug before a model
starts JAX); ``None`` without a driver."""
