"""Which decoder ran: DALI's ``mixed`` JPEG decoder accounted image by image.

DALI decodes through nvImageCodec, which gives each image to the first of its decoders that
accepts it: ``nvjpeg_hw_decoder`` (the GPU's hardware JPEG engine, A100/H100/H200, for the
``hw_decoder_load`` share of a batch), ``nvjpeg_cuda_decoder`` (CUDA kernels, Huffman on the
pipeline's CPU threads), then a CPU decoder (``libjpeg_turbo_decoder``) for what both refuse.
Nothing reaches Python about that choice, but nvImageCodec logs it where DALI lets it:
``DALI_NVIMGCODEC_LOG_LEVEL`` (read when a decoder is built; default 2, warnings) at 4 adds,
in nvImageCodec 0.9 (DALI 2.4), an info line ``<thread>: <decoder> process #<sample>`` for
each image a decoder takes one by one (the CPU decoders always do), ``Using HW batch-single
decode path for batch of <n>`` for the hardware decoder's batches, and ``set failure #<sample>``
for an image no decoder took. nvImageCodec writes to the process's standard error (file
descriptor 2), so :func:`captured_stderr` reads it there and :func:`account` counts. The
warnings that come with a refusal are counted too: ``ROI decode with fancy upsampling may
produce wrong results ...`` (nvJPEG before 13.2 refuses a decode window with fancy upsampling,
and the window goes on to the CPU decoder) and ``HW decoder not supported by this platform``
(no hardware JPEG engine). Where ``pynvml`` imports (``nvidia-ml-py``), NVML's JPEG-engine
utilisation is read while decoding (``Nvml.jpeg_utilisation``): the hardware decoder's own
witness, as its batches are not named image by image. The images of each batch come from
``ImageGenericDecoder::decode num_samples=<n>``. An image no line names and none failed is the
hardware decoder's, inferred from nvImageCodec 0.9's source (:data:`INFERRED_VERSION`): every
decoder that takes images one by one (the CUDA decoder and every CPU decoder) logs ``process
#`` at INFO for each image it tries, while the hardware decoder takes batches only and logs
them at DEBUG, compiled out of release builds (levels 4 and 5 printed the same lines on an
H200). With another nvImageCodec such images are ``unknown``, never counted as a GPU decode.
Lines that two threads' output merged still count (only a decoder's name and `` process #``
are read), as tests/tools/test_decoders.py checks on a log captured from this project's CPU
decoders.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

from daliaug.engines.select import Device
from daliaug.errors import BackendError
from daliaug.tools.monitor import Nvml

LOG_VARIABLE = "DALI_NVIMGCODEC_LOG_LEVEL"
DEBUG_LEVEL = "4"
"""nvImageCodec's debug messages: the one level that names each image's decoder."""

KINDS = {
    "nvjpeg_hw_decoder": "hardware",
    "nvjpeg_cuda_decoder": "cuda",
    "nvjpeg_lossless_decoder": "cuda",
}
"""nvImageCodec's GPU decoders by kind; any other decoder runs on the CPU."""
KIND_ORDER = ("hardware", "cuda", "cpu", "unknown")

PROCESSED = re.compile(r"(\w+_decoder) process #")
"""A decoder taking one image; only the decoder's name and the words after it are needed, so
that a record survives a line that another thread's output cut or joined."""
SUBMITTED = re.compile(r"ImageGenericDecoder::decode num_samples=(\d+)")
"""The images of each batch DALI gave nvImageCodec (one line per batch, every decoder)."""
HW_BATCH = re.compile(r"Using HW batch-single decode path for batch of (\d+)")
FAILED = re.compile(r"set failure #\d+")
ROI_FANCY = "ROI decode with fancy upsampling may produce wrong results"
NO_HARDWARE = "HW decoder not supported by this platform"
UNKNOWN = "unknown"
"""Images no line names the decoder of, where the nvImageCodec installed is not
:data:`INFERRED_VERSION` (see :func:`account`); never counted as a GPU decode without other
evidence (NVML)."""
INFERRED_VERSION = "0.9."
"""The nvImageCodec whose log :func:`account` reads images it does not name as the hardware
decoder's (``ImageGenericCodec::processSample`` logs ``process #`` for every image a decoder
without a batch API tries; ``nvjpeg_hw_decoder`` has only a batch API and logs at DEBUG)."""


@dataclass(frozen=True)
class DecoderAccount:
    """Images per decoder kind (``hardware``, ``cuda``, ``cpu``, ``unknown``), read from
    nvImageCodec's log."""

    decoders: dict[str, int] = field(default_factory=dict)
    """Images per nvImageCodec decoder name."""
    roi_fancy_refusals: int = 0
    """Decode windows nvJPEG refused because fancy upsampling was asked for."""
    failed: int = 0
    """Images no decoder accepted."""
    no_hardware: bool = False
    """nvImageCodec said this GPU has no hardware JPEG decoder."""
    inferred: int = 0
    """Of the hardware decoder's images, those no line names (see :data:`INFERRED_VERSION`)."""

    def count(self, kind: str) -> int:
        return sum(n for name, n in self.decoders.items() if _kind(name) == kind)

    @property
    def images(self) -> int:
        return sum(self.decoders.values())

    @property
    def cpu_fallback(self) -> bool:
        """Whether any image of a GPU decode went to a CPU decoder or to none."""
        return self.count("cpu") > 0 or self.failed > 0 or self.roi_fancy_refusals > 0

    @property
    def named(self) -> bool:
        """Whether the log names the decoder of every image (none ``unknown``)."""
        return bool(self.images) and self.count("unknown") == 0

    def summary(self) -> str:
        """One line: the images per kind, then what went wrong."""
        if not self.images and not self.failed:
            return f"no decoder named in nvImageCodec's log (is {LOG_VARIABLE} read?)"
        counts = {kind: self.count(kind) for kind in KIND_ORDER}
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in counts.items() if n)
        parts = [f"{self.images:,} images: {kinds}"]
        if self.inferred:
            parts.append(
                f"{self.inferred:,} of them named by no line: the hardware decoder's "
                "(nvImageCodec 0.9 logs its batches only at DEBUG)"
            )
        cpu = sorted(name for name in self.decoders if _kind(name) == "cpu")
        if cpu:
            parts.append(f"CPU fallback through {', '.join(cpu)}")
        if self.roi_fancy_refusals:
            parts.append(
                f"{self.roi_fancy_refusals:,} decode windows refused by nvJPEG for fancy upsampling"
            )
        if self.failed:
            parts.append(f"{self.failed:,} images no decoder accepted")
        if self.no_hardware:
            parts.append("no hardware JPEG decoder on this GPU")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "decoders": dict(self.decoders),
            **{kind: self.count(kind) for kind in KIND_ORDER},
            "roi_fancy_refusals": self.roi_fancy_refusals,
            "failed": self.failed,
            "no_hardware": self.no_hardware,
            "inferred_hardware": self.inferred,
            "cpu_fallback": self.cpu_fallback,
        }


def _kind(name: str) -> str:
    return "unknown" if name == UNKNOWN else KINDS.get(name, "cpu")


def account(log: str, images: int | None = None, codec: str | None = None) -> DecoderAccount:
    """Count, in nvImageCodec's log text, the images each decoder took and the refusals;
    ``images``: how many were decoded, where known, else the batches' sizes the log gives. The
    images beyond those the log names or failed are the hardware decoder's where ``codec`` (the
    nvImageCodec version; default: the one installed) is :data:`INFERRED_VERSION`, else
    :data:`UNKNOWN`."""
    decoders = Counter(PROCESSED.findall(log))
    if "nvjpeg_hw_decoder" not in decoders:
        hardware = sum(int(n) for n in HW_BATCH.findall(log))
        if hardware:
            decoders["nvjpeg_hw_decoder"] = hardware
    failed = len(FAILED.findall(log))
    if images is None:
        images = sum(int(n) for n in SUBMITTED.findall(log))
    rest = images - sum(decoders.values()) - failed
    codec = nvimgcodec_version() if codec is None else codec
    hardware_here = NO_HARDWARE not in log
    inferred = rest if rest > 0 and hardware_here and codec.startswith(INFERRED_VERSION) else 0
    if rest > 0:
        name = "nvjpeg_hw_decoder" if inferred else UNKNOWN
        decoders[name] = decoders.get(name, 0) + rest
    return DecoderAccount(
        decoders=dict(decoders),
        roi_fancy_refusals=log.count(ROI_FANCY),
        failed=failed,
        no_hardware=not hardware_here,
        inferred=inferred,
    )


def nvimgcodec_version() -> str:
    """The installed nvImageCodec's version (its CUDA 12 or 13 wheel), ``""`` without one."""
    for name in ("nvidia-nvimgcodec-cu12", "nvidia-nvimgcodec-cu13"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return ""


@contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """File descriptor 2 sent to a temporary file while inside; the list yielded receives its
    text on exit (what C++ libraries such as nvImageCodec print there included)."""
    text: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read().decode(errors="replace"))


@contextmanager
def decoder_log() -> Iterator[list[str]]:
    """nvImageCodec's debug log of the decoders built inside (see :func:`captured_stderr`)."""
    before = os.environ.get(LOG_VARIABLE)
    os.environ[LOG_VARIABLE] = DEBUG_LEVEL
    try:
        with captured_stderr() as text:
            yield text
    finally:
        if before is None:
            del os.environ[LOG_VARIABLE]
        else:
            os.environ[LOG_VARIABLE] = before


def windows(sizes: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A decode window per image of ``sizes`` ((height, width) rows): 30 to 90 % of each
    side, anywhere inside; ``(starts, shapes)`` as ``(x, y)`` and ``(w, h)`` float32 rows."""
    rng = np.random.default_rng(seed)
    hw = np.asarray(sizes, dtype=np.float32)[:, ::-1]  # (w, h)
    shapes = np.maximum(1, np.floor(hw * rng.uniform(0.3, 0.9, hw.shape)))
    starts = np.floor((hw - shapes) * rng.uniform(0, 1, hw.shape))
    return starts.astype(np.float32), shapes.astype(np.float32)


def decode_windows(
    paths: list[str],
    starts: np.ndarray,
    shapes: np.ndarray,
    device: Device,
    batch_size: int = 32,
    device_id: int = 0,
    nvml: Nvml | None = None,
    decode_window: str = "roi",
) -> tuple[list[np.ndarray], float | None]:
    """Each file's window decoded as the pipelines decode windows
    (:func:`daliaug.engines.dali.image.decode`) on ``device``, as RGB arrays on the host; and
    the hardware JPEG decoders' peak utilisation read meanwhile from ``nvml`` (``None``
    without a reading). ``decode_window``: the config field (``roi`` or ``whole``)."""
    from nvidia.dali import fn, pipeline_def

    from daliaug.config import Config
    from daliaug.engine_spec import EngineSpec
    from daliaug.engines.dali.image import decode

    rgb = Config.model_validate(
        {"source": {"type": "arrays"}, "image_size": 1, "decode_window": decode_window}
    )
    spec = EngineSpec.of(rgb, device, device_id, 0, batch_size)
    batches = [
        (paths[i : i + batch_size], starts[i : i + batch_size], shapes[i : i + batch_size])
        for i in range(0, len(paths), batch_size)
    ]
    feed = iter(batches)

    def next_batch() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        names, start, shape = next(feed)
        return [np.frombuffer(n.encode(), np.uint8) for n in names], start, shape

    @pipeline_def(
        batch_size=batch_size,
        num_threads=max(1, min(4, os.cpu_count() or 1)),
        device_id=device_id if device == "gpu" else None,
        prefetch_queue_depth=1,
        exec_dynamic=True,
    )
    def graph() -> Any:
        names, start, shape = fn.external_source(source=next_batch, num_outputs=3, batch=True)
        encoded = fn.io.file.read(names)
        return decode(encoded, {"crop_start": start, "crop_shape": shape}, spec)

    pipe = graph()
    pipe.build()
    images: list[np.ndarray] = []
    busy: list[float] = []
    for _ in batches:
        (out,) = pipe.run()
        out = out.as_cpu() if device == "gpu" else out
        images += [np.asarray(out[i]) for i in range(len(out))]
        reading = nvml.jpeg_utilisation() if nvml is not None else None
        if reading is not None:
            busy.append(reading)
    return images, max(busy, default=None)


SIMPLEJPEG_FIX = "pip install 'simplejpeg>=1.8' (a dependency of daliaug)"


def plain_windows(paths: list[str], starts: np.ndarray, shapes: np.ndarray) -> list[np.ndarray]:
    """Each JPEG's window (``starts`` x, y and ``shapes`` w, h rows) as nvJPEG decodes a
    window: libjpeg-turbo (through ``simplejpeg``) without fancy upsampling, each chroma sample
    repeated over the pixels it covers, the whole image decoded and the window cut from it
    (without fancy upsampling a window's pixels do not depend on its neighbours). DALI's CPU
    decoder always upsamples fancily (it has no such switch), so it cannot be the reference
    of a GPU window decode: on the demo's 4:2:0 JPEGs the two differ by 2.6 grey levels on
    average."""
    try:
        import simplejpeg
    except ImportError as e:
        raise BackendError(f"the window references need simplejpeg: {SIMPLEJPEG_FIX}") from e
    out = []
    for path, (x, y), (w, h) in zip(paths, starts.astype(int), shapes.astype(int), strict=True):
        with open(path, "rb") as f:
            image = simplejpeg.decode_jpeg(f.read(), colorspace="RGB", fastupsample=True)
        out.append(image[y : y + h, x : x + w])
    return out
