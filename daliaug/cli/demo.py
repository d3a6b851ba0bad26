"""Train a small model with model.fit on DALI-augmented data; report images/s and accuracy.

With no arguments it writes a small procedural dataset (shapes on textured backgrounds, as
JPEG and PNG) into the cache directory and uses the shipped ``pipelines/demo.yaml``. With
``--config`` any source type works: class folders, a file list, arrays (``.npz``), TFRecords or
segmentation pairs (then a small encoder-decoder trains and mean IoU is reported); without
``--data`` the demo writes its procedural data in the form the source expects. ``--data``
points the source at your data: ``DATA/train`` and ``DATA/val`` when both exist, else an
80/20 split of ``DATA``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from pathlib import Path

from daliaug.cli.common import DEMO_CONFIG, console, plain, positive_int
from daliaug.config import Config, load_config
from daliaug.errors import DataError
from daliaug.sources import SampleSet
from daliaug.tools.demo import fit, mirrored, pipeline_rate, splits

EPOCHS = 30
"""The demo's default epochs (its learning rate warms up over the first and decays to 0)."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="pipeline config (default: the shipped demo.yaml)")
    parser.add_argument(
        "--data", type=Path, help="data for the config's source (default: demo data)"
    )
    parser.add_argument(
        "--epochs", type=positive_int, default=EPOCHS, help=f"training epochs (default {EPOCHS})"
    )
    parser.add_argument(
        "--backend", choices=["auto", "gpu", "cpu", "tf"], help="override the config"
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="override the config's seed, which fixes the data order, the augmentation and the "
        "model's initial weights",
    )
    parser.add_argument(
        "--replicas",
        type=positive_int,
        help="train under MirroredStrategy: all visible GPUs, or this many logical CPU devices "
        "without a GPU (the config's batch_size stays the batch of each replica)",
    )


def _config(args: argparse.Namespace) -> Config:
    overrides: dict[str, object] = {"backend": args.backend} if args.backend else {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    return load_config(args.config or DEMO_CONFIG, overrides)


def _explain(error: Exception, samples: SampleSet) -> DataError:
    """Turn a failure inside the input pipeline into an error naming the bad file."""
    from daliaug.sources.checks import explain_failure

    return explain_failure(error, samples.image_files, "the input pipeline failed")


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    what = "writing the demo data to the cache (first run only)" if args.data is None else ""
    with console.status(plain(what or f"listing and checking {args.data}")):
        train_samples, val_samples = splits(config, args.data)
    if train_samples.class_names != val_samples.class_names:
        raise DataError(
            f"training and validation classes differ: {train_samples.class_names} vs "
            f"{val_samples.class_names}"
        )
    task = "segmentation" if config.source.segmentation else "classification"
    console.print(
        f"{task}: {len(train_samples)} training and {len(val_samples)} validation samples, "
        f"{train_samples.num_classes} classes: {', '.join(train_samples.class_names)}"
    )
    with console.status("starting TensorFlow and building the DALI pipelines"):
        import keras
        import tensorflow as tf

        from daliaug.outputs.dataset import describe, make_dataset
        from daliaug.tools.models import model_for

        strategy = mirrored(args.replicas) if args.replicas else None
        replicas = strategy.num_replicas_in_sync if strategy else 1
        config = config.model_copy(update={"batch_size": config.batch_size * replicas})
        train_ds = make_dataset(config, samples=train_samples, strategy=strategy)
        val_ds = make_dataset(config.evaluation_twin(), samples=val_samples, strategy=strategy)
        if config.seed is not None:  # the model's initial weights, like the data's epochs
            keras.utils.set_random_seed(config.seed)
        with strategy.scope() if strategy else contextlib.nullcontext():
            batches = math.ceil(len(train_samples) / config.batch_size)
            model = model_for(
                config, train_samples.num_classes, steps=args.epochs * batches, warmup=batches
            )
    console.print(
        f"augmenting with {describe(train_ds)}; model: {model.count_params():,} parameters"
    )
    if strategy:
        console.print(
            f"{replicas} replicas ({', '.join(strategy.extended.worker_devices)}), one pipeline "
            f"each; global batch {config.batch_size}"
        )
    metric = "mean_iou" if config.source.segmentation else "accuracy"
    try:
        rate = pipeline_rate(train_ds, len(train_samples))
        console.print(f"pipeline alone: {rate:,.0f} images/s")
        history = fit(
            model,
            train_ds,
            val_ds,
            args.epochs,
            len(train_samples),
            metric,
            console.print,
            replicas,
        )
    except tf.errors.OpError as e:
        raise _explain(e, train_samples) from None
    scores, rates = history[f"val_{metric}"], history["images_per_s"]
    summary = f"validation {metric}: first epoch {scores[0]:.1%}, best {max(scores):.1%}"
    if metric == "accuracy":
        summary += f" (chance {1 / max(2, train_samples.num_classes):.0%})"
    console.print(f"{summary}; training at {sum(rates) / len(rates):,.0f} images/s")
    return 0
