"""The DALI engine: the plan as one DALI graph, on the GPU (nvJPEG decoding, GPU warp, colour
and normalization) or on the CPU. Importing this package imports DALI, never TensorFlow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from daliaug.engines import Engine
from daliaug.engines.select import Device, dali_gpu_count


class DaliEngine(Engine):
    name = "dali"

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.engines.dali.verify import undecodable

        # a GPU pipeline may be defined (and checked) on a machine without a GPU
        device = device if dali_gpu_count() > 0 else "cpu"
        return undecodable(paths, device, device_id=device_id)


ENGINE = DaliEngine()
