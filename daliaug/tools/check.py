"""``daliaug check``: decode every image (and mask) of a source once, in parallel, by the backend
that would train on it, and say which files are bad and why (results cached)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from daliaug.config import Config, load_config
from daliaug.engines import engine as named_engine
from daliaug.engines.select import choose
from daliaug.errors import ConfigError, DataError
from daliaug.outputs.tfdata.dataset import tf_sees_gpu
from daliaug.sources.base import Samples
from daliaug.sources.checks import check_files, check_image_files, skip_list
from daliaug.sources.kept_listing import list_images
from daliaug.sources.listing import IMAGE_EXTENSIONS
from daliaug.sources.sample_set import SampleSet


@dataclass(frozen=True)
class CheckReport:
    files: int
    cached: int
    bad: dict[str, str]
    seconds: float
    decoder: str
    listed: Path | None
    ignored: dict[str, str]
    """What the folders hold besides images (other files, links not followed), with why."""
    note: str | None = None
    """For a source without image files (arrays, TFRecords): what was checked instead."""
    notes: dict[str, str] = field(default_factory=dict)
    """Samples kept that are worth a look (an image without annotations), with why."""


def folder_samples(folder: Path) -> Samples:
    """Every JPEG and PNG under ``folder`` (any layout), as one class; links followed as the
    directory source follows them."""
    listing = list_images([folder], folder)
    paths = listing.all_images
    if not paths:
        raise DataError(f"found no images ({', '.join(IMAGE_EXTENSIONS)}) under {folder}")
    sizes, rejected = check_image_files(paths)
    labels = np.zeros(len(paths), np.int32)
    ignored = {**listing.ignored, **listing.skipped}
    return Samples.of_files({"path": paths}, ["images"], sizes, rejected, ignored, label=labels)


def config_and_samples(target: str | Config) -> tuple[Config, SampleSet]:
    """A folder of images (checked as they are), or a config (its source's samples)."""
    if not isinstance(target, Config) and Path(target).is_dir():
        source = {"type": "directory", "path": target}
        return load_config({"source": source, "image_size": 1}), folder_samples(Path(target))
    config = load_config(target)
    listing = config.source.model_copy(update={"on_error": "skip", "check": "full"})
    return config, listing.samples()


def check(target: str | Config, progress: Callable[[int], None] | None = None) -> CheckReport:
    """Check ``target`` (a config or a folder); ``progress`` hears how many files each step
    covered (the total is the number of files listed, header failures included)."""
    config, samples = config_and_samples(target)
    choice = choose(config, "tensorflow", tf_sees_gpu)
    engine, device = named_engine(choice.engine), choice.device
    decoder = f"{engine.name}-{device}"
    if not isinstance(samples, Samples):
        samples.check_readable()
        return CheckReport(0, 0, {}, 0.0, decoder, None, {}, _read_note(config, samples))
    files = samples.image_files
    if progress is not None and samples.rejected:
        progress(len(samples.rejected))
    undecodable = partial(engine.undecodable, device=device, device_id=config.device_id)
    result = check_files(files, decoder, undecodable, progress=progress)
    bad = {**samples.rejected, **result.bad}  # what prepare.checked refuses, the same way
    listed = skip_list(bad, [*files, *samples.rejected]) if bad else None
    note = None if files else _read_note(config, samples)
    total = (result.files if files else len(samples)) + len(samples.rejected)
    return CheckReport(
        total,
        result.cached,
        bad,
        result.seconds,
        decoder,
        listed,
        samples.ignored,
        note,
        samples.notes,
    )


def write_listings(target: str | Config) -> list[str]:
    """The listing files of a config's source, written beside its data
    (:meth:`~daliaug.sources.base.SourceConfig.write_listings`); those written."""
    if not isinstance(target, Config) and Path(target).is_dir():
        raise ConfigError(
            f"--write-listings: {target} is a folder of images; listing files are written "
            "for a config's source (WebDataset shards, listed TFRecords, a file list of s3:// "
            "images)"
        )
    return load_config(target).source.write_listings()


def _read_note(config: Config, samples: SampleSet) -> str:
    """What a check of a source without image files (arrays, shards, TFRecords) did."""
    return (
        f"a {config.source.type} source holds no image files to decode: its "
        f"{len(samples):,} samples were read and checked as the pipeline reads them"
    )


def files_to_check(target: str | Config) -> int:
    """How many files :func:`check` will report on (for a progress bar)."""
    _, samples = config_and_samples(target)
    if not isinstance(samples, Samples):
        return 0
    return sum(len(paths) for paths in samples.files.values()) + len(samples.rejected)
