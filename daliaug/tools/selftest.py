"""``daliaug selftest``: does this host's GPU path work as users run it? One check after
another, each a row (and its numbers, for ``--json``):

1. what is here (:func:`probe_host`): the CUDA driver and GPU (NVML), DALI and the GPUs it
   sees, TensorFlow (its CUDA build, the GPUs it sees), DALI's TensorFlow plugin; what the GPU
   path misses, each with its fix (:func:`missing`);
2. TensorFlow's GPU memory policy, in place before its runtime started (:mod:`daliaug.cuda`),
   and no ``BackendWarning`` while the GPU datasets are made;
3. DALI's graph (on the GPU where DALI sees one, its windows cut from whole images decoded
   with fancy upsampling, as the reference was) against the stored TensorFlow reference, with
   the parity harness's tolerances; on a GPU, the window-decode canary (:func:`canary_check`,
   nvImageCodec#55), then JPEG decode windows as the pipelines decode them, counted by decoder
   (hardware, CUDA, CPU fallback, unknown) from nvImageCodec's log and NVML, against a
   reference decoded as nvJPEG decodes windows (:func:`decoder_check`): any window on the CPU,
   or none seen, fails it;
4. one seeded epoch of ``make_dataset`` on the GPU (DALI through the TensorFlow plugin) against
   the same epoch on the CPU path: the same samples in the same order, labels equal, pixels
   within the parity tolerances (:func:`compare_epochs`);
5. images/s of ``make_dataset`` and of decoding alone on the same files, and the device memory
   peak;
6. five epochs one after another: the time to each epoch's first batch beyond a steady batch
   (DALI builds its pipeline anew for each iteration) and the device memory after each, against
   2 % of a 10,000-image epoch (:func:`epoch_costs`);
7. a few ``model.fit`` steps through ``make_dataset``: a finite loss.

Without a GPU the same runs on the CPU path and the GPU-only checks are reported as skipped;
without TensorFlow (a host with DALI alone) the checks through ``make_dataset`` are skipped, by
name (``--require-tensorflow`` makes that a failure).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.config import Config, Output, load_config
from daliaug.cuda import GROWTH, GROWTH_VARIABLE, cuda_driver
from daliaug.engines.select import Device, dali_gpu_count, dali_installed
from daliaug.errors import BackendWarning, first_line

TF_FIX = "pip install 'tensorflow[and-cuda]==2.21.*'"
PLUGIN_FIX = (
    "pip install --no-build-isolation 'nvidia-dali-tf-plugin-cuda120==2.4.*' after TensorFlow; "
    "it compiles against CUDA's headers: without a CUDA toolkit in /usr/local/cuda set "
    "CUDA_HOME=$SITE/nvidia/cuda_runtime and CPLUS_INCLUDE_PATH=$SITE/nvidia/cuda_nvcc/include "
    "($SITE: the environment's site-packages, where tensorflow[and-cuda] put those wheels)"
)
DRIVER_FIX = (
    "install the NVIDIA driver (nvidia-smi must list the GPU); in a container run it with "
    "--gpus all and the NVIDIA Container Toolkit"
)
DALI_FIX = "pip install 'nvidia-dali-cuda120==2.4.*'"

EPOCHS = 5
"""Epochs :func:`epoch_costs` runs one after another."""
REFERENCE_EPOCH = 10_000
"""Images of the epoch against which the per-epoch cost is weighed."""
EPOCH_BUDGET = 0.02
"""The share of such an epoch the per-epoch cost may take."""
MEMORY_SLACK = 64 * 2**20
"""Device memory an epoch may add over the previous ones before it counts as growth."""


@dataclass(frozen=True)
class Check:
    """One row: what was checked, whether it passed (``None``: skipped), the detail, and the
    numbers behind it."""

    name: str
    passed: bool | None
    detail: str
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Host:
    """What the GPU path needs, as found on this host."""

    driver: bool
    """A CUDA driver (``libcuda.so.1``) loads."""
    gpu: str | None
    """The first GPU and the driver's version, from NVML (``None``: not available)."""
    dali: str | None
    """DALI's version (``None``: not installed)."""
    dali_gpus: int
    tensorflow: str | None
    """TensorFlow's version (``None``: not installed)."""
    tf_cuda: bool
    """TensorFlow is built with CUDA."""
    tf_gpus: int
    plugin: str | None
    """Why DALI's TensorFlow plugin does not import (``None``: it does)."""


@dataclass(frozen=True)
class Missing:
    """A piece the GPU path lacks, and the fix."""

    what: str
    fix: str
    tensorflow: bool = False
    """TensorFlow is not installed: the ``tf.data`` path is skipped by name, missing only where
    TensorFlow is asked for (a TensorFlow installed without its GPU build or DALI's plugin is
    missing always)."""

    def __str__(self) -> str:
        return f"{self.what}: {self.fix}"


@dataclass
class Report:
    device: Device
    host: Host
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed is not False for c in self.checks)

    @property
    def missing(self) -> list[Missing]:
        return missing(self.host)

    def as_dict(self) -> dict[str, Any]:
        """The report for ``--json`` (bug reports)."""
        return {
            "device": self.device,
            "passed": self.passed,
            "host": asdict(self.host),
            "missing": [asdict(m) for m in self.missing],
            "growth_policy": {"found": GROWTH, GROWTH_VARIABLE: os.environ.get(GROWTH_VARIABLE)},
            "checks": [asdict(c) for c in self.checks],
        }


def probe_host() -> Host:
    """Look at the driver, the GPU, DALI, TensorFlow and the plugin (imports each that is
    installed)."""
    from daliaug.tools.monitor import Nvml

    nvml = Nvml()
    gpu = None
    if nvml.available:
        name = nvml.nvml.nvmlDeviceGetName(nvml.handle)
        gpu = f"{name}, driver {nvml.nvml.nvmlSystemGetDriverVersion()}"
    dali = dali_gpus = None
    if dali_installed():
        import nvidia.dali

        dali, dali_gpus = nvidia.dali.__version__, dali_gpu_count()
    try:
        import tensorflow as tf
    except ImportError:
        return Host(cuda_driver(), gpu, dali, dali_gpus or 0, None, False, 0, "no TensorFlow")
    try:
        import nvidia.dali.plugin.tf
    except Exception as e:  # ImportError, or the plugin's library failing to load
        plugin: str | None = f"{type(e).__name__}: {first_line(e)}"
    else:
        plugin = None
    return Host(
        driver=cuda_driver(),
        gpu=gpu,
        dali=dali,
        dali_gpus=dali_gpus or 0,
        tensorflow=tf.__version__,
        tf_cuda=tf.test.is_built_with_cuda(),
        tf_gpus=len(tf.config.list_physical_devices("GPU")),
        plugin=plugin,
    )


def missing(host: Host) -> list[Missing]:
    """What the GPU path lacks on ``host``, in the order to fix it, each with its fix."""
    found = []
    if not host.driver:
        found.append(Missing("CUDA driver (libcuda.so.1 does not load)", DRIVER_FIX))
    if host.dali is None:
        found.append(Missing("DALI is not installed", DALI_FIX))
    elif host.driver and not host.dali_gpus:
        found.append(
            Missing(
                "a GPU DALI can use (the driver loads, DALI sees none)",
                "check nvidia-smi and CUDA_VISIBLE_DEVICES; DALI for CUDA 12 needs driver 525 "
                "or newer",
            )
        )
    if host.tensorflow is None:
        found.append(Missing("TensorFlow is not installed", TF_FIX, tensorflow=True))
        return found
    if not host.tf_cuda or (host.driver and not host.tf_gpus):
        why = "not built with CUDA" if not host.tf_cuda else "it sees no GPU"
        found.append(Missing(f"TensorFlow's GPU build ({why})", TF_FIX))
    if host.plugin is not None:
        found.append(Missing(f"DALI's TensorFlow plugin ({host.plugin})", PLUGIN_FIX))
    return found


def _environment(report: Report) -> None:
    host = report.host
    gpu = Check("GPU and driver", True, host.gpu) if host.gpu else None
    if gpu is None:
        detail = "CUDA driver found; NVML unavailable" if host.driver else "no CUDA driver"
        gpu = Check("GPU and driver", None, detail)
    report.checks.append(gpu)
    report.checks.append(Check("DALI", True, f"{host.dali}, sees {host.dali_gpus} GPU(s)"))
    if host.tensorflow is None:
        skipped = "one epoch gpu vs cpu, images/s, GPU memory, epochs, model.fit"
        detail = f"not installed: the checks through make_dataset skipped ({skipped})"
        report.checks.append(Check("TensorFlow", None, detail))
        return
    seen = f"{host.tensorflow}, sees {host.tf_gpus} GPU(s)"
    if host.dali_gpus and not host.tf_gpus:
        report.checks.append(Check("TensorFlow", False, f"{seen}; {TF_FIX}"))
    else:
        report.checks.append(Check("TensorFlow", True, seen))
    plugin = host.plugin is None
    detail = "imports" if plugin else f"{host.plugin}; {PLUGIN_FIX}"
    report.checks.append(Check("DALI's TensorFlow plugin", plugin, detail))


def memory_policy_check(warned: Iterable[str]) -> Check:
    """TensorFlow's GPU memory policy as ``import daliaug`` found it, and the
    ``BackendWarning``s heard while the datasets were made (``warned``)."""
    name = "TensorFlow's GPU memory"
    warned = list(warned)
    if warned:
        return Check(name, False, f"BackendWarning: {warned[0]}", {"warnings": warned})
    value = os.environ.get(GROWTH_VARIABLE)
    details = {
        "set": f"memory growth on before TensorFlow started ({GROWTH_VARIABLE}=true)",
        "user": f"your policy: {GROWTH_VARIABLE}={value}",
        "no driver": "no CUDA driver: nothing to set",
    }
    if GROWTH in details:
        return Check(name, None if GROWTH == "no driver" else True, details[GROWTH])
    return _late_policy(name)


def _late_policy(name: str) -> Check:
    """TensorFlow started before ``import daliaug``: only a ``tf.config`` decision counts."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    decided = all(
        tf.config.experimental.get_memory_growth(g)
        or tf.config.get_logical_device_configuration(g) is not None
        for g in gpus
    )
    if decided:
        return Check(name, True, "your tf.config policy (set before TensorFlow started)")
    return Check(
        name,
        False,
        "TensorFlow started before import daliaug, with its default (nearly all GPU memory); "
        f"import daliaug first or set {GROWTH_VARIABLE}=true",
    )


def _parity(report: Report) -> None:
    from daliaug.parity.reference import SHIPPED, check_reference

    # On a GPU, windows decoded whole: with fancy upsampling, as the reference was (a window
    # decode has none; the decode-window row checks those against a reference of their own).
    window = "whole" if report.device == "gpu" else None
    result = check_reference(SHIPPED, report.device, window)
    detail = f"{len(result.results)} comparisons"
    if result.results:
        worst = max(result.results, key=lambda r: r.stats.mean_error)
        largest = max(r.stats.max_error for r in result.results)
        detail += (
            f"; largest mean difference {worst.stats.mean_error:.4f} ({worst.name}), "
            f"largest difference {largest:.0f}"
        )
    failed = [r.name for r in result.results if not r.passed]
    if failed:
        detail += f"; out of tolerance: {', '.join(failed)}"
    if result.errors:
        errors = "; ".join(f"{name}: {error}" for name, error in result.errors.items())
        detail += f"; failed to run: {errors}"
        failed += list(result.errors)
    if window:
        detail += "; decode windows cut from whole images (fancy upsampling, as the reference)"
    name = f"DALI-{report.device.upper()} vs stored TensorFlow reference"
    report.checks.append(Check(name, not failed, detail))


NVJPEG_MEAN_ERROR = 1.0
"""Tolerated mean absolute difference of nvJPEG's windows from libjpeg-turbo's when both
upsample chroma alike (their IDCTs and colour conversions round differently): the same
bound as :data:`~daliaug.parity.measure.MAX_DECODE_MEAN_ERROR`, stated apart because the
decoders differ. Not yet measured on a GPU by this project; upsampling chroma differently
alone costs 2.6 grey levels on average on the demo's 4:2:0 JPEGs (tests/tools/test_decoders.py)."""


def decoder_check(
    paths: list[str],
    sizes: np.ndarray,
    device: Device = "gpu",
    device_id: int = 0,
    decode_window: str = "roi",
) -> Check:
    """JPEG decode windows of ``paths`` (images of ``sizes``) decoded on ``device`` as the
    pipelines decode them (``decode_window``), counted by decoder from nvImageCodec's log and
    NVML's JPEG engine (:mod:`daliaug.tools.decoders`), and compared within
    :data:`NVJPEG_MEAN_ERROR` with a reference decoded as that decoder decodes: without fancy
    upsampling for GPU windows (:func:`~daliaug.tools.decoders.plain_windows`), DALI's CPU
    decoder (fancy) for whole images on the GPU and for the CPU. Fails when any window went to
    a CPU decoder (on ``device="cpu"`` every one does: the check's own test), and when nothing
    shows which decoder took them (neither the log nor the JPEG engine)."""
    from daliaug.parity.measure import Stats
    from daliaug.tools.decoders import account, decode_windows, decoder_log, plain_windows, windows
    from daliaug.tools.monitor import Nvml

    starts, shapes = windows(sizes)
    with decoder_log() as log:
        decoded, jpeg_busy = decode_windows(
            paths,
            starts,
            shapes,
            device,
            device_id=device_id,
            nvml=Nvml(device_id),
            decode_window=decode_window,
        )
    plain = device == "gpu" and decode_window == "roi"
    if plain:
        reference = plain_windows(paths, starts, shapes)
    else:
        reference, _ = decode_windows(paths, starts, shapes, "cpu")
    counted = account(log[0], len(paths))
    diffs = [Stats.of(a, b) for a, b in zip(decoded, reference, strict=True)]
    mean = float(np.average([d.mean_error for d in diffs], weights=[d.compared for d in diffs]))
    largest = max(d.max_error for d in diffs)
    engine = "n/a" if jpeg_busy is None else f"{jpeg_busy:.0f}%"
    against = "libjpeg-turbo without fancy upsampling" if plain else "DALI's CPU decoder"
    detail = (
        f"{counted.summary()}; NVML JPEG engines busy (peak) {engine}; {decode_window} windows "
        f"against {against}: mean difference {mean:.4f}, largest {largest:.0f}"
    )
    seen = counted.named or bool(jpeg_busy)
    if counted.cpu_fallback:
        detail = "decode windows fell back to the CPU: " + detail
    elif not seen:
        detail = "which decoder took the windows is unknown: " + detail
    values = {
        "account": counted.as_dict(),
        "jpeg_engine_percent": jpeg_busy,
        "decode_window": decode_window,
        "reference": against,
        "mean_difference": mean,
        "largest_difference": largest,
    }
    passed = mean <= NVJPEG_MEAN_ERROR and not counted.cpu_fallback and seen
    return Check("JPEG decode windows on the GPU", passed, detail, values)


def canary_check(device_id: int = 0) -> Check:
    """The window-decode canary (:mod:`daliaug.engines.dali.canary`, cached per host): ok where
    GPU window decodes ran in its child, else skipped, ``decode_window: auto`` decoding whole
    images on this GPU."""
    from daliaug.engines.dali.canary import canary

    outcome = canary(device_id)
    cached = " (cached)" if outcome.cached else ""
    values = {"passed": outcome.passed, "reason": outcome.reason, "cached": outcome.cached}
    if outcome.passed:
        return Check("window-decode canary", True, outcome.reason + cached, values)
    detail = f"{outcome.reason}{cached}: decode_window auto decodes whole images on this GPU"
    return Check("window-decode canary", None, detail, values)


def _decoders(report: Report) -> None:
    """:func:`canary_check`, then :func:`decoder_check` on the demo's JPEGs as ``decode_window:
    auto`` decodes them here (a GPU host only)."""
    from daliaug.prepare import prepare_samples

    canary = canary_check()
    report.checks.append(canary)
    samples = prepare_samples(_demo_config(32, split=1))
    jpeg = [i for i, p in enumerate(samples.image_files) if p.lower().endswith((".jpg", ".jpeg"))]
    paths = [samples.image_files[i] for i in jpeg]
    mode = "roi" if canary.passed else "whole"
    report.checks.append(decoder_check(paths, samples.sizes[jpeg], decode_window=mode))


def _demo_config(batch_size: int, split: int = 0) -> Config:
    """The demo's config over its training (``split`` 0) or validation (1) images."""
    from daliaug.tools.demo_sources import demo_sources

    path = files("daliaug.pipelines") / "demo.yaml"
    config = load_config(str(path), {"backend": "auto", "batch_size": batch_size})
    return config.model_copy(update={"source": demo_sources(config.source)[split]})


def numbered_config(folder: Path, batch_size: int = 16) -> Config:
    """The demo's pipeline over its validation images, each labelled with its own index (a
    file list written to ``folder``), with uint8 output: the labels name the samples."""
    from daliaug.prepare import prepare_samples

    config = _demo_config(batch_size, split=1)
    paths = prepare_samples(config).image_files
    listing = folder / "numbered.csv"
    listing.write_text("".join(f"{p},{i}\n" for i, p in enumerate(paths)))
    source = {"type": "file_list", "path": str(listing)}
    return load_config(
        {
            **config.model_dump(mode="json", exclude={"output", "source"}),
            "source": source,
            "output": Output(dtype="uint8").model_dump(),
        }
    )


def _epoch(dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    """One iteration (one epoch) of a dataset: its labels and images, on the host."""
    labels, images = [], []
    for batch in dataset:
        images.append(batch[0].numpy())
        labels.append(batch[1].numpy())
    return np.concatenate(labels), np.concatenate(images)


def compare_epochs(config: Config, first: str, second: str) -> Check:
    """Epoch 0 of ``make_dataset(config)`` with ``backend`` ``first`` against ``second``: the
    same samples in the same order (the labels are the samples' indices, see
    :func:`numbered_config`), and pixels within the parity tolerances: the decoders' for
    JPEGs, the pipeline's for lossless files."""
    from daliaug.outputs.dataset import make_dataset
    from daliaug.parity.measure import Stats
    from daliaug.prepare import prepare_samples

    labels, images = {}, {}
    for backend in (first, second):
        dataset = make_dataset(config.model_copy(update={"backend": backend}))
        labels[backend], images[backend] = _epoch(dataset)
    name = f"one epoch, {first} vs {second}"
    if not np.array_equal(labels[first], labels[second]):
        order = np.flatnonzero(labels[first] != labels[second])
        return Check(name, False, f"samples differ from position {order[0]} on")
    paths = prepare_samples(config).image_files
    jpeg = np.array([paths[i].lower().endswith((".jpg", ".jpeg")) for i in labels[first]])
    values, passed, parts = {"samples": len(labels[first])}, True, []
    for kind, chosen in (("decoder", jpeg), ("pipeline", ~jpeg)):
        if not chosen.any():
            continue
        stats = Stats.of(images[first][chosen], images[second][chosen])
        passed = passed and stats.within(kind)
        values[kind] = stats.as_dict()
        files_kind = "JPEGs" if kind == "decoder" else "lossless files"
        parts.append(f"{files_kind} mean difference {stats.mean_error:.4f}")
    detail = f"{len(labels[first])} samples in the same order, labels equal; " + ", ".join(parts)
    return Check(name, passed, detail, values)


def _sync() -> None:
    """Wait for the work queued on the devices (before reading a clock)."""
    import tensorflow as tf

    tf.test.experimental.sync_devices()


def _device_memory() -> int | None:
    """Device memory in use on GPU 0 (NVML; ``None`` where NVML is unavailable)."""
    from daliaug.tools.monitor import Nvml

    return Nvml().memory_used()


def epoch_costs(dataset: Any, rate: float, on_gpu: bool, epochs: int = EPOCHS) -> Check:
    """Iterate ``dataset`` ``epochs`` times: each epoch's first batch (a new iteration builds
    DALI's pipeline anew) against its steady batches, the device memory after each epoch, and
    the excess weighed against a :data:`REFERENCE_EPOCH`-image epoch at ``rate`` images/s.
    ``on_gpu``: the dataset is the GPU path, to which the :data:`EPOCH_BUDGET` applies."""
    extra, memory, batch_times = [], [], []
    for _ in range(epochs):
        start = time.perf_counter()
        batches = iter(dataset)
        next(batches)
        _sync()
        first = time.perf_counter() - start
        count, start = 0, time.perf_counter()
        for _ in batches:
            count += 1
        _sync()
        steady = (time.perf_counter() - start) / max(count, 1)
        extra.append(max(first - steady, 0.0))
        batch_times.append(steady)
        memory.append(_device_memory() if on_gpu else None)
    cost = float(np.median(extra[1:] or extra))
    share = cost / (REFERENCE_EPOCH / rate) if rate > 0 else 0.0
    grows = None if None in memory else memory[-1] > memory[min(1, epochs - 1)] + MEMORY_SLACK
    within = share <= EPOCH_BUDGET and not grows
    values = {"first_batch_extra_s": extra, "batch_s": batch_times, "memory_bytes": memory}
    values.update({"share_of_reference_epoch": share, "memory_grows": grows})
    detail = (
        f"each epoch's first batch takes {cost * 1000:,.0f} ms more than the others, "
        f"{share:.1%} of a {REFERENCE_EPOCH:,}-image epoch"
    )
    if on_gpu:
        values["within_budget"] = within
        verdict = "within" if within else "over; please report it (daliaug selftest --json)"
        mib = "n/a" if None in memory else " -> ".join(f"{m / 2**20:,.0f}" for m in memory)
        detail += f" (budget {EPOCH_BUDGET:.0%}: {verdict}); GPU memory after each: {mib} MiB"
    return Check(f"{epochs} epochs, one after another", True, detail, values)


def _rate(dataset: Any, warmup: int = 2) -> float:
    """Images/s of one epoch of ``dataset`` after ``warmup`` batches, synchronised."""
    batches = iter(dataset)
    for _ in range(warmup):
        next(batches)
    _sync()
    count, start = 0, time.perf_counter()
    for batch in batches:
        count += int(batch[0].shape[0])
    _sync()
    return count / max(time.perf_counter() - start, 1e-9)


def decode_rate(paths: list[str], device: Device, batch_size: int, device_id: int = 0) -> float:
    """Images/s of DALI decoding ``paths`` alone (as ``make_dataset``'s decoder is set up) on
    ``device``, one pass after a warm-up pass, the last batch waited for."""
    from nvidia.dali import fn, pipeline_def, types

    from daliaug.engines.dali.image import decoder_args

    @pipeline_def(
        batch_size=batch_size,
        num_threads=max(1, min(4, os.cpu_count() or 1)),
        device_id=device_id if device == "gpu" else None,
    )
    def decode() -> Any:
        encoded, _ = fn.readers.file(files=paths, name="files")
        return fn.decoders.image(encoded, **decoder_args(device, types.RGB))

    pipe = decode()
    pipe.build()
    steps = -(-len(paths) // batch_size)
    for _ in range(steps):
        pipe.run()
    start = time.perf_counter()
    for _ in range(steps):
        (images,) = pipe.run()
    if device == "gpu":
        images.as_cpu()  # waits for the last batch
    return steps * batch_size / (time.perf_counter() - start)


def _rates(report: Report, config: Config) -> float:
    """Rows for the rates and the memory peak; returns ``make_dataset``'s rate."""
    from daliaug.outputs.dataset import make_dataset
    from daliaug.prepare import prepare_samples

    dataset = make_dataset(config)
    rate = max(_rate(dataset), _rate(dataset))
    paths = prepare_samples(config).image_files
    decoded = decode_rate(paths, report.device, config.batch_size, config.device_id)
    where = "on the GPU" if report.device == "gpu" else "on the CPU path"
    detail = f"make_dataset {where}: {rate:,.0f} images/s; decoding alone: {decoded:,.0f} images/s"
    values = {"make_dataset": rate, "decode_only": decoded, "batch_size": config.batch_size}
    report.checks.append(Check("images/s", True, detail, values))
    report.checks.append(_memory_peak(report.device))
    return rate


def _memory_peak(device: Device) -> Check:
    if device != "gpu":
        return Check("GPU memory", None, "skipped: no GPU")
    import tensorflow as tf

    used = _device_memory()
    peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
    whole = f"{used / 2**20:,.0f} MiB in use on the GPU" if used is not None else "NVML: n/a"
    detail = f"{whole}; TensorFlow's own peak {peak / 2**20:,.0f} MiB"
    return Check("GPU memory", True, detail, {"nvml_used": used, "tensorflow_peak": peak})


def _training(report: Report, config: Config, steps: int) -> None:
    from daliaug.outputs.dataset import make_dataset
    from daliaug.tools.models import model_for

    model = model_for(config, 4)
    history = model.fit(make_dataset(config), epochs=1, steps_per_epoch=steps, verbose=0)
    losses = history.history["loss"]
    finite = bool(np.all(np.isfinite(losses)))
    detail = f"loss {losses[-1]:.3f} through make_dataset"
    report.checks.append(Check(f"model.fit, {steps} steps", finite, detail, {"loss": losses}))


def _through_make_dataset(report: Report, steps: int, folder: Path) -> None:
    """The checks through ``make_dataset`` (TensorFlow installed), led by the memory row, which
    counts the BackendWarnings they raise."""
    from daliaug.outputs.dataset import make_dataset

    at = len(report.checks)
    config = _demo_config(32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendWarning)
        try:
            if report.device == "gpu":
                report.checks.append(compare_epochs(numbered_config(folder), "gpu", "cpu"))
            else:
                report.checks.append(Check("one epoch, gpu vs cpu", None, "skipped: no GPU"))
            rate = _rates(report, config)
            validation = make_dataset(_demo_config(32, split=1))
            report.checks.append(epoch_costs(validation, rate, report.device == "gpu"))
            _training(report, config, steps)
        finally:
            warned = [str(w.message) for w in caught if issubclass(w.category, BackendWarning)]
            report.checks.insert(at, memory_policy_check(warned))


def selftest(
    steps: int = 20, progress: Callable[[str], None] = print, folder: Path | None = None
) -> Report:
    """Run the checks; ``progress`` hears which one starts; ``folder`` takes the file list of
    the epoch comparison (default: the cache)."""
    from daliaug.cache import default_cache_dir, writing_cache

    progress("looking at the driver, the GPU, DALI, TensorFlow and the plugin")
    host = probe_host()
    report = Report("gpu" if host.dali_gpus else "cpu", host)
    _environment(report)
    if report.device == "cpu":
        report.checks.append(Check("GPU path", None, "skipped: DALI sees no GPU; ran on the CPU"))
    folder = folder or default_cache_dir() / "selftest"
    with writing_cache(folder, "the self-test's files"):
        folder.mkdir(parents=True, exist_ok=True)
    for name, step, wanted in (
        ("checking DALI against the stored reference", _parity, True),
        ("counting which decoder took each JPEG window", _decoders, report.device == "gpu"),
        (
            "running make_dataset: epochs, rates, model.fit",
            lambda r: _through_make_dataset(r, steps, folder),
            host.tensorflow is not None,
        ),
    ):
        if not wanted:
            continue
        progress(name)
        try:
            step(report)
        except Exception as e:  # a self-test reports every failure as a row
            report.checks.append(Check(name, False, f"{type(e).__name__}: {first_line(e)}"))
    return report
