"""The DALI graph of a config: read, decode (with ROI), one warp, one colour pass, normalize.

This module never imports TensorFlow: it runs on hosts that only have DALI.

Inputs come from ``external_source`` nodes, fed one batch at a time (the last batch of an epoch
may be smaller): ``path`` (file names as zero-padded UTF-8 bytes, read with
``fn.io.file.read``), ``label`` (int32) and, with explicit parameters, ``params`` (float32,
one row of :attr:`Plan.param_keys` per sample). They are either named placeholders, fed by
TensorFlow through ``DALIDatasetWithInputs``, or one Python callable returning all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.pipeline import DataNode, Pipeline

from daliaug.algebra import Canvas
from daliaug.config import Config
from daliaug.dali_ops import MATH, DaliRandom, as_tensor_arg
from daliaug.plan import Plan

Device = Literal["cpu", "gpu"]
INPUT_NAMES = ("path", "label", "params")

_DTYPES = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8}


@dataclass(frozen=True)
class GraphOptions:
    """How to build the graph around a config."""

    device: Device
    num_classes: int
    explicit_params: bool = False
    """Take parameters from the ``params`` input instead of drawing them in the graph."""
    feed: Callable[[], tuple[np.ndarray, ...]] | None = None
    """One callable returning ``(path, label[, params])`` batches; ``None`` for placeholders."""
    return_params: bool = False
    """Also output the ``params`` used, one row per sample (for tests and the parity harness)."""


def encode_paths(paths: list[str]) -> np.ndarray:
    """File names as a zero-padded ``uint8`` matrix, one row per file (``path`` input)."""
    raw = [p.encode("utf-8") for p in paths]
    out = np.zeros((len(raw), max(map(len, raw), default=1)), dtype=np.uint8)
    for i, b in enumerate(raw):
        out[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return out


def _inputs(options: GraphOptions) -> tuple[DataNode, DataNode, DataNode | None]:
    dtypes = [types.UINT8, types.INT32] + ([types.FLOAT] if options.explicit_params else [])
    ndims = [1, 0] + ([1] if options.explicit_params else [])
    if options.feed is not None:
        nodes = fn.external_source(
            source=options.feed, num_outputs=len(dtypes), dtype=dtypes, ndim=ndims, batch=True
        )
    else:
        nodes = [
            fn.external_source(name=name, dtype=dtype, ndim=ndim, batch=True)
            for name, dtype, ndim in zip(INPUT_NAMES, dtypes, ndims, strict=False)
        ]
    return nodes[0], nodes[1], nodes[2] if options.explicit_params else None


def _labels(label: DataNode, config: Config, num_classes: int) -> DataNode:
    if config.label_mode == "categorical":
        return fn.one_hot(label, num_classes=num_classes, dtype=types.FLOAT)
    if config.label_mode == "binary":
        return fn.reshape(fn.cast(label, dtype=types.FLOAT), shape=[1])
    return label


def augment(
    encoded: DataNode, params: dict[str, object], config: Config, device: Device
) -> DataNode:
    """Decode and augment a batch of encoded images as the config says."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    image_type = types.RGB if config.channels == 3 else types.GRAY
    decoder = {
        "device": "mixed" if device == "gpu" else "cpu",
        "output_type": image_type,
        "adjust_orientation": False,
    }
    shape = fn.cast(fn.peek_image_shape(encoded, adjust_orientation=False), dtype=types.FLOAT)
    geometry = plan.geometry(params, Canvas(h=shape[0], w=shape[1]), MATH)
    if geometry.roi is not None:
        roi = geometry.roi
        image = fn.decoders.image_slice(
            encoded,
            fn.cast(fn.stack(roi.x, roi.y), dtype=types.INT32),
            fn.cast(fn.stack(roi.w, roi.h), dtype=types.INT32),
            axis_names="WH",
            **decoder,
        )
    else:
        image = fn.decoders.image(encoded, **decoder)
    inverse = geometry.forward.inverse()
    fill = {} if config.fill == "nearest" else {"fill_value": float(config.fill)}
    image = fn.warp_affine(
        image,
        matrix=as_tensor_arg(list(inverse), (2, 3)),
        size=[float(s) for s in config.image_size],
        interp_type=types.INTERP_LINEAR,
        **fill,
    )
    colour = plan.colour(params, MATH)
    if colour is not None:
        c = config.channels
        image = fn.coord_transform(
            image, MT=as_tensor_arg(colour.flat(), (c, c + 1)), dtype=types.UINT8
        )
    mean, std = config.output.mean_std(config.channels)
    return fn.crop_mirror_normalize(
        image,
        dtype=_DTYPES[config.output.dtype],
        output_layout="HWC" if config.output.layout == "NHWC" else "CHW",
        mean=mean,
        std=std,
    )


def build_pipeline(config: Config, options: GraphOptions) -> Pipeline:
    """A DALI pipeline producing ``(images, labels[, params])`` batches for ``config``."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)

    @pipeline_def(
        batch_size=config.batch_size,
        num_threads=config.num_threads,
        device_id=config.device_id if options.device == "gpu" else None,
        seed=config.seed,
        prefetch_queue_depth=config.prefetch,
    )
    def graph() -> tuple[DataNode, ...]:
        path, label, given = _inputs(options)
        if given is not None:
            params = {key: given[i] for i, key in enumerate(plan.param_keys)}
        else:
            params = plan.draw(DaliRandom())
        images = augment(fn.io.file.read(path), params, config, options.device)
        labels = _labels(label, config, options.num_classes)
        if options.device == "gpu":
            labels = labels.gpu()
        outputs = [images, labels]
        if options.return_params:
            outputs.append(as_tensor_arg([params[k] for k in plan.param_keys] or [0.0], (-1,)))
        return tuple(outputs)

    return graph()
