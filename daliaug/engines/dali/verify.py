"""DALI's decode check: which files of a list DALI cannot decode (TensorFlow-free).

The files go through ``fn.io.file.read`` and DALI's decoder (nvJPEG on the GPU) a batch at a
time, synchronously. DALI stops at the first file it cannot decode and says which sample of
the batch it was; that file is recorded, the pipeline rebuilt, and the check goes on with the
next file (a failure DALI does not place is narrowed down file by file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from nvidia.dali import fn, pipeline_def, types

from daliaug.engines.dali.image import decoder_args
from daliaug.engines.select import Device
from daliaug.errors import first_line
from daliaug.sources.base import encode_paths

BATCH = 64
_SAMPLE = re.compile(r"sample #(\d+)")


def _pipeline(paths: Sequence[str], device: Device, batch: int, device_id: int) -> object:
    rows = encode_paths(paths)
    batches = [rows[i : i + batch] for i in range(0, len(rows), batch)]

    @pipeline_def(
        batch_size=batch,
        num_threads=max(1, min(8, os.cpu_count() or 1)),
        device_id=device_id if device == "gpu" else None,
        exec_pipelined=False,
        exec_async=False,
        prefetch_queue_depth=1,
    )
    def decode() -> object:
        names = fn.external_source(source=batches, cycle=False, dtype=types.UINT8, batch=True)
        images = fn.decoders.image(fn.io.file.read(names), **decoder_args(device, types.RGB))
        # on the decoder's device: a GPU pipeline run synchronously (as here) takes no
        # GPU -> CPU transition, which DALI refuses when it defines the graph
        return images.shape(device="gpu" if device == "gpu" else "cpu")

    pipe = decode()
    pipe.build()
    return pipe


def _first_failure(
    paths: Sequence[str], device: Device, batch: int, device_id: int = 0
) -> tuple[int, str] | None:
    """The position in ``paths`` of the first file DALI cannot decode (on GPU ``device_id``
    for ``gpu``), with the reason."""
    pipe = _pipeline(paths, device, batch, device_id)
    done = 0
    while done < len(paths):
        size = min(batch, len(paths) - done)
        try:
            pipe.run()
        except StopIteration:
            return None
        except Exception as e:  # DALI raises RuntimeError and others for a failed batch
            reason = f"DALI cannot decode it ({first_line(e)})"
            found = _SAMPLE.search(str(e))
            if found and int(found.group(1)) < size:
                return done + int(found.group(1)), reason
            if size == 1:
                return done, reason
            inner = _first_failure(paths[done : done + size], device, 1, device_id)
            return (done + inner[0], inner[1]) if inner else (done, reason)
        done += size
    return None


def undecodable(
    paths: Sequence[str], device: Device, batch: int = BATCH, device_id: int = 0
) -> Iterator[tuple[str, str]]:
    """The files of ``paths`` DALI cannot decode on ``device`` (GPU ``device_id`` for
    ``gpu``: the GPU the pipeline will run on), with DALI's reason."""
    rest = list(paths)
    while rest:
        failure = _first_failure(rest, device, batch, device_id)
        if failure is None:
            return
        index, reason = failure
        yield rest[index], reason
        rest = rest[index + 1 :]
