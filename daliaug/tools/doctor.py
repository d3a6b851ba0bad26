"""Is the input pipeline the bottleneck? Three measurements and a verdict (``daliaug doctor``).

(i) **pipeline**: batches of ``make_dataset(config)`` iterated with nothing else running;
(ii) **model**: training steps on one synthetic batch of the config's element spec held in
memory (``fit`` on ``Dataset.from_tensors(batch).repeat()``), so no input work at all;
(iii) **fit**: ``model.fit`` fed by ``make_dataset(config)``.
Each phase times ``steps`` batches after ``warmup`` untimed ones; partial last batches are
dropped (``drop_remainder``) so every step holds ``batch_size`` images. Whichever of (i) and
(ii) is slower bounds (iii). This process's CPU use (a share of all cores, other processes on the
machine left out) and, where NVML works, GPU utilisation are sampled throughout, and can be
drawn as a timeline. With DALI on the GPU the pipeline phase is also judged host-bound or
GPU-bound (:func:`input_bound`), with the knob to turn.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.batch_layout import BatchLayout, target_of
from daliaug.boxes import from_xyxy
from daliaug.config import Config
from daliaug.engine_spec import EngineSpec
from daliaug.engines.select import resolve_backend
from daliaug.errors import ConfigError, DataError
from daliaug.prepare import prepare_samples
from daliaug.tools.monitor import Monitor, Nvml

MODELS = ("small", "resnet50")


@dataclass
class Phase:
    """One measurement: rate of the timed steps and the mean CPU use of this process (and GPU
    utilisation) meanwhile."""

    name: str
    images_per_s: float
    steps: int
    start: float
    end: float
    cpu_percent: float | None = None
    gpu_percent: float | None = None


@dataclass
class Diagnosis:
    device: str
    model: str
    batch_size: int
    phases: list[Phase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    monitor: Monitor | None = None

    def rate(self, name: str) -> float:
        return next(p.images_per_s for p in self.phases if p.name == name)

    @property
    def verdict(self) -> str:
        return verdict(self.rate("pipeline"), self.rate("model"), self.rate("fit"))


def verdict(pipeline: float, model: float, fit: float) -> str:
    """Which of the pipeline and the model bounds ``fit``, and by how much."""
    if pipeline < model:
        return (
            f"input pipeline bounds training: fit runs at {fit:,.0f} images/s, the model alone "
            f"could do {model:,.0f} images/s ({model / fit:.1f}x); the pipeline alone delivers "
            f"{pipeline:,.0f} images/s"
        )
    return (
        f"the model bounds training: fit runs at {fit:,.0f} images/s, the model alone at "
        f"{model:,.0f} images/s ({fit / model:.0%} of it); the pipeline alone could feed "
        f"{pipeline:,.0f} images/s ({pipeline / model:.1f}x what the model takes)"
    )


SATURATED = 0.85
"""A share of a resource (cores, threads, the GPU) busy enough to call it the limit."""


@dataclass(frozen=True)
class InputBound:
    """What limits a DALI pipeline on the GPU, and the knob to turn.

    ``limit``: ``cores`` (the host's cores this process may use are all busy), ``threads``
    (DALI's thread pool is, with cores to spare), ``gpu`` (the GPU is busy, the host is not)
    or ``queue`` (neither is: batches wait on the pipeline's queue)."""

    limit: str
    busy_cores: float
    cpu_ms_per_image: float
    message: str


def input_bound(
    images_per_s: float,
    cpu_percent: float,
    cores: int,
    threads: int,
    gpu_percent: float | None,
    hw_decoder_load: float,
    prefetch: int,
) -> InputBound:
    """Whether a pipeline running at ``images_per_s`` is host-bound or GPU-bound.

    ``cpu_percent``: this process's CPU use meanwhile as a share of the ``cores`` it may run
    on (its affinity, as :class:`~daliaug.tools.monitor.Monitor` reports it); the cores it
    keeps busy are that share of them, its CPU time per image those cores over the rate.
    ``threads``, ``hw_decoder_load``, ``prefetch``: the pipeline's settings, named in the
    advice."""
    busy = cpu_percent / 100 * cores
    per_image = 1000 * busy / images_per_s if images_per_s > 0 else float("inf")
    use = (
        f"{busy:.1f} of the {cores} cores this process may use busy "
        f"({per_image:.2f} CPU ms/image x {images_per_s:,.0f} images/s)"
    )
    gpu = "GPU busy: unknown (no NVML)" if gpu_percent is None else f"GPU busy {gpu_percent:.0f}%"
    if busy >= SATURATED * cores:
        ceiling = 1000 * cores / per_image
        knob = (
            f"raise hw_decoder_load (now {hw_decoder_load:g}) towards 0.99, so the GPU's "
            "hardware JPEG decoder takes the Huffman decoding off the cores"
            if hw_decoder_load < 0.99
            else "give the process more cores, or drop CPU-side work from the config"
        )
        return InputBound(
            "cores",
            busy,
            per_image,
            f"host-bound: the input pipeline keeps {use}, which caps it near {ceiling:,.0f} "
            f"images/s; more threads cannot help: {knob} ({gpu})",
        )
    if threads < cores and busy >= SATURATED * threads:
        return InputBound(
            "threads",
            busy,
            per_image,
            f"host-bound by DALI's {threads} threads: the input pipeline keeps {use}; raise "
            f"num_threads towards {cores} ({gpu})",
        )
    if gpu_percent is not None and gpu_percent >= 100 * SATURATED:
        return InputBound(
            "gpu",
            busy,
            per_image,
            f"GPU-bound: {gpu} while the input pipeline keeps {use}; no host knob helps "
            f"(hw_decoder_load {hw_decoder_load:g} already spares the GPU's cores where "
            "it is high); the augmentations themselves take the card",
        )
    return InputBound(
        "queue",
        busy,
        per_image,
        f"neither host nor GPU saturated: the input pipeline keeps {use}, {gpu}; batches "
        f"wait in turn: raise prefetch (now {prefetch}) so more are made ahead",
    )


def build_model(spec: str, config: Config, num_classes: int) -> tuple[Any, list[str]]:
    """``small`` (the demo model), ``resnet50`` (random weights) or a saved Keras model file,
    compiled, with notes on it (see :func:`saved_model`)."""
    import keras

    from daliaug.tools.models import compile_classifier, model_for

    if spec == "small":
        return model_for(config, num_classes), []
    if spec == "resnet50":
        if config.source.segmentation:
            raise ConfigError("--model resnet50 is a classifier; use small for segmentation")
        h, w = config.image_size
        nhwc = config.output.layout == "NHWC"
        binary = config.label_mode == "binary"
        previous = keras.config.image_data_format()
        keras.config.set_image_data_format("channels_last" if nhwc else "channels_first")
        try:
            model = keras.applications.ResNet50(
                weights=None,
                input_shape=(h, w, config.channels) if nhwc else (config.channels, h, w),
                classes=1 if binary else num_classes,
                classifier_activation="sigmoid" if binary else "softmax",
            )
        finally:
            keras.config.set_image_data_format(previous)
        return compile_classifier(model, config), []
    path = Path(spec)
    if not path.is_file():
        raise DataError(f"--model: {spec} is neither {' nor '.join(MODELS)} nor a model file")
    return saved_model(path, config)


def saved_model(path: Path, config: Config) -> tuple[Any, list[str]]:
    """The Keras model saved at ``path``, with notes: compiled here for the measurement (Adam,
    the config's cross-entropy) when it was saved before ``compile()``; its random
    augmentation layers named, which run in every training step on the accelerator."""
    import keras

    from daliaug.tools.models import compile_classifier

    try:
        model = keras.models.load_model(path)
    except Exception as e:  # Keras raises many kinds for a file it cannot read
        raise DataError(f"--model: cannot load the Keras model {path}: {e}") from e
    notes = []
    if not model.compiled:
        compile_classifier(model, config)
        notes.append(
            f"{path.name} was saved before compile(): compiled here for the measurement only "
            f"({model.optimizer.__class__.__name__}, {model.loss})"
        )
    augmenting = [type(x).__name__ for x in model._flatten_layers(include_self=False) if _random(x)]
    if augmenting:
        notes.append(
            f"the model holds random augmentation layers ({', '.join(augmenting)}): they run in "
            "every training step, on the accelerator's critical path; daliaug.split_model(model) "
            "moves them into the input pipeline"
        )
    return model, notes


def _random(layer: Any) -> bool:
    """Whether ``layer`` is one of Keras' random preprocessing layers (they take a seed)."""
    return type(layer).__module__.startswith("keras.src.layers.preprocessing.") and hasattr(
        layer, "seed"
    )


def synthetic_batch(config: Config, num_classes: int) -> tuple[np.ndarray, Any]:
    """One batch of random images and targets with the config's element spec (the values of
    one-hot or binary targets do not change the cost of a step; detection targets are Keras'
    dict of ``max_boxes`` random boxes and labels per image)."""
    from daliaug.outputs.tfdata.streams import element_spec

    target = "masks" if config.source.segmentation else target_of((), config.label_mode)
    layout = BatchLayout(target)
    spec = EngineSpec.of(config, "cpu", config.device_id, 0, config.batch_size)
    images, targets = element_spec(spec, num_classes, layout)
    rng = np.random.default_rng(0)
    x_shape = (config.batch_size, *images.shape[1:])
    y_shape = (config.batch_size, *targets.shape[1:])
    if images.dtype.name == "uint8":
        x = rng.integers(0, 256, x_shape, dtype=np.uint8)
    else:
        x = rng.standard_normal(x_shape).astype(images.dtype.name)
    if config.source.detection:
        rows = (config.batch_size, config.max_boxes)
        corners = np.sort(rng.random((*rows, 2, 2)) * min(config.image_size), axis=2)
        boxes = from_xyxy(corners.reshape(*rows, 4), config.bounding_box_format, config.image_size)
        return x, {"boxes": boxes, "labels": rng.integers(0, num_classes, rows).astype(np.int32)}
    if targets.dtype.is_floating:
        return x, rng.random(y_shape, dtype=np.float32)
    return x, rng.integers(0, num_classes, y_shape).astype(targets.dtype.name)


def step_recorder(async_safe: bool = False) -> Any:
    """A Keras callback recording when each training step ends (``.times``, in step order).

    Keras 3 dispatches batch-end callbacks on a thread of its own only when every callback that
    overrides them says ``async_safe``; without it (the default here) the training loop waits
    for every step's logs. With ``async_safe`` the end of step ``i`` is read on Keras' callback
    thread once that step's logs are ready, and the loop runs on meanwhile."""
    import keras

    class StepTimes(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.async_safe = async_safe
            self.epoch = 0
            self.ends: dict[tuple[int, int], float] = {}  # by (epoch, step in it)

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self.epoch = epoch

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            self.ends[self.epoch, batch] = time.perf_counter()

        @property
        def times(self) -> list[float]:
            return [self.ends[i] for i in sorted(self.ends)]

    return StepTimes()


def step_rate(times: list[float], warmup: int, steps: int, batch: int) -> float:
    """images/s over the ``steps`` after the first ``warmup`` (step end times)."""
    return steps * batch / (times[warmup + steps - 1] - times[warmup - 1])


def diagnose(config: Config, model: str = "small", steps: int = 20, warmup: int = 3) -> Diagnosis:
    """Run the three phases on ``config`` and return their rates, utilisation and notes."""
    import tensorflow as tf

    from daliaug.outputs.dataset import make_dataset

    if steps < 1 or warmup < 1:
        raise ConfigError("--steps and --warmup must be at least 1")
    config = config.model_copy(update={"drop_remainder": True})
    samples = prepare_samples(config)
    batches = len(samples) // config.batch_size
    if batches == 0:
        raise DataError(f"source: {len(samples)} samples make no full batch of {config.batch_size}")
    device = resolve_backend(config)
    nvml = Nvml(config.device_id)
    result = Diagnosis(device, model, config.batch_size)
    if not nvml.available:
        result.notes.append(nvml.note)
    total = warmup + steps
    epochs = math.ceil(total / batches)
    keras_model, model_notes = build_model(model, config, samples.num_classes)
    result.notes.extend(model_notes)
    with Monitor(interval=0.1, gpu=nvml if nvml.available else None) as monitor:
        result.monitor = monitor

        def phase(name: str, times: list[float]) -> None:
            start, end = times[warmup - 1] - monitor.started, times[total - 1] - monitor.started
            result.phases.append(
                Phase(
                    name,
                    step_rate(times, warmup, steps, config.batch_size),
                    steps,
                    start,
                    end,
                    monitor.mean("cpu_percent", start, end),
                    monitor.mean("gpu_percent", start, end),
                )
            )

        monitor.mark("pipeline")
        dataset = make_dataset(config, samples=samples)
        times: list[float] = []
        while len(times) < total:  # one iteration of the dataset is one epoch
            for _batch in dataset:
                times.append(time.perf_counter())
                if len(times) == total:
                    break
        phase("pipeline", times)

        monitor.mark("model")
        x, y = synthetic_batch(config, samples.num_classes)
        recorder = step_recorder()
        keras_model.fit(
            tf.data.Dataset.from_tensors((x, y)).repeat(),
            steps_per_epoch=total,
            epochs=1,
            verbose=0,
            shuffle=False,
            callbacks=[recorder],
        )
        phase("model", recorder.times)

        monitor.mark("fit")
        recorder = step_recorder()
        # the timed steps and no more where one epoch holds them (a large source's whole epoch
        # would take as long as training on it), else whole epochs
        within = {"steps_per_epoch": total} if epochs == 1 else {}
        keras_model.fit(
            dataset, epochs=epochs, verbose=0, shuffle=False, callbacks=[recorder], **within
        )
        phase("fit", recorder.times)
    if device == "gpu":
        result.notes.append(_gpu_bound(config, result.phases[0]).message)
    else:
        p, m = result.rate("pipeline"), result.rate("model")
        result.notes.append(
            f"the pipeline runs on the CPU here: it shares the cores with the model, so fit tends "
            f"towards 1/(1/pipeline + 1/model) = {1 / (1 / p + 1 / m):,.0f} images/s where they "
            "cannot overlap"
        )
    return result


def _gpu_bound(config: Config, pipeline: Phase) -> InputBound:
    """:func:`input_bound` of the pipeline phase with the config's settings on the GPU."""
    return input_bound(
        pipeline.images_per_s,
        pipeline.cpu_percent or 0.0,
        len(os.sched_getaffinity(0)),
        config.dali_threads("gpu"),
        pipeline.gpu_percent,
        config.hw_decoder_load,
        config.prefetch_depth("gpu"),
    )


def plot_timeline(result: Diagnosis, path: Path) -> None:
    """CPU (and GPU) utilisation over time: each phase's start dotted, its timed steps shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert result.monitor is not None
    samples = result.monitor.samples
    fig, ax = plt.subplots(figsize=(10, 3.5))
    cores = len(os.sched_getaffinity(0))
    ax.plot(
        [s.t for s in samples],
        [s.cpu_percent for s in samples],
        label=f"CPU % of this process (100 = all {cores} cores)",
    )
    gpu = [(s.t, s.gpu_percent) for s in samples if s.gpu_percent is not None]
    if gpu:
        ax.plot(*zip(*gpu, strict=True), label="GPU %")
    for start, _ in result.monitor.marks:  # where each phase begins, its warm-up included
        ax.axvline(start, color="grey", linestyle=":", linewidth=1)
    colours = {"pipeline": "tab:green", "model": "tab:orange", "fit": "tab:purple"}
    for p in result.phases:
        ax.axvspan(p.start, p.end, color=colours[p.name], alpha=0.15)
        ax.text(
            (p.start + p.end) / 2,
            103,
            f"{p.name}\n{p.images_per_s:,.0f} img/s",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylim(0, 125)
    ax.set_xlabel("seconds")
    ax.set_ylabel("utilisation %")
    ax.set_title(
        f"daliaug doctor: model {result.model}, pipeline on {result.device.upper()}", fontsize=10
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
