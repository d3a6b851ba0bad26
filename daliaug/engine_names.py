"""The engines' and devices' names, spelled once: every type that names an engine, a device, a
placement or a ``backend`` value is made of these (``Config.backend``, the engine choice, a
dataset's engine, the engines' registry). Imports nothing of daliaug."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Device = Literal["cpu", "gpu"]
"""Where DALI runs."""

HostEngine = Literal["tf", "opencv"]
"""The engines that run on the CPU only: TensorFlow ops, OpenCV with NumPy."""

EngineName = Literal["dali", HostEngine]
"""Every engine: NVIDIA DALI (on either device) and the host engines."""

Placement = Literal[Device, HostEngine]
"""Where a pipeline runs: DALI on a device, or a host engine."""

Backend = Literal["auto", Placement]
"""``Config.backend``: a placement, or ``auto`` (daliaug decides)."""

ENGINE_NAMES: tuple[EngineName, ...] = get_args(EngineName)
HOST_ENGINES: tuple[HostEngine, ...] = get_args(HostEngine)


@dataclass(frozen=True)
class Choice:
    """An engine (its name) and the device it runs on."""

    engine: EngineName
    device: Device
