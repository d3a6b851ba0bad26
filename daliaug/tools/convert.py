"""Write a class-folder dataset into sharded TFRecord files of ``tf.train.Example``s, or any
source's samples with labels or boxes into WebDataset tar shards; turn a saved Keras model's
preprocessing layers into a daliaug config."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.boxes import from_xyxy
from daliaug.config import Config
from daliaug.errors import ConfigError
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.checks import image_header
from daliaug.sources.member_listing import MemberColumn
from daliaug.sources.segmentation import MaskTargets
from daliaug.sources.storage import identities, identity
from daliaug.sources.tfrecord import METADATA
from daliaug.sources.webdataset import WebDatasetSource
from daliaug.tools.out_paths import replaced_folder, uploaded_folder

IMAGE_KEY = "image/encoded"
LABEL_KEY = "image/class/label"


def write_tfrecords(
    samples: Samples,
    out: Path,
    shards: int = 4,
    prefix: str = "data",
    progress: Callable[[int], None] | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Write ``samples`` (files with labels) to ``shards`` TFRecord files in ``out``, in order,
    plus the ``daliaug.json`` the ``tfrecord`` source reads class names from. ``out`` is new or
    empty, or with ``overwrite`` an earlier conversion's, replaced whole (written beside it
    and renamed into place: :func:`~daliaug.tools.out_paths.replaced_folder`).

    Each record holds ``image/encoded`` (the file's bytes), ``image/class/label`` (int64),
    ``image/format`` and ``image/filename``. ``progress`` is called with each record's count.
    """
    import tensorflow as tf

    labels = samples.labels
    assert labels is not None and samples.paths, "convert needs image files with labels"
    shards = max(1, min(shards, len(samples)))
    names = [f"{prefix}-{i:05d}-of-{shards:05d}.tfrecord" for i in range(shards)]
    n = len(samples)
    with replaced_folder(out, "convert: OUT", overwrite, METADATA) as tmp:
        for shard, name in enumerate(names):
            with tf.io.TFRecordWriter(str(tmp / name)) as writer:
                for i in range(n * shard // shards, n * (shard + 1) // shards):
                    source = samples.paths[i]
                    feature = {
                        IMAGE_KEY: _bytes(Path(source).read_bytes()),
                        LABEL_KEY: tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[int(labels[i])])
                        ),
                        "image/format": _bytes(image_header(source)[0].lower().encode()),
                        "image/filename": _bytes(Path(source).name.encode()),
                    }
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    writer.write(example.SerializeToString())
                    if progress is not None:
                        progress(1)
        meta = {
            "class_names": samples.class_names,
            "image_key": IMAGE_KEY,
            "label_key": LABEL_KEY,
            "count": n,
        }
        (tmp / METADATA).write_text(json.dumps(meta, indent=2))
    return [out / name for name in names]


def write_webdataset(
    samples: Samples,
    out: Path,
    shard_size: int = 1000,
    prefix: str = "data",
    progress: Callable[[int], None] | None = None,
    box_format: str = "xyxy",
    overwrite: bool = False,
    listing: WebDatasetSource | None = None,
) -> list[Path]:
    """Write ``samples`` in order to WebDataset tar shards of ``shard_size`` samples in
    ``out``, each with its index in DALI's ``wds2idx`` format (``<shard>.idx``), plus the
    ``daliaug.json`` the ``webdataset`` source reads class names from, and with ``listing``
    (a source of these shards) their listing file as that source makes it
    (:func:`shard_listings`; ``progress`` is then told each sample twice, written and
    checked). Sample ``k`` is
    ``{k:08d}.<jpg|png>`` (the file's bytes, or an in-memory image as PNG) and, with labels,
    ``.cls`` (the class index) and ``.json`` (``label``, ``class``, ``filename``); with boxes,
    ``.json`` holds ``boxes`` (in ``box_format``), ``labels`` (and ``keypoints``: ``x, y,
    visible``, relative for a ``rel_`` format), what ``targets: boxes`` reads; with masks,
    ``.mask.png`` holds the mask file's bytes, what ``targets: masks`` reads. Images and masks
    are files, shards' members or arrays. ``out`` is new or empty, or with ``overwrite`` an
    earlier conversion's, replaced whole."""
    if not {"label", "boxes", "mask_path", "mask_encoded"} & set(samples.columns):
        raise ConfigError(
            "convert --format webdataset: the source's samples have no labels, boxes or "
            "masks; shards are written from samples with targets"
        )
    if samples.has_boxes and not samples.sizes_known:  # (boxes written in pixels of each)
        raise ConfigError(
            "convert --format webdataset: the boxes' images were listed without their sizes "
            "(source.check: background); list them with source.check: full"
        )
    count = -(-len(samples) // shard_size)
    names = [f"{prefix}-{i:05d}-of-{count:05d}.tar" for i in range(count)]
    with replaced_folder(out, "convert: OUT", overwrite, METADATA) as tmp:
        for shard, name in enumerate(names):
            lines = []
            with tarfile.open(tmp / name, "w", format=tarfile.USTAR_FORMAT) as tar:
                for k in range(shard * shard_size, min(len(samples), (shard + 1) * shard_size)):
                    members = {**_image_member(samples, k), **_targets(samples, k, box_format)}
                    added = (_add_member(tar, f"{k:08d}", *m) for m in members.items())
                    lines.append(" ".join(added))
                    if progress is not None:
                        progress(1)
            index = f"v1.2 {len(lines)}\n" + "\n".join(lines) + "\n"
            (tmp / name).with_suffix(".idx").write_text(index)
        meta = {"class_names": samples.class_names, "count": len(samples)}
        (tmp / METADATA).write_text(json.dumps(meta, indent=2))
        if listing is not None:
            listing.write_listing(str(tmp), shard_listings(listing, tmp, progress))
    return [out / name for name in names]


def shard_listing_source(
    config: Config | None, samples: Samples, box_format: str
) -> WebDatasetSource:
    """The ``webdataset`` source that reads shards written from ``samples`` (with the mask
    fields of ``config``'s source, a segmentation source), whose listing file they get."""
    fields: dict[str, Any] = {"bounding_box_format": box_format}
    if samples.has_boxes:
        fields["targets"] = "boxes"
    elif "mask_path" in samples.columns or "mask_encoded" in samples.columns:
        fields["targets"] = "masks"
        mask_fields = set(MaskTargets.model_fields) - set(SourceConfig.model_fields)
        fields.update(config.source.model_dump(include=mask_fields))  # type: ignore[union-attr]
    return WebDatasetSource(path=".", **fields)


def shard_listings(
    listing: WebDatasetSource, folder: Path, progress: Callable[[int], None] | None = None
) -> dict[str, dict[str, Any]]:
    """The listing of each shard in ``folder`` (by name) with the settings of ``listing``,
    each image decoded once (the full check; ``progress`` told each shard's samples); nothing
    kept in this host's cache."""
    source = listing.model_copy(update={"path": str(folder)})
    (entries,) = source.folder_listings(False, progress).values()
    return entries


def upload_webdataset(
    out: str,
    overwrite: bool,
    write: Callable[[Path], list[Path]],
    listing: WebDatasetSource | None,
    progress: Callable[[int], None] | None = None,
    uploading: Callable[[int], Callable[[int], None]] | None = None,
) -> list[str]:
    """Shards written by ``write`` (into a local folder, without their listing file), uploaded
    under the ``s3://`` prefix ``out`` (:func:`~daliaug.tools.out_paths.uploaded_folder`, with
    its ``uploading`` progress); with ``listing``, their listing file then written beside
    them, holding each shard's ETag as the server gives it (so every start on any host reads
    that file, not the shards; ``progress``: as for :func:`write_webdataset`)."""
    out = out.rstrip("/")
    entries: dict[str, dict[str, Any]] = {}

    def listed() -> None:  # (once the shards are up: their ETags)
        if listing is None:
            return
        now = identities([f"{out}/{name}" for name in entries])
        for name, entry in entries.items():
            entry["identity"] = now.get(f"{out}/{name}") or identity(f"{out}/{name}")
        listing.write_listing(out, entries)

    with uploaded_folder(out, "convert: OUT", overwrite, METADATA, listed, uploading) as local:
        files = write(local)
        if listing is not None:
            entries.update(shard_listings(listing, local, progress))
    return [f"{out}/{file.name}" for file in files]


def _image_member(samples: Samples, k: int) -> dict[str, bytes]:
    """Sample ``k``'s image member: its file's (or shard member's) bytes, or its array as
    PNG."""
    data = _encoded(samples, "path", "encoded", k)
    if data is not None:
        kind = "jpg" if image_header(f"sample {k}", data)[0] == "JPEG" else "png"
        return {kind: data}
    from PIL import Image

    image = np.asarray(samples.columns["image"][k])
    encoded = io.BytesIO()
    Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(encoded, "PNG")
    return {"png": encoded.getvalue()}


def _targets(samples: Samples, k: int, box_format: str) -> dict[str, bytes]:
    """Sample ``k``'s target members: ``cls`` and ``json`` of its label, ``json`` of its
    boxes in ``box_format``, or ``mask.png``."""
    name = Path(samples.paths[k]).name if samples.paths else f"sample {k}"
    mask = _encoded(samples, "mask_path", "mask_encoded", k)
    if mask is not None:
        return {"mask.png": mask}
    if not samples.has_boxes:
        label = int(samples.columns["label"][k])
        meta = {"label": label, "class": samples.class_names[label], "filename": name}
        return {"cls": str(label).encode(), "json": json.dumps(meta).encode()}
    height, width = (float(v) for v in samples.sizes[k])
    boxes = from_xyxy(samples.columns["boxes"][k].reshape(-1, 4), box_format, (height, width))
    meta = {
        "boxes": boxes.tolist(),
        "labels": samples.columns["box_labels"][k].tolist(),
        "filename": name,
    }
    if "keypoints" in samples.columns:
        points = np.array(samples.columns["keypoints"][k], np.float32)
        if box_format.startswith("rel_"):
            points[..., :2] /= (width, height)
        meta["keypoints"] = points.tolist()
    return {"json": json.dumps(meta).encode()}


def _encoded(samples: Samples, files: str, members: str, k: int) -> bytes | None:
    """Sample ``k``'s bytes: its file of ``samples.files[files]``, or its member of the column
    ``members`` (shards, S3 objects); ``None`` where it has neither (arrays)."""
    if files in samples.files:
        return Path(samples.files[files][k]).read_bytes()
    column = samples.columns.get(members)
    return column.member(k) if isinstance(column, MemberColumn) else None


def _add_member(tar: tarfile.TarFile, key: str, ext: str, data: bytes) -> str:
    """Add member ``key.ext`` holding ``data``; its ``wds2idx`` entry."""
    info = tarfile.TarInfo(f"{key}.{ext}")
    info.size = len(data)
    offset = tar.offset + tarfile.BLOCKSIZE  # the header block comes first
    tar.addfile(info, io.BytesIO(data))
    return f"{ext} {offset} {len(data)} {key}.{ext}"


def _bytes(value: bytes) -> object:
    import tensorflow as tf

    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def keras_config(model: Path, source: Path, image_size: Sequence[int] | None = None) -> Config:
    """The daliaug config of the leading preprocessing layers of the Keras model saved at
    ``model``, reading class folders at ``source``."""
    import keras

    from daliaug.keras.compile import from_keras

    if not model.is_file():
        raise ConfigError(f"--from-keras: no model file {model}")
    if model.suffix == ".keras" and not zipfile.is_zipfile(model):
        with open(model, "rb") as f:
            head = f.read(4)
        raise ConfigError(
            f"--from-keras: {model} is not a saved Keras model: a .keras file is a zip archive "
            f"and this one is not (its first bytes are {head!r}); save the model again with "
            "model.save('name.keras')"
        )
    try:
        loaded = keras.saving.load_model(model, compile=False)
    except Exception as e:  # Keras raises many kinds for a file it cannot read
        raise ConfigError(f"--from-keras: cannot load the Keras model {model}: {e}") from e
    return from_keras(
        loaded, source={"type": "directory", "path": str(source)}, image_size=image_size
    )
