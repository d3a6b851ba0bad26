"""The DALI graph of a config: read, decode (with ROI), one warp, one colour pass, normalize.

This module never imports TensorFlow: it runs on hosts that only have DALI.

Samples arrive one batch at a time through ``external_source`` nodes named after the source's
columns (see :mod:`daliaug.sources.base`): ``path`` and ``mask_path`` (file names, read with
``fn.io.file.read``), ``image`` (uint8 HWC arrays), ``label`` (int32), ``record`` (a TFRecord
image packed with its length and label, see :func:`pack_records`) and, with explicit
parameters, ``params`` (float32, one row of :attr:`Plan.param_keys` per sample). The inputs
are either named placeholders, fed by TensorFlow through ``DALIDatasetWithInputs``, or one
Python callable returning all of them. The last batch of an epoch may be smaller. Alternatively
DALI's own TFRecord reader feeds the graph (:class:`RecordSamples`, for DALI-only use).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali import tfrecord as tfrec
from nvidia.dali.pipeline import DataNode, Pipeline

from daliaug.algebra import Affine, Canvas, is_const
from daliaug.config import Config
from daliaug.dali_ops import MATH, DaliRandom, as_tensor_arg
from daliaug.plan import Plan
from daliaug.sources.segmentation import SegmentationSource
from daliaug.sources.tfrecord import RecordSamples

Device = Literal["cpu", "gpu"]

INPUTS = {
    "path": (types.UINT8, 1),
    "mask_path": (types.UINT8, 1),
    "image": (types.UINT8, 3),
    "label": (types.INT32, 0),
    "record": (types.UINT8, 1),
    "params": (types.FLOAT, 1),
}
"""Every input the graph can take: its DALI dtype and number of dimensions per sample."""

_DTYPES = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8}
RECORD_HEADER = 8
"""Bytes before a packed record's image: its length and its label, int32 little-endian each."""


@dataclass(frozen=True)
class GraphOptions:
    """How to build the graph around a config."""

    device: Device
    num_classes: int
    inputs: tuple[str, ...] = ("path", "label")
    """The inputs fed per batch, in this order (``params`` last when given explicitly)."""
    feed: Callable[[], tuple[np.ndarray, ...]] | None = None
    """One callable returning a batch of every input; ``None`` for named placeholders."""
    records: RecordSamples | None = None
    """Read these TFRecords with DALI's reader instead of taking images from the inputs."""
    image_shape: tuple[int, int] | None = None
    """The fixed (height, width) of ``image`` inputs, when every array has the same size."""
    return_params: bool = False
    """Also output the ``params`` used, one row per sample (for tests and the parity harness)."""


def pack_records(encoded: list[bytes], labels: np.ndarray) -> np.ndarray:
    """The ``record`` input: each row is length, label, then the encoded image, zero-padded."""
    rows = np.zeros((len(encoded), RECORD_HEADER + max(map(len, encoded), default=0)), np.uint8)
    for i, (data, label) in enumerate(zip(encoded, labels, strict=True)):
        head = np.array([len(data), label], dtype="<i4").tobytes()
        rows[i, : RECORD_HEADER + len(data)] = np.frombuffer(head + data, dtype=np.uint8)
    return rows


def _input_nodes(options: GraphOptions) -> dict[str, DataNode]:
    specs = [INPUTS[name] for name in options.inputs]
    layouts = ["HWC" if name == "image" else None for name in options.inputs]
    if options.feed is not None:
        nodes = fn.external_source(
            source=options.feed,
            num_outputs=len(specs),
            dtype=[dtype for dtype, _ in specs],
            ndim=[ndim for _, ndim in specs],
            layout=layouts,
            batch=True,
        )
    else:
        nodes = [
            fn.external_source(name=name, dtype=dtype, ndim=ndim, layout=layout, batch=True)
            for name, (dtype, ndim), layout in zip(options.inputs, specs, layouts, strict=True)
        ]
    return dict(zip(options.inputs, nodes, strict=True))


def _read_records(records: RecordSamples, config: Config) -> tuple[DataNode, DataNode]:
    out = fn.readers.tfrecord(
        path=records.files,
        index_path=records.index_files,
        features={
            records.image_key: tfrec.FixedLenFeature((), tfrec.string, ""),
            records.label_key: tfrec.FixedLenFeature([1], tfrec.int64, -1),
        },
        random_shuffle=config.shuffle,
        shard_id=records.shard_id,
        num_shards=records.num_shards,
        pad_last_batch=True,
        seed=config.seed,
        name="records",
    )
    return out[records.image_key], fn.cast(out[records.label_key][0], dtype=types.INT32)


def _unpack_record(record: DataNode) -> tuple[DataNode, DataNode]:
    length = fn.reinterpret(record[0:4], dtype=types.INT32, shape=[1])[0]
    label = fn.reinterpret(record[4:8], dtype=types.INT32, shape=[1])[0]
    return record[RECORD_HEADER : RECORD_HEADER + length], label


def _decoder(device: Device, image_type: types.DALIImageType) -> dict[str, object]:
    return {
        "device": "mixed" if device == "gpu" else "cpu",
        "output_type": image_type,
        "adjust_orientation": False,
    }


def _warp(
    image: DataNode, forward: Affine, config: Config, nearest: bool, fill: object
) -> DataNode:
    """Resample once, from the source to ``image_size``, with the inverse of ``forward``."""
    return fn.warp_affine(
        image,
        matrix=as_tensor_arg(list(forward.inverse()), (2, 3)),
        size=[float(s) for s in config.image_size],
        interp_type=types.INTERP_NN if nearest else types.INTERP_LINEAR,
        **({} if fill == "nearest" else {"fill_value": float(fill)}),
    )


def augment(
    encoded: DataNode | None,
    image: DataNode | None,
    params: dict[str, object],
    config: Config,
    options: GraphOptions,
) -> tuple[DataNode, Affine]:
    """Decode (``encoded``) or take (``image``) a batch of images and augment it.

    Returns the images and the forward map from the full source image to the output, which
    masks follow.
    """
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    image_type = types.RGB if config.channels == 3 else types.GRAY
    if encoded is not None:
        shape = fn.cast(fn.peek_image_shape(encoded, adjust_orientation=False), dtype=types.FLOAT)
        canvas = Canvas(h=shape[0], w=shape[1])
    elif options.image_shape is not None:
        canvas = Canvas(*(float(s) for s in options.image_shape))
    else:
        shape = fn.cast(fn.shapes(image), dtype=types.FLOAT)
        canvas = Canvas(h=shape[0], w=shape[1])
    geometry = plan.geometry(params, canvas, MATH, fuse_roi=encoded is not None)
    if encoded is None:
        image = image.gpu() if options.device == "gpu" else image
    elif geometry.roi is not None:
        roi = geometry.roi
        image = fn.decoders.image_slice(
            encoded,
            fn.cast(fn.stack(roi.x, roi.y), dtype=types.INT32),
            fn.cast(fn.stack(roi.w, roi.h), dtype=types.INT32),
            axis_names="WH",
            **_decoder(options.device, image_type),
        )
    else:
        image = fn.decoders.image(encoded, **_decoder(options.device, image_type))
    image = _warp(image, geometry.forward, config, nearest=False, fill=config.fill)
    colour = plan.colour(params, MATH)
    if colour is not None:
        c = config.channels
        image = fn.coord_transform(
            image, MT=as_tensor_arg(colour.flat(), (c, c + 1)), dtype=types.UINT8
        )
    mean, std = config.output.mean_std(config.channels)
    image = fn.crop_mirror_normalize(
        image,
        dtype=_DTYPES[config.output.dtype],
        output_layout="HWC" if config.output.layout == "NHWC" else "CHW",
        mean=mean,
        std=std,
    )
    return image, geometry.source_forward


def _colour_to_index(mask: DataNode, source: SegmentationSource) -> DataNode:
    """Class index of each colour of the table; anything else (the fill) is ``ignore_index``."""
    table = source.class_table()
    assert table is not None
    # 256^2 R + 256 G + B < 2^24 is exact in float32
    key = fn.coord_transform(mask, M=[65536.0, 256.0, 1.0], dtype=types.FLOAT)[:, :, 0]
    index = source.ignore_index
    for k, (r, g, b) in enumerate(table.colours):
        index = index + (k - source.ignore_index) * (key == r * 65536 + g * 256 + b)
    return index


def _unused_grey(source: SegmentationSource) -> float:
    """A grey ``(v, v, v)`` that is no class colour: the fill of warped colour masks."""
    table = source.class_table()
    assert table is not None
    return float(next(v for v in range(256) if (v, v, v) not in table.colours))


def mask_target(
    encoded: DataNode, forward: Affine, config: Config, options: GraphOptions
) -> DataNode:
    """Decode masks, warp them like their images (nearest, ``ignore_index`` fill), and encode
    them as class indices or one-hot."""
    source = config.source
    assert isinstance(source, SegmentationSource)
    image_type = types.RGB if source.colour_coded else types.GRAY
    mask = fn.decoders.image(encoded, **_decoder(options.device, image_type))
    fill = _unused_grey(source) if source.colour_coded else float(source.ignore_index)
    mask = _warp(mask, forward, config, nearest=True, fill=fill)
    index = _colour_to_index(mask, source) if source.colour_coded else mask[:, :, 0]
    if source.mask_output == "index":
        dtype = types.UINT8 if source.mask_dtype == "uint8" else types.INT32
        return fn.cast(index, dtype=dtype)
    one_hot = fn.one_hot(
        fn.cast(index, dtype=types.INT32), num_classes=options.num_classes, dtype=types.FLOAT
    )
    return one_hot if config.output.layout == "NHWC" else fn.transpose(one_hot, perm=[2, 0, 1])


def label_target(label: DataNode, config: Config, options: GraphOptions) -> DataNode:
    if config.label_mode == "categorical":
        label = fn.one_hot(label, num_classes=options.num_classes, dtype=types.FLOAT)
    elif config.label_mode == "binary":
        label = fn.reshape(fn.cast(label, dtype=types.FLOAT), shape=[1])
    return label.gpu() if options.device == "gpu" else label


def _params_output(values: list[object]) -> DataNode:
    """The parameters of each sample as one float32 vector (constants included)."""
    if all(is_const(v) for v in values):
        return fn.constant(fdata=[float(v) for v in values] or [0.0], dtype=types.FLOAT)
    return as_tensor_arg(values, (-1,))


def build_pipeline(config: Config, options: GraphOptions) -> Pipeline:
    """A DALI pipeline producing ``(images, labels or masks[, params])`` batches."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.num_threads,
        device_id=config.device_id if options.device == "gpu" else None,
        seed=config.seed,
        prefetch_queue_depth=config.prefetch,
    )
    def graph() -> tuple[DataNode, ...]:
        nodes = _input_nodes(options) if options.inputs else {}
        label = nodes.get("label")
        if options.records is not None:
            encoded, label = _read_records(options.records, config)
        elif "record" in nodes:
            encoded, label = _unpack_record(nodes["record"])
        elif "path" in nodes:
            encoded = fn.io.file.read(nodes["path"])
        else:
            encoded = None
        if "params" in nodes:
            params = {key: nodes["params"][i] for i, key in enumerate(plan.param_keys)}
        else:
            params = plan.draw(DaliRandom())
        images, forward = augment(encoded, nodes.get("image"), params, config, options)
        if "mask_path" in nodes:
            target = mask_target(fn.io.file.read(nodes["mask_path"]), forward, config, options)
        else:
            target = label_target(label, config, options)
        outputs = [images, target]
        if options.return_params:
            outputs.append(_params_output([params[k] for k in plan.param_keys]))
        return tuple(outputs)

    return graph()
