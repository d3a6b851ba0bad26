"""Which backend and device a config runs on, decided without importing TensorFlow."""

from __future__ import annotations

from typing import Literal

from daliaug.config import Config
from daliaug.errors import BackendError

Device = Literal["cpu", "gpu"]
Backend = Literal["cpu", "gpu", "tf"]


def dali_gpu_count() -> int:
    """CUDA devices DALI can use; 0 without a driver or GPU."""
    try:
        from nvidia.dali.backend import GetCUDADeviceCount
    except ImportError as e:
        raise BackendError(
            f"NVIDIA DALI is not installed ({e}); install nvidia-dali-cuda120"
        ) from e
    try:
        return int(GetCUDADeviceCount())
    except RuntimeError:
        return 0


def resolve_device(config: Config) -> Device:
    """``gpu`` or ``cpu`` for DALI; ``backend: gpu`` without a usable GPU is an error."""
    count = dali_gpu_count()
    if config.backend == "cpu":
        return "cpu"
    if config.backend == "gpu":
        if count == 0:
            raise BackendError(
                "backend: gpu was requested but DALI sees no CUDA GPU on this machine; "
                "use backend: cpu (or auto) to run the same pipeline on the CPU"
            )
        if config.device_id >= count:
            raise BackendError(f"device_id: {config.device_id} but only {count} GPU(s) are visible")
        return "gpu"
    return "gpu" if count > config.device_id else "cpu"


def resolve_backend(config: Config) -> Backend:
    """DALI's device, or ``tf`` for ``backend: tf`` and for ``auto`` where DALI is missing."""
    if config.backend == "tf":
        return "tf"
    if config.backend == "auto":
        try:
            import nvidia.dali  # noqa: F401
        except ImportError:
            return "tf"
    return resolve_device(config)
