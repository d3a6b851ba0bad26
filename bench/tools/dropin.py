"""daliaug's ``ImageDataGenerator`` drop-in (``from daliaug.keras import ImageDataGenerator``)
on the same workloads as Keras' own, built with the same arguments by the same code
(:func:`bench.tools.idg.flow_of`): what a user gets by changing the one import.

(a) runs in the DALI graph (DALI on the CPU here, on the GPU where present). (b) passes a NumPy
``preprocessing_function`` (contrast and saturation, which ``ImageDataGenerator`` lacks), which
cannot run in the DALI graph: the drop-in warns and runs the pipeline on daliaug's TensorFlow
backend, then the function once per image in a ``tf.numpy_function``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

from bench.tools import Epoch
from bench.tools.idg import flow_of
from bench.workloads import Data, Workload


def dropin(workload: Workload, data: Data, threads: int | None, device: str) -> Epoch:
    """The drop-in's dataset, epoch after epoch (each iteration is one epoch)."""
    from daliaug.errors import BackendWarning
    from daliaug.keras import ImageDataGenerator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)  # (b)'s preprocessing_function
        flow = flow_of(workload, data, ImageDataGenerator)

    def epoch() -> Iterator[int]:
        while True:
            for images, _ in flow:
                yield int(images.shape[0])

    return epoch
