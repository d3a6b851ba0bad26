"""The DALI graph of a config: read, decode (with ROI), one warp, one colour pass, normalize.

This module never imports TensorFlow: it runs on hosts that only have DALI.

Samples arrive one batch at a time through ``external_source`` nodes (:data:`INPUTS`): the
source's columns (``path`` and ``mask_path``: file names read with ``fn.io.file.read``;
``image``: uint8 HWC arrays; ``label``: int32; ``record``: a TFRecord image packed with its
length, label and plan inputs, see :func:`_unpack_record`) and what the host computed for
each sample from the plan (:meth:`Plan.warp_inputs`), flattened into one float32 vector
``warp``: the decode window, the warp matrices and the colour matrix. Computing those
per-sample numbers on the host, vectorized over the batch (TensorFlow or NumPy), keeps the
graph to a handful of operators; as DALI operators, scalar arithmetic costs about a
microsecond per sample and operation. The inputs are either named
placeholders, fed by TensorFlow through ``DALIDatasetWithInputs``, or one Python callable
returning them all. The last batch of an epoch may be smaller.

Only when DALI's own TFRecord reader feeds the graph (:class:`RecordSamples`, for DALI-only
use) are the parameters drawn and the plan evaluated inside the graph, since the host never
sees those images.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali import tfrecord as tfrec
from nvidia.dali.pipeline import DataNode, Pipeline

from daliaug.algebra import Canvas
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
    "warp": (types.FLOAT, 1),
}
"""Every input the graph can take: its DALI dtype and number of dimensions per sample."""

_DTYPES = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8}


@dataclass(frozen=True)
class GraphOptions:
    """How to build the graph around a config."""

    device: Device
    num_classes: int
    inputs: tuple[str, ...]
    """The inputs fed per batch (of :data:`INPUTS`), in this order."""
    feed: Callable[[], tuple[np.ndarray, ...]] | None = None
    """One callable returning a batch of every input; ``None`` for named placeholders."""
    records: RecordSamples | None = None
    """Read these TFRecords with DALI's reader (and draw the parameters in the graph)."""


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
        stick_to_shard=True,
        pad_last_batch=True,
        seed=config.seed,
        name="records",
    )
    return out[records.image_key], fn.cast(out[records.label_key][0], dtype=types.INT32)


def _warp_in_graph(encoded: DataNode, config: Config) -> dict[str, object]:
    """The plan's inputs drawn and computed inside the graph (DALI's TFRecord reader only)."""
    plan = config.plan
    shape = fn.cast(fn.peek_image_shape(encoded, adjust_orientation=False), dtype=types.FLOAT)
    source = Canvas(h=shape[0], w=shape[1])
    values = plan.warp_inputs(plan.draw(DaliRandom()), source, MATH, **plan.graph_feed(("record",)))
    return {name: as_tensor_arg(v, plan.warp_input_shape(name)) for name, v in values.items()}


def _split_warp(floats: DataNode, names: tuple[str, ...], plan: Plan) -> dict[str, DataNode]:
    """The plan's inputs ``names``, sliced out of one flat float32 vector per sample and
    reshaped (see :meth:`Plan.warp_width`)."""
    warp, offset = {}, 0
    for name in names:
        shape = plan.warp_input_shape(name)
        size = int(np.prod(shape))
        warp[name] = fn.reshape(floats[offset : offset + size], shape=list(shape))
        offset += size
    return warp


def _unpack_record(record: DataNode, config: Config) -> tuple[DataNode, DataNode, dict]:
    """Split a packed TFRecord row: image length and label (int32 each), the plan's inputs
    (float32, in ``warp_input_names`` order), then the encoded image (zero-padded)."""
    plan = config.plan
    names = plan.warp_input_names(**plan.graph_feed(("record",)))
    width = plan.warp_width(names)
    start = 8 + 4 * width
    length = fn.reinterpret(record[0:4], dtype=types.INT32, shape=[1])[0]
    label = fn.reinterpret(record[4:8], dtype=types.INT32, shape=[1])[0]
    floats = fn.reinterpret(record[8:start], dtype=types.FLOAT, shape=[width])
    return record[start : start + length], label, _split_warp(floats, names, plan)


def _decoder(device: Device, image_type: types.DALIImageType) -> dict[str, object]:
    return {
        "device": "mixed" if device == "gpu" else "cpu",
        "output_type": image_type,
        "adjust_orientation": False,
    }


def resample(
    image: DataNode,
    warp: dict[str, object],
    prefix: str,
    config: Config,
    nearest: bool,
    fill: object,
) -> DataNode:
    """Resample once to ``image_size``: a resize of a source window when the plan is an
    axis-aligned map that clamps at the border (``resize_start``/``resize_end``), else an
    affine warp (``matrix``, destination to source)."""
    interp = types.INTERP_NN if nearest else types.INTERP_LINEAR
    size = [float(s) for s in config.image_size]
    if f"{prefix}resize_start" in warp:
        return fn.resize(
            image,
            size=size,
            roi_start=warp[f"{prefix}resize_start"],
            roi_end=warp[f"{prefix}resize_end"],
            roi_relative=False,
            interp_type=interp,
            antialias=False,
        )
    return fn.warp_affine(
        image,
        matrix=warp[f"{prefix}matrix"],
        size=size,
        interp_type=interp,
        **({} if fill == "nearest" else {"fill_value": float(fill)}),
    )


def augment(
    encoded: DataNode | None,
    image: DataNode | None,
    warp: dict[str, object],
    config: Config,
    device: Device,
) -> DataNode:
    """Decode (``encoded``) or take (``image``) a batch of images, warp, recolour, normalize."""
    image_type = types.RGB if config.channels == 3 else types.GRAY
    if encoded is None:
        assert image is not None
        image = image.gpu() if device == "gpu" else image
    elif "crop_start" in warp:
        image = fn.decoders.image_slice(
            encoded,
            warp["crop_start"],
            warp["crop_shape"],
            normalized_anchor=False,
            normalized_shape=False,
            axis_names="WH",
            **_decoder(device, image_type),
        )
    else:
        image = fn.decoders.image(encoded, **_decoder(device, image_type))
    image = resample(image, warp, "", config, nearest=False, fill=config.fill)
    if "colour" in warp:
        image = fn.coord_transform(image, MT=warp["colour"], dtype=types.UINT8)
    mean, std = config.output.mean_std(config.channels)
    return fn.crop_mirror_normalize(
        image,
        dtype=_DTYPES[config.output.dtype],
        output_layout="HWC" if config.output.layout == "NHWC" else "CHW",
        mean=mean,
        std=std,
    )


def _colour_to_index(mask: DataNode, source: SegmentationSource) -> DataNode:
    """Class index of each colour of the table; anything else (the fill) is ``ignore_index``."""
    table = source.class_table()
    assert table is not None
    key = fn.coord_transform(mask, M=[65536.0, 256.0, 1.0], dtype=types.FLOAT)[:, :, 0]
    index = source.ignore_index
    for k, colour_key in enumerate(table.keys):
        index = index + (k - source.ignore_index) * (key == colour_key)
    return index


def mask_target(
    encoded: DataNode, warp: dict[str, object], config: Config, options: GraphOptions
) -> DataNode:
    """Decode masks, warp them like their images (nearest, ``ignore_index`` fill), and encode
    them as class indices or one-hot."""
    source = config.source
    assert isinstance(source, SegmentationSource)
    image_type = types.RGB if source.colour_coded else types.GRAY
    mask = fn.decoders.image(encoded, **_decoder(options.device, image_type))
    mask = resample(mask, warp, "mask_", config, nearest=True, fill=source.mask_fill)
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


def build_pipeline(config: Config, options: GraphOptions) -> Pipeline:
    """A DALI pipeline producing ``(images, labels or masks)`` batches."""

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.num_threads,
        device_id=config.device_id if options.device == "gpu" else None,
        seed=config.seed,
        prefetch_queue_depth=config.prefetch,
    )
    def graph() -> tuple[DataNode, DataNode]:
        nodes = _input_nodes(options) if options.inputs else {}
        label = nodes.get("label")
        if options.records is not None:
            encoded, label = _read_records(options.records, config)
            warp = _warp_in_graph(encoded, config)
        elif "record" in nodes:
            encoded, label, warp = _unpack_record(nodes["record"], config)
        else:
            encoded = fn.io.file.read(nodes["path"]) if "path" in nodes else None
            plan = config.plan
            names = plan.warp_input_names(**plan.graph_feed(nodes))
            warp = _split_warp(nodes["warp"], names, plan)
        images = augment(encoded, nodes.get("image"), warp, config, options.device)
        if "mask_path" in nodes:
            masks = fn.io.file.read(nodes["mask_path"])
            return images, mask_target(masks, warp, config, options)
        return images, label_target(label, config, options)

    return graph()
