"""Write a folder of class sub-folders into sharded TFRecord files or WebDataset tar shards,
or a config's source (class folders, file lists, arrays, COCO, YOLO, VOC...) into WebDataset
shards, with a progress bar; or, with --from-keras, a saved Keras model's preprocessing layers as a
daliaug config file."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from daliaug.cli.common import console, plain, positive_int
from daliaug.config import load_config
from daliaug.errors import ConfigError
from daliaug.sources.base import Samples
from daliaug.sources.directory import DirectorySource
from daliaug.sources.webdataset import WebDatasetSource

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
"""What a config file's name ends with (any other DATA is a folder of classes)."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data",
        type=Path,
        nargs="?",
        help="folder with one sub-folder per class, or a pipeline config (.yaml, .json) whose "
        "source to convert (boxes written in its bounding_box_format)",
    )
    parser.add_argument(
        "out",
        nargs="?",
        help="folder to write the shards into, or (WebDataset) an s3://bucket/prefix to upload "
        "them to",
    )
    parser.add_argument(
        "--format",
        choices=("tfrecord", "webdataset"),
        default="tfrecord",
        help="TFRecord files (default) or WebDataset tar shards (.tar, with .idx indexes)",
    )
    parser.add_argument(
        "--shards", type=positive_int, default=4, help="TFRecords: number of files (default 4)"
    )
    parser.add_argument(
        "--shard-size",
        type=positive_int,
        default=1000,
        help="WebDataset: samples per tar shard (default 1000)",
    )
    parser.add_argument("--prefix", default="data", help="shard file name prefix (default data)")
    parser.add_argument(
        "--no-listing",
        action="store_true",
        help="WebDataset: write no listing file beside the shards (by default one is written, "
        "every image decoded once to check it, so that no start reads a shard to list it)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="OUT may hold an earlier conversion (its daliaug.json): replace it whole (by "
        "default OUT must be new or empty)",
    )
    parser.add_argument(
        "--from-keras",
        type=Path,
        metavar="MODEL",
        help="a saved Keras model (.keras): write the config of its leading preprocessing layers",
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="with --from-keras: the config file to write (.yaml)"
    )
    parser.add_argument(
        "--image-size",
        type=positive_int,
        nargs=2,
        metavar=("HEIGHT", "WIDTH"),
        help="with --from-keras: the size images enter the layers at (default: the model's input)",
    )


def run(args: argparse.Namespace) -> int:
    if args.from_keras is not None:
        return _from_keras(args)
    if args.data is None or args.out is None:
        raise ConfigError("convert: give DATA and OUT folders, or --from-keras MODEL -o FILE")
    from daliaug.sources.storage import is_s3
    from daliaug.tools.convert import (
        shard_listing_source,
        upload_webdataset,
        write_tfrecords,
        write_webdataset,
    )

    webdataset = args.format == "webdataset"
    if is_s3(args.out) and not webdataset:
        raise ConfigError(
            f"convert: OUT {args.out}: TFRecords are written to a folder; give --format "
            "webdataset to write shards to S3"
        )
    box_format, config = "xyxy", None
    with console.status(plain(f"listing {args.data}")):
        if args.data.suffix in CONFIG_SUFFIXES:
            config = load_config(args.data)
            # (every header read, as convert decodes nothing: sizes a listing would leave to
            # the background check are held to the files before their boxes are written)
            listing = config.source.model_copy(update={"check": "full"})
            samples, box_format = listing.samples(config.seed), config.bounding_box_format
            if not isinstance(samples, Samples):
                raise ConfigError(
                    f"convert: a {config.source.type} source is streamed, not listed; convert "
                    "the data it was written from"
                )
            tfrecords = samples.labels is not None and bool(samples.paths)
            if not webdataset and not tfrecords:
                raise ConfigError(
                    "convert: TFRecords are written from image files with labels; give "
                    "--format webdataset for this config's source"
                )
        else:
            samples = DirectorySource(path=args.data).samples()
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    what = "WebDataset shards" if webdataset else "TFRecords"
    listed = webdataset and not args.no_listing
    listing = shard_listing_source(config, samples, box_format) if listed else None
    doing = f"writing and checking {what}" if listed else f"writing {what}"
    with Progress(
        TextColumn("{task.description}", markup=False), *columns, console=console
    ) as progress:
        task = progress.add_task(doing, total=len(samples) * (2 if listed else 1))

        def advance(k: int) -> None:
            progress.advance(task, k)

        def uploading(total: int) -> Callable[[int], None]:
            upload = progress.add_task(f"uploading to {args.out} (bytes)", total=total)
            return partial(progress.advance, upload)

        def shards(out: Path, listing: WebDatasetSource | None = listing) -> list[Path]:
            return write_webdataset(
                samples,
                out,
                args.shard_size,
                args.prefix,
                advance,
                box_format,
                args.overwrite,
                listing,
            )

        if webdataset and is_s3(args.out):
            files = upload_webdataset(
                args.out,
                args.overwrite,
                partial(shards, listing=None),
                listing,
                advance,
                uploading,
            )
        elif webdataset:
            files = shards(Path(args.out))
        else:
            files = write_tfrecords(
                samples, Path(args.out), args.shards, args.prefix, advance, args.overwrite
            )
    console.print(
        f"wrote {len(samples)} {'samples' if webdataset else 'records'} of "
        f"{samples.num_classes} classes "
        f"to {len(files)} files in {args.out}" + (" with their listing file" if listed else "")
    )
    return 0


def _from_keras(args: argparse.Namespace) -> int:
    if args.output is None:
        raise ConfigError("convert --from-keras: give the config file to write with -o FILE")
    from daliaug.tools.convert import keras_config

    source = args.data or Path("data")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = keras_config(args.from_keras, source, args.image_size)
    for warning in caught:
        console.print(Text.assemble(("note:", "yellow"), " ", plain(str(warning.message))))
    args.output.write_text(config.to_yaml())
    console.print(
        f"wrote {args.output}: {len(config.transforms)} transforms, {config.backend} backend, "
        f"source {source} (edit source.path to point at your data)"
    )
    return 0
