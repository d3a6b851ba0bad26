"""The window-decode canary's child (:mod:`daliaug.engines.dali.canary`): a few batches of
JPEG windows decoded as the pipelines decode them, on the device named on the command line
(``python -X faulthandler -m daliaug.engines.dali.canary_child gpu 0``); it prints
:data:`~daliaug.engines.dali.canary.PASSED` when every window decoded."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence

import numpy as np

from daliaug.config import Config
from daliaug.engine_spec import EngineSpec
from daliaug.engines.dali.canary import PASSED

SIZES = ((480, 640), (517, 333), (1080, 1440), (97, 131))
"""``(height, width)`` of the canary's JPEGs (odd sizes included: partial MCUs)."""
BATCHES = 3


def canary_jpegs() -> list[bytes]:
    """4:2:0 JPEGs of :data:`SIZES`: smooth gradients with noise (every MCU differs)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    encoded = []
    for h, w in SIZES:
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], -1)
        pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, "JPEG", quality=90, subsampling=2)
        encoded.append(out.getvalue())
    return encoded


def decode_canary_windows(device: str, device_id: int) -> None:
    """The child's work: :data:`BATCHES` batches of windows of :func:`canary_jpegs` decoded as
    the pipelines decode windows (:func:`daliaug.engines.dali.image.decode`, ``roi``)."""
    from nvidia.dali import fn, pipeline_def

    from daliaug.engines.dali.image import decode

    jpegs = [np.frombuffer(j, np.uint8) for j in canary_jpegs()]
    hw = np.array(SIZES, dtype=np.float32)[:, ::-1]  # (w, h)
    rng = np.random.default_rng(1)
    config = Config.model_validate(
        {"source": {"type": "arrays"}, "image_size": 1, "decode_window": "roi"}
    )
    spec = EngineSpec.of(config, device, device_id, 0, len(jpegs))  # type: ignore[arg-type]

    def windows() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        shapes = np.maximum(1, np.floor(hw * rng.uniform(0.3, 0.9, hw.shape)))
        starts = np.floor((hw - shapes) * rng.uniform(0, 1, hw.shape))
        return jpegs, starts.astype(np.float32), shapes.astype(np.float32)

    @pipeline_def(
        batch_size=len(jpegs),
        num_threads=2,
        device_id=device_id if device == "gpu" else None,
        prefetch_queue_depth=1,
        exec_dynamic=True,
    )
    def graph() -> object:
        encoded, start, shape = fn.external_source(source=windows, num_outputs=3, batch=True)
        return decode(encoded, {"crop_start": start, "crop_shape": shape}, spec)

    pipe = graph()
    pipe.build()
    for _ in range(BATCHES):
        (out,) = pipe.run()
        if device == "gpu":
            out.as_cpu()  # waits for the decodes


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device", choices=("gpu", "cpu"))
    parser.add_argument("device_id", type=int)
    args = parser.parse_args(argv)
    decode_canary_windows(args.device, args.device_id)
    print(PASSED, flush=True)


if __name__ == "__main__":
    main()
