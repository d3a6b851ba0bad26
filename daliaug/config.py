"""The pipeline config: one pydantic model, loaded from YAML, JSON, a shipped config's name or a
dict; a bad one is a :class:`~daliaug.errors.ConfigError` listing every bad field and rule."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from daliaug.boxes import BoxFormat
from daliaug.config_files import check_size, config_path, read_config_file
from daliaug.engine_names import Backend
from daliaug.errors import ConfigError
from daliaug.fields import (
    STRICT,
    BatchSize,
    BoxCount,
    DeviceId,
    Pixels,
    Prefetch,
    Seed,
    Share,
    Size,
    Threads,
    whole_number,
)
from daliaug.plan import Plan
from daliaug.sources import AnySource
from daliaug.transforms import AnyTransform, ColourTransform, GeometricTransform
from daliaug.transforms.base import (
    TF_ONLY_FILLS,
    BatchTransform,
    Fill,
    OffsetTransform,
    StageTransform,
)
from daliaug.transforms.normalize import Channels, Normalization, Normalize
from daliaug.transforms.random_resized_crop import RandomResizedCrop

HW_DECODER_LOAD = 0.99
"""Default :attr:`Config.hw_decoder_load`: MLPerf's ResNet-50 on H100 (6 DALI threads per
GPU). DALI's default, 0.65, and its own CI's Hopper rn50 setting, 0.12 (with 70 threads), leave
more to nvJPEG's CUDA decoder, whose Huffman stage needs many CPU threads per GPU. Not measured
by this project: ``bench/gpu_sweep.py`` sweeps it against the threads on a GPU host."""
GPU_PREFETCH = 5
"""Default prefetch queue depth of DALI on the GPU: MLPerf's ResNet-50 on H100. Not measured
by this project yet (``bench/README.md``)."""
CPU_PREFETCH = 2
"""Default prefetch depth elsewhere (DALI's own default): on the CPU a deeper queue adds no
speed, only host memory (:mod:`daliaug.memory`)."""
MAX_CPU_THREADS = 4
"""DALI on the CPU takes at most this many threads by default, leaving the other cores to the
framework it feeds."""


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, as ``taskset`` or a container's
    cpuset sets it; every core where the system does not say)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity on this system (macOS)
        return os.cpu_count() or 1


def default_threads(device: str, gpus: int = 1) -> int:
    """DALI's CPU threads by default: on the GPU, the cores this process may use
    (:func:`usable_cores`) shared evenly among the ``gpus`` GPU pipelines it runs (their CPU
    stages: file reads, nvJPEG's Huffman decoding, the CPU operators); on the CPU, one per
    core up to :data:`MAX_CPU_THREADS`. At least one."""
    cores = usable_cores()
    if device == "gpu":
        return max(1, cores // max(1, gpus))
    return max(1, min(MAX_CPU_THREADS, cores))


class Output(Normalization):
    """How images leave the pipeline: normalization, dtype and layout.

    ``(x - mean) / std`` or ``x * rescale`` on the 0..255 scale; with none of them the values
    stay 0..255. ``uint8`` output allows no normalization, and a normalization whose values
    would overflow the output dtype (``std: 1e-40``, or ``std: 0.001`` for ``float16``) is
    refused.
    """

    model_config = STRICT

    dtype: Literal["float32", "float16", "uint8"] = "float32"
    layout: Literal["NHWC", "NCHW"] = "NHWC"

    @model_validator(mode="after")
    def _dtype_holds_values(self) -> Output:
        if self.dtype == "uint8":
            if self.normalizes:
                raise ValueError(
                    "dtype uint8 cannot carry normalized values; use float32 or float16"
                )
            return self
        largest = float(np.finfo(self.dtype).max)
        means, stds = self.mean_std(1)  # every value given: a list stays whole
        reach = max(abs(v - m) / s for v in (0.0, 255.0) for m in means or [0] for s in stds or [1])
        if reach > largest:
            given = (
                f"rescale {self.rescale:g} maps"
                if self.rescale is not None
                else f"mean {self.mean} and std {self.std} map"
            )
            raise ValueError(
                f"{given} 0..255 to values up to {reach:.3g}, beyond the {largest:.3g} that "
                f"{self.dtype} holds"
            )
        return self

    def mean_std(self, channels: int) -> tuple[list[float], list[float]]:
        """Per-channel ``mean`` and ``std`` such that output = (x - mean) / std."""

        def per_channel(v: Channels | None, default: float) -> list[float]:
            if v is None:
                return [default] * channels
            return [float(v)] * channels if isinstance(v, (int, float)) else [float(x) for x in v]

        if self.rescale is not None:
            return [0.0] * channels, [1.0 / self.rescale] * channels
        return per_channel(self.mean, 0.0), per_channel(self.std, 1.0)


def target_column(label_mode: str) -> str | None:
    """The source column the targets of ``label_mode`` come from: ``target`` for ``raw``, none
    for ``input`` (the images are the targets) and ``none``, else ``label``."""
    if label_mode == "raw":
        return "target"
    return None if label_mode in ("input", "none") else "label"


def _permutation(indices: list[int]) -> list[int]:
    """``flip_indices`` that send each keypoint to one place and fill every place."""
    if sorted(indices) != list(range(len(indices))):
        raise ValueError(
            f"{indices} is not a permutation of 0..{len(indices) - 1}: a mirror sends each "
            "keypoint to one place (left and right swap), so each index appears once"
        )
    return indices


class Config(BaseModel):
    """A whole daliaug pipeline: where samples come from, how they are augmented, what comes out.

    Counts and sizes are whole numbers within what the engines take (``image_size`` sides up
    to 16384, ``batch_size`` up to 65536, ``num_threads`` up to 1024, ``seed`` from 0 to
    2**63 - 1; see :mod:`daliaug.fields`); floats are finite.
    """

    model_config = STRICT

    source: AnySource
    image_size: Size
    channels: Annotated[int, Field(ge=1, le=64), BeforeValidator(whole_number)] = 3
    """1 (grey) or 3 (RGB) for files; in-memory arrays may have any number of channels."""
    batch_size: BatchSize = 32
    shuffle: bool = True
    seed: Seed | None = None
    label_mode: Literal["int", "categorical", "binary", "float", "raw", "input", "none"] = "int"
    drop_remainder: bool = False
    transforms: list[AnyTransform] = []
    interpolation: Literal["linear", "nearest"] = "linear"
    fill_edge: Literal["blend", "cut"] = "blend"
    """Where a constant fill meets the image: ``blend`` (a sample within half a pixel of the
    source border mixes the border pixels with the fill), or ``cut`` (a sample beyond the
    outermost pixel centres takes the fill alone: SciPy's ``constant`` mode, which Keras'
    ``ImageDataGenerator`` uses)."""
    output: Output = Output()
    backend: Backend = "auto"
    device_id: DeviceId = 0
    num_threads: Threads | None = None
    """CPU threads: DALI's thread pool (default :meth:`dali_threads`), the TensorFlow
    backend's ``tf.data`` thread pool (default TensorFlow's, one thread per core)."""
    prefetch: Prefetch | None = None
    """Batches made ahead of the one being consumed: DALI's prefetch queue depth, the
    TensorFlow backend's final ``prefetch`` buffer. Default (:meth:`prefetch_depth`):
    :data:`GPU_PREFETCH` for DALI on the GPU, :data:`CPU_PREFETCH` elsewhere."""
    hw_decoder_load: Share = HW_DECODER_LOAD
    """The share of the JPEG data DALI's GPU decoder (``mixed``) gives the GPU's hardware
    JPEG decoder (A100, H100, H200; ignored elsewhere); the rest goes to nvJPEG's CUDA decoder,
    whose Huffman stage runs on DALI's CPU threads. Default: :data:`HW_DECODER_LOAD`."""
    decode_window: Literal["auto", "roi", "whole"] = "auto"
    """How the plan's decode window is decoded: ``roi`` (only the window; on the GPU through
    nvImageCodec's window decode), ``whole`` (the whole image decoded, the window cut from it:
    slower, immune to nvImageCodec#55's window-decode crashes), or ``auto`` (``roi``, except
    on a GPU whose window-decode canary failed: :mod:`daliaug.engines.dali.canary`)."""
    bounding_box_format: BoxFormat = "xyxy"
    """Detection: the format of the boxes given (``y`` in memory) and of the boxes in the
    batches, one of Keras' (:data:`daliaug.boxes.FORMATS`; ``rel_`` ones relative to the
    image)."""
    max_boxes: BoxCount = 100
    """Detection: boxes per image in a batch, padded with -1 (Keras' ``MaxNumBoundingBoxes``);
    an image with more after augmentation keeps its first ``max_boxes`` with a ``DataWarning``."""
    min_area: Pixels = 0.0
    """Detection: a moved box whose visible part covers fewer output pixels goes (one with none
    always does)."""
    min_visibility: Share = 0.0
    """Detection: a moved box whose visible part is a smaller share of its whole goes."""
    flip_indices: Annotated[list[int], AfterValidator(_permutation)] | None = None
    """Detection with keypoints: keypoint ``k`` becomes ``flip_indices[k]`` in a mirrored
    image (left and right swap), e.g. COCO's 17 person keypoints ``[0, 2, 1, 4, 3, ...]``;
    without it, the order the data declares (a YOLO pose ``data.yaml``'s ``flip_idx``)."""

    def dali_threads(self, device: str, gpus: int = 1) -> int:
        """DALI's CPU threads for a pipeline on ``device`` in a process running ``gpus`` GPU
        pipelines side by side: ``num_threads``, else :func:`default_threads`."""
        return self.num_threads or default_threads(device, gpus)

    def prefetch_depth(self, device: str) -> int:
        """Batches made ahead on ``device``: ``prefetch``, else :data:`GPU_PREFETCH` on the
        GPU and :data:`CPU_PREFETCH` elsewhere."""
        if self.prefetch is not None:
            return self.prefetch
        return GPU_PREFETCH if device == "gpu" else CPU_PREFETCH

    @model_validator(mode="before")
    @classmethod
    def _move_normalize_to_output(cls, data: Any) -> Any:
        """A valid ``normalize`` transform that comes last becomes ``output``'s normalization
        (unless ``output`` has one); any other stays, for the field checks and
        :meth:`_rules` to name."""
        if not isinstance(data, Mapping) or not isinstance(data.get("transforms"), list):
            return data
        *rest, last = data["transforms"] or [None]
        output = data.get("output") or {}
        output = output.model_dump() if isinstance(output, Output) else output
        if not isinstance(last, Mapping) or last.get("type") != "normalize":
            return data
        if not isinstance(output, Mapping) or any(
            output.get(k) is not None for k in ("mean", "std", "rescale")
        ):
            return data
        try:
            norm = Normalize.model_validate(last)
        except ValidationError:
            return data
        moved = norm.model_dump(exclude={"type"}, exclude_none=True)
        return {**data, "transforms": rest, "output": {**output, **moved}}

    @model_validator(mode="before")
    @classmethod
    def _shards_give_boxes_in_this_format(cls, data: Any) -> Any:
        """A ``webdataset`` source's json boxes are in the config's ``bounding_box_format``
        unless the source gives its own."""
        source = data.get("source") if isinstance(data, Mapping) else None
        if not isinstance(source, Mapping) or source.get("type") != "webdataset":
            return data
        if "bounding_box_format" in source or "bounding_box_format" not in data:
            return data
        return {**data, "source": {**source, "bounding_box_format": data["bounding_box_format"]}}

    @model_validator(mode="after")
    def _rules(self) -> Config:
        """The rules across fields, every broken one reported (each message starts with the
        field it is about)."""
        broken = [*self._transform_problems(), *self._target_problems()]
        if broken:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError("config_rule", "{rule}", {"rule": rule}),
                        loc=(),
                        input=None,
                    )
                    for rule in broken
                ],
            )
        return self

    def _transform_problems(self) -> Iterator[str]:
        fills: dict[str, Fill] = {}
        colour: int | None = None
        for i, t in enumerate(self.transforms):
            if isinstance(t, Normalize):
                yield (
                    f"transforms.{i}: 'normalize' must be the last transform"
                    if i < len(self.transforms) - 1
                    else f"transforms.{i}: normalization is given both here and in 'output'; "
                    "keep one"
                )
            for problem in t.output_problems(self.image_size, self.channels):
                yield f"transforms.{i}.{problem}"
            if t.needs_rgb and self.channels != 3:
                yield f"transforms.{i}: '{t.type}' needs channels: 3"
            lacks = t.dali_lacking(self.channels)
            if self.backend in lacks:
                yield (
                    f"transforms.{i}: '{t.type}' cannot run on DALI's {self.backend} "
                    f"({lacks[self.backend]}); use backend: tf, opencv or auto"
                )
            if isinstance(t, OffsetTransform) and colour is not None:
                yield (
                    f"transforms.{i}: '{t.type}' must come before the colour transforms (it "
                    f"clips to the warped image's own range), but transforms.{colour} is "
                    f"'{self.transforms[colour].type}'"
                )
            if isinstance(t, ColourTransform) and colour is None:
                colour = i
            if isinstance(t, GeometricTransform) and "fill" in t.model_fields_set:
                fills[f"transforms.{i}.fill"] = t.fill
                if t.fill in TF_ONLY_FILLS and self.backend != "tf":
                    yield (
                        f"transforms.{i}.fill: {t.fill!r} needs backend: tf (DALI's warp_affine "
                        f"has no {t.fill} border; TensorFlow's projective transform has), got "
                        f"backend: {self.backend}"
                    )
        for i, t in enumerate(self.transforms):
            if isinstance(t, BatchTransform):
                yield from self._batch_stage_problems(f"transforms.{i}", t)
        if len(set(fills.values())) > 1:
            listed = ", ".join(f"{k}={v!r}" for k, v in fills.items())
            yield f"all geometric transforms share one warp and so one fill value; got {listed}"

    def _batch_stage_problems(self, field: str, t: BatchTransform) -> Iterator[str]:
        """A batch stage mixes labels: soft labels only (masks and boxes: :meth:`refusals`),
        and no streamed source (the host must know each batch's real samples)."""
        targets = self.source.segmentation or self.source.detection  # follow or refuse it
        if not targets and self.label_mode not in ("categorical", "binary"):
            yield (
                f"{field}: '{t.type}' mixes labels, which needs soft labels: set label_mode: "
                f"categorical (or binary), not {self.label_mode!r}"
            )
        if self.source.streamed:
            yield f"{field}: '{t.type}' needs a column source; {self.source.streamed}"

    @model_validator(mode="after")
    def _check_channels(self) -> Config:
        if self.channels not in (1, 3) and self.source.type != "arrays":
            raise ValueError(
                f"channels: {self.channels}: files decode to 1 (grey) or 3 (RGB) channels; "
                "other counts need an arrays source"
            )
        return self

    def refusals(self, kinds: Iterable[str]) -> Iterator[str]:
        """Each stage that a target kind of ``kinds`` (``masks``, ``boxes``, ``keypoints``)
        cannot follow, named with why: what each stage declares (``effects``). Checked for
        the source's own targets, and by ``prepare`` for boxes given in memory."""
        for i, t in enumerate(self.transforms):
            if not isinstance(t, StageTransform):
                continue
            refused: dict[str, list[str]] = {}  # one line per reason, naming its kinds
            for kind, why in t.effects.refusals(kinds).items():
                refused.setdefault(why, []).append(kind)
            for why, which in refused.items():
                yield (
                    f"transforms.{i}: type: {t.type} {why}; leave it out of a config with "
                    f"{' or '.join(which)}"
                )

    def _target_problems(self) -> Iterator[str]:
        kinds = ["masks"] if self.source.segmentation else []
        kinds += ["boxes", "keypoints"] if self.source.detection else []
        yield from self.refusals(kinds)
        if self.source.segmentation and self.label_mode not in ("int", "categorical", "binary"):
            yield (
                f"label_mode: {self.label_mode!r} is for classification sources; segmentation "
                "yields its masks"
            )
        for name in ("mean", "std"):
            v = getattr(self.output, name)
            if isinstance(v, list) and len(v) != self.channels:
                yield (
                    f"output.{name}: {len(v)} values {v} for channels: {self.channels}; give one "
                    "value per channel, or a single number"
                )

    @model_validator(mode="after")
    def _default_crop_sizes(self) -> Config:
        transforms = [
            t.model_copy(update={"size": self.image_size})
            if isinstance(t, RandomResizedCrop) and t.size is None
            else t
            for t in self.transforms
        ]
        object.__setattr__(self, "transforms", transforms)
        return self

    @property
    def fill(self) -> Fill:
        """The one fill of the fused warp: the one the transforms set, else 0; ``nearest``
        (clamp to the border pixels) when no transform can reveal area outside the image."""
        revealing = [t for t in self.transforms if isinstance(t, GeometricTransform) and t.reveals]
        if not revealing:
            return "nearest"
        return next((t.fill for t in revealing if "fill" in t.model_fields_set), 0.0)

    def subsets(self) -> tuple[Config, Config]:
        """For ``source.subset: both``: the training config (``subset: training``) and the
        validation config (``subset: validation``, its :meth:`evaluation_twin`: random
        augmentation and batch stages are for training, as Keras' random layers pass images
        through at inference)."""

        def part(config: Config, subset: str) -> Config:
            source = config.source.model_copy(update={"subset": subset})
            return config.model_copy(update={"source": source})

        return part(self, "training"), part(self.evaluation_twin(), "validation")

    @property
    def plan(self) -> Plan:
        """The fused per-sample computation of this config's transforms (built once for each
        distinct transform list, size, channels and fill: plans are immutable)."""
        return _plan(
            tuple(self.transforms), self.image_size, self.channels, self.fill, self.interpolation
        )

    def evaluation_twin(self) -> Config:
        """The same pipeline for evaluation: no shuffling and only its deterministic transforms."""
        kept = [t for t in self.transforms if not t.params]
        return self.model_copy(update={"shuffle": False, "transforms": kept})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


_plan = functools.lru_cache(maxsize=64)(Plan.of)


def format_errors(errors: list[ErrorDetails], origin: str) -> str:
    """One line per error: the field path, the message and the offending value."""
    lines = [f"invalid config {origin}:"]
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if not loc:  # a rule across fields: its message starts with the field path itself
            lines.append(f"  {msg}")
            continue
        lines.append(f"  {loc}: {msg}{_shown(err.get('input'))}")
    return "\n".join(lines)


def _shown(value: Any) -> str:
    """`` (got value)``, or nothing for a long list or mapping."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        return f" (got a {type(value).__name__})"
    return "" if isinstance(value, (dict, list)) and len(text) > 80 else f" (got {text[:200]})"


def _deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | Config,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Validate a config from a YAML/JSON path, a shipped config's name (``"imagenet_train"``,
    see :func:`~daliaug.config_files.shipped_configs`), a dict or a :class:`Config`.

    ``overrides`` is merged into it first (nested mappings merge key by key). Raises
    :class:`~daliaug.errors.ConfigError` whose message lists every bad field and value, and
    every broken rule across fields.
    """
    if isinstance(source, Config):
        if not overrides:
            return source
        # only the fields set: a default written out would count as set (one fill per warp)
        data: Mapping[str, Any] = source.model_dump(exclude_unset=True)
        origin = "(Config object)"
    elif isinstance(source, Mapping):
        data, origin = source, "(dict)"
        check_size(data, origin)
    elif isinstance(source, (str, os.PathLike)):
        path = config_path(source)
        data = read_config_file(path)
        origin = str(source) if path == Path(source) else f"{source} ({path})"
    else:
        raise ConfigError(
            "config: give a YAML or JSON file, a shipped config's name, a mapping or a Config, "
            f"not {type(source).__name__}"
        )
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides: give a mapping, not {type(overrides).__name__}")
    if overrides:
        check_size(overrides, "overrides")
        data = _deep_merge(data, overrides)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
    if all(err["loc"] for err in errors):  # bad fields: the rules across fields have not run
        errors += _rule_errors(_without_bad_fields(data, errors))
    raise ConfigError(format_errors(errors, origin)) from None


def load_with_targets(config: Any, y: object) -> Config:
    """``config`` (anything :func:`load_config` takes) loaded once for the targets ``y`` that
    come with it (``make_dataset``'s, ``daliaug.preview``'s): given Keras' ``bounding_boxes``
    dict, an arrays source's targets are boxes (``source.boxes``)."""
    if isinstance(y, Mapping):
        boxes = {"source": {"boxes": True}}
        try:
            return load_config(config, boxes)
        except ConfigError as error:
            try:  # an arrays source takes boxes: its errors are the detection config's
                load_config(config, {**boxes, "transforms": []})
            except ConfigError:
                pass  # the config's own errors, or a source of files (prepare names it)
            else:
                raise error from None
    return load_config(config)


_STAND_INS: dict[str, Any] = {"source": {"type": "arrays"}, "image_size": 1}
_NEUTRAL = {"type": "flip", "horizontal": 0.0}
"""A transform that breaks no rule, standing in for a bad one (indices stay)."""


def _without_bad_fields(data: Mapping[str, Any], errors: list[ErrorDetails]) -> dict[str, Any]:
    """``data`` with each bad field left to its default (a required one, and a bad transform,
    replaced by a stand-in), for the rules across the others to run."""
    patched = dict(data)
    transforms = data.get("transforms")
    transforms = list(transforms) if isinstance(transforms, list) else None
    for err in errors:
        key, *inner = err["loc"]
        if key == "transforms" and transforms is not None and inner and isinstance(inner[0], int):
            transforms[inner[0]] = _NEUTRAL
        elif key in _STAND_INS:
            patched[key] = _STAND_INS[key]
        else:
            patched.pop(str(key), None)
    if transforms is not None and "transforms" in patched:
        patched["transforms"] = transforms
    return patched


def _rule_errors(data: Mapping[str, Any]) -> list[ErrorDetails]:
    """The broken rules across fields of ``data`` (its bad fields are not reported again)."""
    try:
        Config.model_validate(data)
    except ValidationError as e:
        return [err for err in e.errors() if not err["loc"]]
    return []
