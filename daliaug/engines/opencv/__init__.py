"""The OpenCV engine: the plan computed on the CPU with OpenCV and NumPy in a thread pool
(``backend: opencv``, the ``opencv`` extra), for the NumPy, JAX and PyTorch outputs. Importing
this package imports OpenCV, neither TensorFlow nor DALI."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from daliaug.engines import Engine
from daliaug.engines.select import Device
from daliaug.errors import BackendError

try:
    import cv2  # noqa: F401
except ImportError as e:  # pragma: no cover - the extra is installed where tests run
    raise BackendError(
        f"backend: opencv needs OpenCV ({e}); install it with pip install 'daliaug[opencv]'"
    ) from e


class OpenCvEngine(Engine):
    name = "opencv"
    title = "OpenCV"

    def undecodable(
        self, paths: Sequence[str], device: Device, device_id: int = 0
    ) -> Iterator[tuple[str, str]]:
        from daliaug.engines.opencv.verify import undecodable

        return undecodable(paths)


ENGINE = OpenCvEngine()
