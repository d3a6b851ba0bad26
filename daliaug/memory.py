"""The memory a pipeline on the CPU will hold, estimated before it is built and weighed against
what this machine has free: a batch too large for it is a :class:`~daliaug.errors.ConfigError`
with the numbers, not an out-of-memory kill or DALI's "Critical error" at the first batch.

The estimate is a lower bound of what the engines allocate: ``prefetch + 1`` batches (the
queue and the batch being made) of, per sample, the decoded image (its mean size in the
source), the float32 image after the warp, the output image and the target. A pipeline whose
images live on the GPU is not weighed here (its host memory is the encoded files).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daliaug.config import Config
from daliaug.errors import ConfigError
from daliaug.sources.base import Samples
from daliaug.sources.sample_set import SampleSet

GIB = 2**30


def sample_bytes(config: Config, samples: SampleSet) -> int:
    """What one sample takes on its way through the pipeline, in bytes."""
    h, w = config.image_size
    pixels = h * w
    output = np.dtype(config.output.dtype).itemsize
    source = 0.0  # streamed images' sizes are not known before decoding, nor deferred headers
    sizes = samples.sizes if isinstance(samples, Samples) and samples.sizes_known else None
    if isinstance(sizes, np.ndarray) and len(samples):  # (not a Keras flow's lazy sizes)
        source = float(np.mean(sizes[:, 0].astype(np.float64) * sizes[:, 1]))
    decoded = source * config.channels
    target = 4 * samples.num_classes if config.label_mode == "categorical" else 4
    if config.label_mode == "input":
        target = pixels * config.channels * output
    if config.source.segmentation:
        decoded += source * (3 if getattr(config.source, "colour_coded", False) else 1)
        one_hot = getattr(config.source, "mask_output", "index") == "one_hot"
        target = pixels * 4 * (samples.num_classes if one_hot else 1)
    return int(decoded) + pixels * config.channels * (4 + output) + target


def available_bytes() -> int | None:
    """Memory this process can still take: Linux's ``MemAvailable``, or less where a cgroup
    (a container) limits it; ``None`` where neither can be read."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    for limit, usage in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        try:
            found.append(int(Path(limit).read_text()) - int(Path(usage).read_text()))
        except (OSError, ValueError):  # no such cgroup, or "max" (no limit)
            continue
    return min(found) if found else None


def check_memory(config: Config, samples: SampleSet, device: str) -> None:
    """A :class:`ConfigError` with the numbers when the pipeline's batches on the CPU would
    not fit in the memory available now."""
    if device == "gpu":
        return
    per_sample = sample_bytes(config, samples)
    batch = min(config.batch_size, len(samples))
    prefetch = config.prefetch_depth(device)
    need = (prefetch + 1) * batch * per_sample
    have = available_bytes()
    if have is not None and need > have:
        raise ConfigError(
            f"batch_size, image_size, prefetch: {prefetch + 1} batches (prefetch "
            f"{prefetch} + 1) of {batch} samples of {per_sample / 2**20:,.1f} MiB each "
            f"({config.image_size[0]}x{config.image_size[1]}x{config.channels} output "
            f"{config.output.dtype}, decoded images and float32 work copies) need "
            f"{need / GIB:,.1f} GiB; this machine has {have / GIB:,.1f} GiB free. Use a smaller "
            "batch_size, image_size or prefetch"
        )
