"""The TensorFlow engine: the plan computed with TensorFlow ops in ``tf.data`` maps
(``backend: tf``, and ``auto`` where DALI cannot be imported). Importing this package imports
TensorFlow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from daliaug.engines import Engine
from daliaug.engines.select import Device
from daliaug.engines.tf.image import apply_plan


class TfEngine(Engine):
    name = "tf"
    title = "TensorFlow"

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.engines.tf.verify import undecodable

        return undecodable(paths)


ENGINE = TfEngine()

__all__ = ["ENGINE", "TfEngine", "apply_plan"]
