"""The demo's work: training and validation samples of a config's source (the procedural demo
data, or the user's), and ``model.fit`` with a per-epoch report of images/s and the metric."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daliaug.config import Config
from daliaug.prepare import prepare_samples
from daliaug.sources import SampleSet, SourceConfig


def splits(config: Config, data: Path | None) -> tuple[SampleSet, SampleSet]:
    """Training and validation samples of the config's source: the demo data in the source's
    form without ``data``; else ``data/train`` and ``data/val`` if both exist, else an 80/20
    split of ``data``."""

    def samples_of(source: SourceConfig) -> SampleSet:
        return prepare_samples(config.model_copy(update={"source": source}))

    if data is None:
        from daliaug.tools.demo_sources import demo_sources

        train, val = demo_sources(config.source)
        return samples_of(train), samples_of(val)
    if (data / "train").exists() and (data / "val").exists():
        source = config.source
        return samples_of(source.with_path(data / "train")), samples_of(
            source.with_path(data / "val")
        )
    samples = samples_of(config.source.with_path(data))
    samples.check_split("--data", data)
    return samples.split(0.2)


def mirrored(replicas: int) -> Any:
    """A ``MirroredStrategy`` over all visible GPUs, or without a GPU over ``replicas`` logical
    CPU devices (set up here, so before TensorFlow starts its devices)."""
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return tf.distribute.MirroredStrategy()
    cpu = tf.config.list_physical_devices("CPU")[0]
    logical = [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
    tf.config.set_logical_device_configuration(cpu, logical)
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def pipeline_rate(dataset: Any, count: int) -> float:
    """Images/s of one epoch of ``dataset`` (of ``count`` samples) with nothing else running."""
    start = time.perf_counter()
    for _ in dataset:
        pass
    return count / (time.perf_counter() - start)


def fit(
    model: Any,
    train: Any,
    val: Any,
    epochs: int,
    count: int,
    metric: str,
    report: Callable[[str], None],
    replicas: int = 1,
) -> dict[str, list[float]]:
    """``model.fit`` for ``epochs``; ``report`` gets one line per epoch (with the images/s of
    each of ``replicas`` replicas). Returns the validation metric and the training images/s
    of each epoch."""
    import keras

    history: dict[str, list[float]] = {f"val_{metric}": [], "images_per_s": []}

    class Report(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            self.train_end = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            logs = logs or {}
            rate = count / (self.train_end - self.start)
            history[f"val_{metric}"].append(logs[f"val_{metric}"])
            history["images_per_s"].append(rate)
            each = f" ({rate / replicas:,.0f} per replica)" if replicas > 1 else ""
            report(
                f"epoch {epoch + 1}/{epochs}: loss {logs['loss']:.3f}, {metric} "
                f"{logs[metric]:.1%}, val_{metric} {logs[f'val_{metric}']:.1%}, "
                f"{rate:,.0f} images/s{each}"
            )

    model.fit(
        train, validation_data=val, epochs=epochs, verbose=0, callbacks=[Report()], shuffle=False
    )
    return history
