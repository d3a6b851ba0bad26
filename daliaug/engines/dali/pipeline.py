"""The DALI graph of a config: read, decode (with ROI), one warp, one colour pass, normalize.

This module never imports TensorFlow: it runs on hosts that only have DALI.

Samples arrive one batch at a time through ``external_source`` nodes, one per input of the
feed protocol (:mod:`daliaug.engines.feed`): the source's columns, or packed TFRecord rows,
and ``warp``, the plan evaluated for each sample on the host. Computing those per-sample
numbers on the host, vectorized over the batch, keeps the graph to a handful of operators; as
DALI operators, scalar arithmetic costs about a microsecond per sample and operation. The inputs
are either named placeholders, fed by TensorFlow through ``DALIDatasetWithInputs``, or one
Python callable returning them all (:class:`~daliaug.outputs.dali_loader.DaliLoader`). The last
batch of an epoch may be smaller.

Only when DALI's own TFRecord reader feeds the graph (DALI-only hosts) are the parameters drawn
and the plan evaluated inside the graph, since the host never sees those images.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from nvidia.dali import fn, types
from nvidia.dali import tfrecord as tfrec
from nvidia.dali.pipeline import DataNode, Pipeline

from daliaug.algebra import Canvas
from daliaug.batch_layout import BatchLayout
from daliaug.engine_spec import EngineSpec
from daliaug.engines.dali import pixels
from daliaug.engines.dali.branches import conditional_pipeline
from daliaug.engines.dali.canary import window_mode
from daliaug.engines.dali.image import (
    decode,
    finish,
    label_target,
    mask_target,
    recolours,
    resample,
    stage_column,
)
from daliaug.engines.dali.math import MATH, DaliRandom, as_tensor_arg
from daliaug.engines.feed import (
    WARP_PART,
    FeedForm,
    RecordLayout,
    WarpLayout,
    graph_inputs,
    input_spec,
)
from daliaug.engines.select import Device, dali_gpu_count
from daliaug.errors import BackendError
from daliaug.plan import Plan
from daliaug.reader_checkpoints import keeps
from daliaug.run import Run
from daliaug.sources.tfrecord import RecordSamples

_TYPES = {"uint8": types.UINT8, "int32": types.INT32, "float32": types.FLOAT}

RESIZES = True
"""The DALI graph resamples axis-aligned plans as resizes of a source window (``fn.resize``,
about three times faster on the CPU than ``fn.warp_affine``)."""

GPU_INPUTS = frozenset({"image", "label", "target", "weight"})
"""The inputs only GPU operators read in a GPU graph. With :attr:`GraphOptions.gpu_inputs`
they come from GPU external sources (``external_source(device="gpu")``), so inputs already on
the GPU stay there and none is a CPU operator; the others (encoded images, the parts of
``warp``, packed records) feed the decoder or argument inputs, which read host memory."""


def feed_form(plan: Plan, columns: Sequence[str], device: Device) -> FeedForm:
    """How the graph on ``device`` takes a feed of these source columns: the files read on
    the host, each part of ``warp`` an input of its own (no CPU operator cuts a vector
    apart), on the GPU without the recolour predicate (every sample goes through the colour
    pass, which gives back the values of a sample it does not change exactly: cheaper there
    than splitting and merging the batch; on the CPU the pass is skipped where it changes
    nothing)."""
    names = WarpLayout.of(plan, columns, RESIZES).names
    skipped = {"recolour"} if device == "gpu" else set()
    return FeedForm(reads=True, warp=tuple(name for name in names if name not in skipped))


class Feed(Protocol):
    """A host feed of a graph's inputs, batch by batch: :meth:`part` gives the callable of one
    external source (DALI calls each once per batch)."""

    def part(self, names: Sequence[str]) -> Callable[[], tuple[Any, ...]]:
        """Each batch's inputs ``names``; ``StopIteration`` at an epoch's end."""


class DaliaugPipeline(Pipeline):
    """DALI's ``Pipeline``, whose ``build`` (which DALI's ``run`` and its framework iterators
    call too) raises :class:`~daliaug.errors.BackendError` (exit code 4) where the pipeline
    needs a GPU that DALI does not see, rather than DALI's ``RuntimeError`` from CUDA. Without
    a GPU the graph can still be defined and checked (:mod:`daliaug.engines.dali.check`)."""

    def build(self) -> None:
        if not self._built and self.device_id is not None:
            count = dali_gpu_count()
            if self.device_id >= count:
                raise BackendError(
                    f"this DALI pipeline runs on GPU {self.device_id}, but DALI sees {count} "
                    "CUDA GPU(s) here; build it for the CPU instead "
                    "(build_pipeline(config, 'cpu'), or backend: cpu)"
                )
        super().build()


@dataclass(frozen=True)
class GraphOptions:
    """How to build a run's graph around its spec."""

    num_classes: int
    inputs: tuple[str, ...]
    """The inputs fed per batch (of the feed protocol's ``INPUTS``), in this order."""
    batch: BatchLayout
    """What a batch holds and the order of the graph's outputs."""
    feed: Feed | None = None
    """The host's feed of the inputs; ``None`` for named placeholders."""
    records: RecordSamples | None = None
    """Read these TFRecords with DALI's reader (and draw the parameters in the graph)."""
    target_shape: tuple[int, ...] = ()
    """The per-sample shape of the ``target`` input (``label_mode: raw``)."""
    gpu_inputs: bool = False
    """Named placeholders of :data:`GPU_INPUTS` take GPU tensors (a GPU-placed dataset's
    inputs, copied to the GPU)."""
    size_hint: tuple[int, int] | None = None
    """The largest ``(height, width)`` of the images, where known: the hardware JPEG
    decoder's buffers are allocated for it up front."""
    gpus: int = 1
    """The GPU pipelines this process runs side by side, sharing its cores (see
    :meth:`Config.dali_threads`)."""
    checkpointing: bool = False
    """DALI keeps the pipeline's checkpoints (its own reader's, :mod:`daliaug.resume`)."""
    checkpoint: bytes | None = None
    """The checkpoint (DALI's) the pipeline is restored from when it is built."""


def _input_nodes(options: GraphOptions, layout: WarpLayout) -> dict[str, DataNode]:
    """One external source per input (of ``layout`` where a part of ``warp``): named
    placeholders, or one group per device fed by the host's feed; the inputs that only GPU
    operators read come from GPU external sources with :attr:`GraphOptions.gpu_inputs`."""
    groups: dict[str, list[str]] = {}
    for name in options.inputs:
        gpu = options.gpu_inputs and name in GPU_INPUTS
        groups.setdefault("gpu" if gpu else "cpu", []).append(name)

    def described(names: Sequence[str]) -> dict[str, list]:
        specs = [input_spec(name, layout) for name in names]
        return {
            "dtype": [_TYPES[spec.dtype] for spec in specs],
            "ndim": [len(options.target_shape) if spec.ndim < 0 else spec.ndim for spec in specs],
            "layout": [spec.layout for spec in specs],
        }

    nodes = {}
    for device, names in groups.items():
        if options.feed is None:
            for name in names:
                one = {key: values[0] for key, values in described([name]).items()}
                nodes[name] = fn.external_source(name=name, device=device, batch=True, **one)
            continue
        outputs = fn.external_source(
            source=options.feed.part(names),
            num_outputs=len(names),
            device=device,
            batch=True,
            **described(names),
        )
        nodes.update(zip(names, outputs, strict=True))
    return nodes


def _read_records(records: RecordSamples, spec: EngineSpec) -> tuple[DataNode, DataNode]:
    out = fn.readers.tfrecord(
        path=records.files,
        index_path=records.index_files,
        features={
            records.image_key: tfrec.FixedLenFeature((), tfrec.string, ""),
            records.label_key: tfrec.FixedLenFeature([1], tfrec.int64, -1),
        },
        random_shuffle=spec.shuffle,
        shard_id=records.shard_id,
        num_shards=records.num_shards,
        stick_to_shard=True,
        pad_last_batch=True,
        seed=spec.seed,
        name="records",
    )
    return out[records.image_key], fn.cast(out[records.label_key][0], dtype=types.INT32)


def _warp_in_graph(encoded: DataNode, layout: WarpLayout) -> dict[str, object]:
    """The plan's inputs drawn and computed inside the graph (DALI's TFRecord reader only)."""
    plan = layout.plan
    shape = fn.cast(fn.peek_image_shape(encoded, adjust_orientation=False), dtype=types.FLOAT)
    values = plan.warp_inputs(
        plan.draw(DaliRandom()),
        Canvas(h=shape[0], w=shape[1]),
        MATH,
        fuse_roi=layout.fuse_roi,
        masks=layout.masks,
        resize=layout.resize,
    )
    warp = {name: as_tensor_arg(values[name], layout.shape(name)) for name in values}
    if "recolour" in layout.names:
        warp["recolour"] = recolours(warp, plan.channels)
    return warp


def _reshape(node: DataNode, shape: list[int]) -> DataNode:
    return fn.reshape(node, shape=shape)


def _warp(nodes: dict[str, DataNode], layout: WarpLayout) -> dict[str, DataNode]:
    """The plan's per-sample inputs: its parts where each is an input of its own
    (:class:`FeedForm`), else the one ``warp`` vector cut apart."""
    if "warp" in nodes:
        return layout.unpack(nodes["warp"], _reshape)
    return {
        name.removeprefix(WARP_PART): node
        for name, node in nodes.items()
        if name.startswith(WARP_PART)
    }


def _unpack_record(
    record: DataNode, layout: RecordLayout
) -> tuple[DataNode, DataNode, DataNode, dict]:
    """Split packed TFRecord rows (:class:`RecordLayout`): image bytes, label, weight, warp."""

    def scalar(part: slice, dtype: types.DALIDataType) -> DataNode:
        return fn.reinterpret(record[part], dtype=dtype, shape=[1])[0]

    length = scalar(layout.length, types.INT32)
    floats = fn.reinterpret(record[layout.warp_bytes], dtype=types.FLOAT, shape=[layout.warp.width])
    start = layout.image_start
    encoded = record[start : start + length]
    weight = scalar(layout.weight, types.FLOAT)
    return encoded, scalar(layout.label, types.INT32), weight, layout.warp.unpack(floats, _reshape)


def _mask_stages(
    plan: Plan, column: Callable[[int | slice], DataNode], fill: float, masks: DataNode
) -> DataNode:
    """Masks (HWC) through the plan's pixel stages that move pixels, then its batch stages
    (cuts only: the config refuses blends)."""
    masks = plan.mask_pixels(masks, column, pixels, fill)
    return plan.batch_targets(masks, column, pixels, masks=True)


def define_pipeline(spec: EngineSpec, options: GraphOptions) -> Pipeline:
    """The DALI pipeline of ``spec`` producing the flat batches of :attr:`GraphOptions.batch`
    (``(images, targets[, weights])``; the targets as its :data:`~daliaug.batch_layout.Target`
    says)."""
    # the window mode only where a window is decoded (on a GPU, decode_window: auto asks the
    # canary, a child process)
    device, num_classes = spec.device, options.num_classes
    plan, warp_fill = spec.plan, spec.fill
    windows = plan.roi_step is not None and "image" not in options.inputs
    mode = window_mode(spec.decode_window, device, spec.device_id) if windows else "whole"

    def on_device(node: DataNode) -> DataNode:
        return node.gpu() if device == "gpu" else node

    def graph() -> tuple[DataNode, ...]:
        layout = WarpLayout.of(plan, options.inputs, RESIZES)
        nodes = _input_nodes(options, layout) if options.inputs else {}
        label, weight = nodes.get("label", nodes.get("target")), nodes.get("weight")
        if options.records is not None:
            encoded, label = _read_records(options.records, spec)
            warp = _warp_in_graph(encoded, WarpLayout.of(plan, ("record",), RESIZES))
        elif "record" in nodes:
            layout = RecordLayout(WarpLayout.of(plan, ("record",), RESIZES))
            encoded, label, packed_weight, warp = _unpack_record(nodes["record"], layout)
            weight = packed_weight
        else:
            encoded = fn.io.file.read(nodes["path"]) if "path" in nodes else nodes.get("encoded")
            warp = _warp(nodes, layout)
        if encoded is None:
            image = on_device(nodes["image"])
        else:
            image = decode(encoded, warp, spec, options.size_hint, mode)
        nearest = spec.interpolation == "nearest"
        cut = spec.fill_edge == "cut"
        image = resample(image, warp, "", spec, nearest, warp_fill, cut=cut)
        column = stage_column(warp)  # each stage parameter read once for the whole graph
        image = finish(image, warp, spec, plan, column)
        named = {"images": image}
        target = options.batch.target
        if target == "boxes":  # moved on the host (daliaug.detection): passed through
            named |= {name: on_device(nodes[name]) for name in options.batch.boxes}
        elif target == "masks":
            masks = fn.io.file.read(nodes["mask_path"]) if "mask_path" in nodes else None
            masks = nodes["mask_encoded"] if masks is None else masks
            stages = None
            if plan.batch_stages or plan.moves_masks:
                assert spec.masks is not None  # a mask source gives masks
                fill = float(spec.masks.mask_fill)
                stages = partial(_mask_stages, plan, column, fill)
            named["targets"] = mask_target(masks, warp, spec, num_classes, stages)
        elif target == "images":
            named["targets"] = image
        elif target == "labels":
            labels = label_target(label, spec, num_classes)
            if plan.batch_stages:  # soft labels
                labels = plan.batch_targets(labels, column, pixels, masks=False)
            named["targets"] = labels
        if options.batch.weights:
            named["weights"] = on_device(weight)
        return options.batch.flat(named)

    pipe = conditional_pipeline(
        graph,
        batch_size=spec.batch_size,
        num_threads=spec.dali_threads(options.gpus),
        device_id=spec.device_id if device == "gpu" else None,
        seed=spec.seed,
        prefetch_queue_depth=spec.prefetch,
        enable_checkpointing=options.checkpointing,
        checkpoint=options.checkpoint,
    )
    # pipeline_def makes a plain Pipeline; DaliaugPipeline holds no state of its own
    pipe.__class__ = DaliaugPipeline
    return pipe


def reader_pipeline(run: Run, gpus: int = 1, checkpoint: bytes | None = None) -> Pipeline | None:
    """The run's pipeline (not built) where DALI's own reader reads its samples (TFRecords,
    whose parameters are then drawn in the graph), keeping checkpoints on the devices of
    :data:`~daliaug.reader_checkpoints.CHECKPOINTED` and restored from ``checkpoint``
    if given; ``None`` where the host feeds them. The one
    place that picks DALI's reader for a kind of
    :class:`~daliaug.sources.sample_set.SampleSet`. ``gpus``: see
    :attr:`GraphOptions.gpus`."""
    samples = run.samples
    if not isinstance(samples, RecordSamples):
        return None
    if samples.on_s3 and _tensorflow_before_dali():
        raise BackendError(
            f"source.path: DALI's S3 client would end this process, which loaded TensorFlow "
            f"before DALI (TensorFlow's BoringSSL then stands in for the libcrypto that DALI's "
            f"TLS library checks, and it aborts), so DALI cannot read the TFRecords at "
            f"{samples.files[0]}... here: import nvidia.dali before TensorFlow, use "
            f"framework='tensorflow' (TensorFlow reads them through boto3), or read them in a "
            f"process without TensorFlow"
        )
    options = GraphOptions(
        samples.num_classes,
        (),
        run.layout(),
        records=samples,
        gpus=gpus,
        checkpointing=keeps(run.device),
        checkpoint=checkpoint,
    )
    return define_pipeline(run.spec, options)


def _tensorflow_before_dali() -> bool:
    """Whether TensorFlow's runtime was loaded before DALI's (``sys.modules`` keeps the order
    of imports; an extension module's entries follow the loading of its library). Its
    libraries export BoringSSL's symbols to the whole process; with TensorFlow 2.21 and DALI
    2.4, DALI's first S3 read then aborts the process, unless DALI was loaded first."""
    names = list(sys.modules)

    def first(prefix: str) -> int:
        return next((i for i, name in enumerate(names) if name.startswith(prefix)), -1)

    tensorflow = first("tensorflow.python._pywrap_tensorflow_internal")
    dali = first("nvidia.dali.backend_impl")
    return 0 <= tensorflow < dali


def named_pipeline(run: Run, weighted: bool, gpu_inputs: bool = False, gpus: int = 1) -> Pipeline:
    """The run's pipeline ``make_dataset`` feeds through ``DALIDatasetWithInputs``: one named
    placeholder per input (:func:`~daliaug.engines.feed.graph_inputs`); ``gpu_inputs``: the
    inputs arrive on the GPU (see :data:`GPU_INPUTS`); ``gpus``: see
    :attr:`GraphOptions.gpus`."""
    spec, samples, device = run.spec, run.samples, run.device
    form = feed_form(spec.plan, samples.column_names, device)
    options = GraphOptions(
        samples.num_classes,
        graph_inputs(samples, weighted, spec.label_mode, form),
        run.layout(weighted),
        target_shape=samples.target_shape,
        gpu_inputs=gpu_inputs and device == "gpu",
        size_hint=samples.size_hint,
        gpus=gpus,
    )
    return define_pipeline(spec, options)
