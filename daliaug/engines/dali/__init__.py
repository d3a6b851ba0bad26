"""The DALI engine: the plan as one DALI graph, on the GPU (nvJPEG decoding, GPU warp, colour
and normalization) or on the CPU. Importing this package imports DALI, never TensorFlow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from daliaug.engines import Engine
from daliaug.engines.select import Device, dali_device, dali_gpu_count, dali_lacks

if TYPE_CHECKING:
    from daliaug.config import Config


class DaliEngine(Engine):
    name = "dali"
    title = "DALI"

    def label(self, device: Device) -> str:
        return f"DALI-{device.upper()}"

    def device(self, requested: str, device_id: int = 0) -> Device:
        return dali_device(requested, device_id)

    def lacks(self, config: Config, device: Device) -> list[str]:
        return dali_lacks(config, device)

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.engines.dali.verify import undecodable

        # a GPU pipeline may be defined (and checked) on a machine without a GPU
        device = device if dali_gpu_count() > 0 else "cpu"
        return undecodable(paths, device, device_id=device_id)


ENGINE = DaliEngine()
