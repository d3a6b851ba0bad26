"""The one step from a config to checked samples, used by every output.

:func:`prepare` takes a loaded config and the engine and device chosen for it (the front
doors load and choose once), lists the source's samples (or takes ``x``/``y`` arrays, or given
samples), checks them against the config, decodes every file once with the engine's decoder
(``source.check: full``), and resolves the seed.
Outputs (``tf.data``, NumPy, JAX, PyTorch) and loaders start from its
:class:`~daliaug.run.Run`.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np

from daliaug.batch_layout import target_of
from daliaug.config import Config, target_column
from daliaug.engine_names import Choice
from daliaug.engines import engine
from daliaug.errors import ConfigError, DataError, DataWarning, user_stacklevel
from daliaug.memory import check_memory
from daliaug.run import Run
from daliaug.sources.annotations import size_rule
from daliaug.sources.arrays import array_samples
from daliaug.sources.background import background_checked
from daliaug.sources.base import Samples
from daliaug.sources.checks import Undecodable, check_files, describe_rejected, skip_list
from daliaug.sources.sample_set import SampleSet


def prepare(
    config: Config,
    choice: Choice,
    *,
    samples: SampleSet | None = None,
    x: Any = None,
    y: Any = None,
    seed: int | None = None,
) -> Run:
    """The run of ``config`` (validated) on ``choice``'s engine and device: its samples listed
    and checked, its seed the config's, else ``seed`` (a state's), else a fresh one."""
    chosen, device = engine(choice.engine), choice.device
    listed = prepare_samples(config, samples, x, y)
    check_memory(config, listed, device)
    undecodable = partial(chosen.undecodable, device=device, device_id=config.device_id)
    checked = checked_samples(config, listed, f"{chosen.name}-{device}", undecodable)
    return Run.of(config, checked, choice, seed)


def prepare_samples(
    config: Config,
    samples: SampleSet | None = None,
    x: object = None,
    y: object = None,
) -> SampleSet:
    """The samples a pipeline runs on: given ``samples``, in-memory arrays ``x``/``y`` (for an
    ``arrays`` source), or the config's source; checked against the config."""
    if x is not None or y is not None:
        if config.source.type != "arrays":
            raise ConfigError(
                f"source.type: x/y arrays were given, so the source must be of type 'arrays', "
                f"not {config.source.type!r}"
            )
        raw = config.label_mode == "raw"
        fmt = config.bounding_box_format
        samples = array_samples(x, y, config.source.classes, raw, fmt).shard(
            config.source.shard_id, config.source.num_shards
        )
        check_arrays(config, x, y)
    elif samples is None:
        samples = config.source.samples(config.seed)
    if len(samples) == 0:
        raise DataError(_nothing_left(config, samples))
    if config.drop_remainder and len(samples) < config.batch_size:
        raise ConfigError(
            f"batch_size: {config.batch_size} is more than the {len(samples)} samples, and "
            "drop_remainder: true leaves out the short batch: an epoch would have no batch; use "
            "a smaller batch_size or drop_remainder: false"
        )
    image = samples.columns.get("image") if isinstance(samples, Samples) else None
    if image is not None and image.shape[-1] != config.channels:
        raise DataError(
            f"channels: the arrays have {image.shape[-1]} channel(s) but the config asks for "
            f"{config.channels}"
        )
    available = samples.column_names
    if "boxes" in available and (problems := list(config.refusals(("boxes", "keypoints")))):
        raise ConfigError("; ".join(problems))
    if config.flip_indices is not None and "keypoints" not in available:
        raise ConfigError(
            "flip_indices: the samples have no keypoints to swap (it is for detection sources "
            "with keypoints: COCO's, or y['keypoints']); leave it out"
        )
    targets_given = target_of(available, config.label_mode) in ("boxes", "masks")
    column = None if targets_given else target_column(config.label_mode)
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


def _nothing_left(config: Config, samples: SampleSet) -> str:
    """Why a source gave no samples: every file left out (each named), a shard beyond the
    samples, or nothing listed."""
    rejected = samples.rejected if isinstance(samples, Samples) else {}
    if rejected:
        return "source: no sample is left; " + describe_rejected(rejected, len(rejected))
    shard, shards = config.source.shard_id, config.source.num_shards
    if shards > 1:
        return f"source: shard {shard} of {shards} is empty (fewer samples than shards)"
    return "source: the source lists no samples"


def check_arrays(config: Config, x: object, y: object) -> None:
    """What in-memory arrays ask of the config: one-hot ``y`` comes back as it is with
    ``label_mode: categorical`` (a ``DataError`` naming the fix otherwise); images of floats
    in [0, 1] leave on the 0..255 scale unless the output normalizes (a warning giving the
    ``rescale`` that brings them back to [0, 1])."""
    if np.ndim(y) == 2 and np.shape(y)[1] > 1 and config.label_mode in ("int", "float", "binary"):
        raise DataError(
            f"y holds a row per sample {np.shape(y)}, but label_mode: {config.label_mode} "
            "yields class indices; set label_mode: categorical for one-hot rows (raw for soft "
            "targets), or pass y.argmax(1)"
        )
    if getattr(x, "dtype", np.dtype(np.uint8)).kind == "f" and not config.output.normalizes:
        warnings.warn(
            "x holds floats, read as images / 255 (daliaug computes on 0..255), and the config's "
            "output has no normalization, so the batches come out 0..255; set output: "
            "{rescale: 0.00392156862745098} (1/255) for [0, 1] as x holds",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


def checked(samples: Samples, decoder: str, undecodable: Undecodable, on_error: str) -> Samples:
    """``samples`` after the full check: unchanged when every file decodes; else a
    :class:`DataError` naming the bad files (``on_error: raise``), or the samples without them
    (``skip``: a sample goes when any of its files is bad), with one warning saying how many
    were left out, counting those rejected when they were listed, and where all are listed.
    The checked files' keys go along (``Samples.checked``), so that a file that changes
    afterwards is caught when it is read."""
    files = samples.image_files
    result = check_files(files, decoder, undecodable, listed=samples.listed)
    bad = {**samples.rejected, **result.bad}
    if not bad:
        return samples.with_checked(result.keys)
    listed = skip_list(bad, [*files, *samples.rejected])
    if on_error == "raise":
        raise DataError(describe_rejected(bad, result.files + len(samples.rejected), listed))
    drop = np.zeros(len(samples), bool)
    for paths in samples.files.values():
        drop |= np.fromiter((p in result.bad for p in paths), bool, len(paths))
    kept = samples.subset(np.flatnonzero(~drop))
    warnings.warn(
        f"left out {len(bad)} unusable files and their samples (source.on_error: skip); "
        f"{len(kept)} samples remain; the files are listed, with the reasons, in {listed}",
        DataWarning,
        stacklevel=user_stacklevel(),
    )
    if len(kept) == 0:
        raise DataError(f"source: every sample was left out; see {listed}")
    return kept.with_checked(result.keys)


def checked_samples(
    config: Config, samples: SampleSet, decoder: str, undecodable: Undecodable
) -> SampleSet:
    """``samples`` as the config's ``source.check`` and ``on_error`` want them (see
    :func:`checked`): file samples decoded once with ``undecodable``; arrays and streamed
    samples (no files of their own, nothing left out when listed), ``check: headers`` and
    samples checked before (an output opening an epoch over prepared samples: the check and
    its warning happen once) as they are; ``check: background``, or ``auto`` where the
    listing left the headers to it or chose it (:attr:`Samples.beside
    <daliaug.sources.base.Samples.beside>`): the check started beside training
    (:func:`~daliaug.sources.background.background_checked`)."""
    if config.source.check == "headers" or not isinstance(samples, Samples):
        return samples
    if not samples.files and not samples.rejected:
        return samples
    if samples.checked is not None:
        return samples
    beside = config.source.check == "auto" and samples.beside
    if config.source.check == "background" or not samples.sized or beside:
        on_error = config.source.on_error
        return background_checked(samples, decoder, undecodable, on_error, size_rule(samples))
    return checked(samples, decoder, undecodable, config.source.on_error)
