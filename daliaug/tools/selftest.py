"""``daliaug selftest``: is this host's GPU path right? One check after another, each a row.

1. what is here: the GPUs and driver (NVML), DALI and the GPUs it sees, TensorFlow and the
   GPUs it sees;
2. DALI's graph (on the GPU where DALI sees one) against the stored TensorFlow reference on the
   bundled images, with the parity harness's tolerances;
3. a few training steps of the demo through ``make_dataset`` (DALI on the GPU where both DALI
   and TensorFlow see one);
4. images/s of the pipeline alone, and the GPU memory in use.

Without a GPU the same runs on the CPU and the GPU part is reported as skipped. Without
TensorFlow (a host with DALI alone) steps 3 and 4 are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files

from daliaug.config import Config, load_config
from daliaug.engines.select import Device, dali_gpu_count
from daliaug.errors import first_line


@dataclass(frozen=True)
class Check:
    """One row: what was checked, whether it passed (``None``: skipped), and the detail."""

    name: str
    passed: bool | None
    detail: str


@dataclass
class Report:
    device: Device
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed is not False for c in self.checks)


def _environment(report: Report) -> bool:
    """Rows for the GPUs, DALI and TensorFlow; whether TensorFlow is installed."""
    import nvidia.dali

    from daliaug.tools.monitor import Nvml

    nvml = Nvml()
    if nvml.available:
        name = nvml.nvml.nvmlDeviceGetName(nvml.handle)
        driver = nvml.nvml.nvmlSystemGetDriverVersion()
        report.checks.append(Check("GPU and driver", True, f"{name}, driver {driver}"))
    else:
        report.checks.append(Check("GPU and driver", None, nvml.note))
    gpus = dali_gpu_count()
    report.checks.append(Check("DALI", True, f"{nvidia.dali.__version__}, sees {gpus} GPU(s)"))
    try:
        import tensorflow as tf
    except ImportError:
        report.checks.append(Check("TensorFlow", None, "not installed: training checks skipped"))
        return False
    tf_gpus = tf.config.list_physical_devices("GPU")
    seen = f"{tf.__version__}, sees {len(tf_gpus)} GPU(s)"
    if gpus and not tf_gpus:
        fix = "install tensorflow[and-cuda] to train on the GPU (make_dataset uses DALI's CPU)"
        report.checks.append(Check("TensorFlow", False, f"{seen}; {fix}"))
    else:
        report.checks.append(Check("TensorFlow", True, seen))
    return True


def _parity(report: Report) -> None:
    from daliaug.parity.reference import SHIPPED, check_reference

    result = check_reference(SHIPPED, report.device)
    worst = max(result.results, key=lambda r: r.stats.mean_error)
    detail = (
        f"{len(result.results)} comparisons; largest mean difference {worst.stats.mean_error:.4f} "
        f"({worst.name}), largest difference {max(r.stats.max_error for r in result.results):.0f}"
    )
    failed = [r.name for r in result.results if not r.passed]
    if failed:
        detail += f"; out of tolerance: {', '.join(failed)}"
    name = f"DALI-{report.device.upper()} vs stored TensorFlow reference"
    report.checks.append(Check(name, not failed, detail))


def _demo_config(batch_size: int) -> Config:
    from daliaug.tools.demo_sources import demo_sources

    path = files("daliaug.pipelines") / "demo.yaml"
    config = load_config(str(path), {"backend": "auto", "batch_size": batch_size})
    train, _ = demo_sources(config.source)
    return config.model_copy(update={"source": train})


def _training(report: Report, steps: int) -> None:
    import numpy as np

    from daliaug.outputs.tfdata.dataset import make_dataset
    from daliaug.tools.models import model_for

    config = _demo_config(32)
    dataset = make_dataset(config)
    batches = iter(dataset)
    for _ in range(2):  # warm-up: the pipeline starts
        next(batches)
    start, count = time.perf_counter(), 0
    for _, (images, _) in zip(range(steps), batches, strict=False):
        count += int(images.shape[0])
    rate = count / (time.perf_counter() - start)
    where = "GPU" if report.device == "gpu" else "CPU"
    report.checks.append(
        Check("pipeline alone", True, f"{rate:,.0f} images/s (DALI on the {where}, batch 32)")
    )
    num_classes = 4
    model = model_for(config, num_classes)
    history = model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)
    losses = history.history["loss"]
    finite = bool(np.all(np.isfinite(losses)))
    report.checks.append(
        Check(f"model.fit, {steps} steps", finite, f"loss {losses[-1]:.3f} through make_dataset")
    )
    report.checks.append(_memory(report.device))


def _memory(device: Device) -> Check:
    if device != "gpu":
        return Check("GPU memory", None, "skipped: no GPU")
    import tensorflow as tf

    from daliaug.tools.monitor import Nvml

    used = Nvml().memory_used()
    peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
    whole = f"{used / 2**20:,.0f} MiB in use on the GPU" if used is not None else "NVML: n/a"
    return Check("GPU memory", True, f"{whole}; TensorFlow's peak {peak / 2**20:,.0f} MiB")


def selftest(steps: int = 20, progress: Callable[[str], None] = print) -> Report:
    """Run the checks; ``progress`` hears which one starts."""
    report = Report("gpu" if dali_gpu_count() else "cpu")
    progress("looking at the GPUs, DALI and TensorFlow")
    has_tf = _environment(report)
    if report.device == "cpu":
        report.checks.append(Check("GPU path", None, "skipped: DALI sees no GPU; ran on the CPU"))
    for name, step, wanted in (
        ("checking DALI against the stored reference", _parity, True),
        ("training the demo through make_dataset", lambda r: _training(r, steps), has_tf),
    ):
        if not wanted:
            continue
        progress(name)
        try:
            step(report)
        except Exception as e:  # a self-test reports every failure as a row
            report.checks.append(Check(name, False, f"{type(e).__name__}: {first_line(e)}"))
    return report
