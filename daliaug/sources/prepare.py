"""The samples a pipeline runs on, checked against its config."""

from __future__ import annotations

from daliaug.config import Config, target_column
from daliaug.errors import ConfigError, DataError
from daliaug.sources.arrays import array_samples
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples


def prepare_samples(
    config: Config,
    samples: Samples | RecordSamples | None = None,
    x: object = None,
    y: object = None,
) -> Samples | RecordSamples:
    """The samples a pipeline runs on: given ``samples``, in-memory arrays ``x``/``y`` (for an
    ``arrays`` source), or the config's source; checked against the config."""
    if x is not None or y is not None:
        if config.source.type != "arrays":
            raise ConfigError(
                f"source.type: x/y arrays were given, so the source must be of type 'arrays', "
                f"not {config.source.type!r}"
            )
        raw = config.label_mode == "raw"
        samples = array_samples(x, y, config.source.classes, raw).shard(
            config.source.shard_id, config.source.num_shards
        )
    elif samples is None:
        samples = config.source.samples()
    if len(samples) == 0:
        raise DataError(
            f"source: shard {config.source.shard_id} of {config.source.num_shards} is empty"
        )
    image = samples.columns.get("image") if isinstance(samples, Samples) else None
    if image is not None and image.shape[-1] != config.channels:
        raise DataError(
            f"channels: the arrays have {image.shape[-1]} channel(s) but the config asks for "
            f"{config.channels}"
        )
    available = list(samples.columns) if isinstance(samples, Samples) else ["record", "label"]
    column = None if "mask_path" in available else target_column(config.label_mode)
    if column is not None and column not in available:
        what = "targets y" if column == "target" else "labels"
        raise DataError(
            f"label_mode: {config.label_mode} needs {what}, and the samples have none (their "
            f"columns: {', '.join(available)})"
        )
    if config.label_mode == "binary" and samples.num_classes != 2:
        raise DataError(
            f"label_mode: binary needs exactly 2 classes, found {samples.num_classes}: "
            f"{samples.class_names[:10]}"
        )
    return samples
