"""Train a small CNN with model.fit on DALI-augmented data and report images/s and accuracy.

With no arguments it writes a small procedural dataset (shapes on textured backgrounds, as
JPEG and PNG) into the cache directory and uses the shipped ``pipelines/demo.yaml``.
``--data DIR`` trains on your own class folders instead: ``DIR/train`` and ``DIR/val`` when
present, else a reproducible 80/20 split of ``DIR``.
"""

from __future__ import annotations

import argparse
import time
from importlib.resources import files
from pathlib import Path

from daliaug.cli.common import console
from daliaug.config import Config, load_config
from daliaug.errors import DataError
from daliaug.sources import FileSamples

DEFAULT_CONFIG = "demo.yaml"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="pipeline config (default: the shipped demo.yaml)")
    parser.add_argument("--data", type=Path, help="class folders to train on (default: demo data)")
    parser.add_argument("--epochs", type=int, default=6, help="training epochs (default 6)")
    parser.add_argument(
        "--backend", choices=["auto", "gpu", "cpu", "tf"], help="override the config"
    )


def _config(args: argparse.Namespace) -> Config:
    overrides = {"backend": args.backend} if args.backend else {}
    if args.config:
        return load_config(args.config, overrides)
    return load_config(str(files("daliaug.pipelines") / DEFAULT_CONFIG), overrides)


def _demo_folders() -> tuple[Path, Path]:
    from daliaug.demo_data import default_cache_dir, write_classification_dataset

    root = default_cache_dir() / "demo"
    with console.status(f"writing the demo dataset to {root} (first run only)"):
        train = write_classification_dataset(root / "train", per_class=200, seed=0)
        val = write_classification_dataset(root / "val", per_class=50, seed=1)
    return train, val


def _samples(config: Config, data: Path | None) -> tuple[FileSamples, FileSamples]:
    if data is None:
        train, val = _demo_folders()
    elif (data / "train").is_dir() and (data / "val").is_dir():
        train, val = data / "train", data / "val"
    else:
        return config.source.model_copy(update={"path": data}).samples().split(0.2)
    source = config.source
    return (
        source.model_copy(update={"path": train}).samples(),
        source.model_copy(update={"path": val}).samples(),
    )


def _explain(error: Exception, samples: FileSamples) -> DataError:
    """Turn a failure inside the input pipeline into an error naming the bad file."""
    from daliaug.sources.base import find_undecodable

    bad = find_undecodable(samples.paths)
    if bad is not None:
        return DataError(f"cannot decode image {bad[0]}: {bad[1]}")
    first = next((line for line in str(error).splitlines() if line.strip()), repr(error))
    return DataError(f"the input pipeline failed: {first}")


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    train_samples, val_samples = _samples(config, args.data)
    if train_samples.class_names != val_samples.class_names:
        raise DataError(
            f"train and val class folders differ: {train_samples.class_names} vs "
            f"{val_samples.class_names}"
        )
    console.print(
        f"{len(train_samples)} training and {len(val_samples)} validation images, "
        f"{train_samples.num_classes} classes: {', '.join(train_samples.class_names)}"
    )
    with console.status("starting TensorFlow and building the DALI pipelines"):
        import tensorflow as tf

        from daliaug.device import resolve_backend
        from daliaug.keras_dataset import make_dataset
        from daliaug.models import small_cnn

        backend = resolve_backend(config)
        train_ds = make_dataset(config, samples=train_samples)
        val_ds = make_dataset(config.evaluation_twin(), samples=val_samples)
        model = small_cnn(config, train_samples.num_classes)
    where = "TensorFlow ops" if backend == "tf" else f"DALI on the {backend.upper()}"
    console.print(f"augmenting with {where}; model: small CNN, {model.count_params()} parameters")
    try:
        pipeline_rate = _pipeline_rate(train_ds, len(train_samples))
        console.print(f"pipeline alone: {pipeline_rate:,.0f} images/s")
        history = _fit(model, train_ds, val_ds, args.epochs, len(train_samples))
    except tf.errors.OpError as e:
        raise _explain(e, train_samples) from None
    chance = 1.0 / max(2, train_samples.num_classes)
    best = max(history["val_accuracy"])
    console.print(
        f"best validation accuracy {best:.1%} (chance {chance:.0%}); "
        f"training at {sum(history['images_per_s']) / len(history['images_per_s']):,.0f} images/s"
    )
    return 0


def _pipeline_rate(ds: object, count: int) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return count / (time.perf_counter() - start)


def _fit(model: object, train_ds: object, val_ds: object, epochs: int, count: int) -> dict:
    import keras

    history: dict[str, list[float]] = {"val_accuracy": [], "images_per_s": []}

    class Report(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            self.train_end = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            logs = logs or {}
            rate = count / (self.train_end - self.start)
            history["val_accuracy"].append(logs["val_accuracy"])
            history["images_per_s"].append(rate)
            console.print(
                f"epoch {epoch + 1}/{epochs}: loss {logs['loss']:.3f}, accuracy "
                f"{logs['accuracy']:.1%}, val_accuracy {logs['val_accuracy']:.1%}, {rate:,.0f} images/s"
            )

    model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0, callbacks=[Report()])
    return history
