"""The pipeline config: one pydantic model, loaded from YAML, JSON or a dict."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from daliaug.errors import ConfigError
from daliaug.plan import Plan
from daliaug.sources import AnySource
from daliaug.sources.base import read_text
from daliaug.transforms import AnyTransform, ColourTransform, GeometricTransform
from daliaug.transforms.base import TF_ONLY_FILLS, Fill, OffsetTransform, Size
from daliaug.transforms.normalize import Channels, Normalization, Normalize
from daliaug.transforms.random_resized_crop import RandomResizedCrop


class Output(Normalization):
    """How images leave the pipeline: normalization, dtype and layout.

    ``(x - mean) / std`` or ``x * rescale`` on the 0..255 scale; with none of them the values
    stay 0..255. ``uint8`` output allows no normalization.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dtype: Literal["float32", "float16", "uint8"] = "float32"
    layout: Literal["NHWC", "NCHW"] = "NHWC"

    @model_validator(mode="after")
    def _dtype_holds_values(self) -> Output:
        if self.dtype == "uint8" and self.normalizes:
            raise ValueError("dtype uint8 cannot carry normalized values; use float32 or float16")
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


class Config(BaseModel):
    """A whole daliaug pipeline: where samples come from, how they are augmented, what comes out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: AnySource
    image_size: Size
    channels: Annotated[int, Field(ge=1)] = 3
    """1 (grey) or 3 (RGB) for files; in-memory arrays may have any number of channels."""
    batch_size: Annotated[int, Field(gt=0)] = 32
    shuffle: bool = True
    seed: int | None = None
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
    backend: Literal["auto", "gpu", "cpu", "tf"] = "auto"
    device_id: Annotated[int, Field(ge=0)] = 0
    num_threads: Annotated[int, Field(gt=0)] | None = None
    """CPU threads: DALI's thread pool (default :attr:`dali_threads`), the TensorFlow
    backend's ``tf.data`` thread pool (default TensorFlow's, one thread per core)."""
    prefetch: Annotated[int, Field(gt=0)] = 2
    """Batches made ahead of the one being consumed: DALI's prefetch queue depth, the
    TensorFlow backend's final ``prefetch`` buffer."""

    @property
    def dali_threads(self) -> int:
        """DALI's CPU threads: ``num_threads``, else one per core up to 4."""
        return self.num_threads or max(1, min(4, os.cpu_count() or 1))

    @model_validator(mode="before")
    @classmethod
    def _move_normalize_to_output(cls, data: Any) -> Any:
        """A ``normalize`` transform must come last and becomes ``output``'s normalization."""
        if not isinstance(data, Mapping) or not isinstance(data.get("transforms"), list):
            return data
        transforms = data["transforms"]
        kinds = [t.get("type") if isinstance(t, Mapping) else None for t in transforms]
        if "normalize" not in kinds:
            return data
        index = kinds.index("normalize")
        if index != len(transforms) - 1:
            raise ValueError(f"transforms.{index}: 'normalize' must be the last transform")
        output = dict(data.get("output") or {})
        if any(output.get(k) is not None for k in ("mean", "std", "rescale")):
            raise ValueError(
                f"transforms.{index}: normalization is given both here and in 'output'; keep one"
            )
        try:
            norm = Normalize.model_validate(transforms[index])
        except ValidationError as e:
            raise ValueError(f"transforms.{index}: {_first_message(e)}") from None
        output.update(norm.model_dump(exclude={"type"}, exclude_none=True))
        return {**data, "transforms": transforms[:index], "output": output}

    @model_validator(mode="after")
    def _check_transforms(self) -> Config:
        fills: dict[str, Fill] = {}
        colour: int | None = None
        for i, t in enumerate(self.transforms):
            if isinstance(t, ColourTransform) and t.needs_rgb and self.channels != 3:
                raise ValueError(f"transforms.{i}: '{t.type}' needs channels: 3")
            if isinstance(t, OffsetTransform) and colour is not None:
                raise ValueError(
                    f"transforms.{i}: '{t.type}' must come before the colour transforms (it "
                    f"clips to the warped image's own range), but transforms.{colour} is "
                    f"'{self.transforms[colour].type}'"
                )
            if isinstance(t, ColourTransform) and colour is None:
                colour = i
            if isinstance(t, GeometricTransform) and "fill" in t.model_fields_set:
                fills[f"transforms.{i}.fill"] = t.fill
                if t.fill in TF_ONLY_FILLS and self.backend != "tf":
                    raise ValueError(
                        f"transforms.{i}.fill: {t.fill!r} needs backend: tf (DALI's warp_affine "
                        f"has no {t.fill} border; TensorFlow's projective transform has), got "
                        f"backend: {self.backend}"
                    )
        if len(set(fills.values())) > 1:
            listed = ", ".join(f"{k}={v!r}" for k, v in fills.items())
            raise ValueError(
                f"all geometric transforms share one warp and so one fill value; got {listed}"
            )
        return self

    @model_validator(mode="after")
    def _check_channels(self) -> Config:
        if self.channels not in (1, 3) and self.source.type != "arrays":
            raise ValueError(
                f"channels: {self.channels}: files decode to 1 (grey) or 3 (RGB) channels; "
                "other counts need an arrays source"
            )
        return self

    @model_validator(mode="after")
    def _check_label_mode(self) -> Config:
        if self.source.segmentation and self.label_mode not in ("int", "categorical", "binary"):
            raise ValueError(
                f"label_mode: {self.label_mode!r} is for classification sources; segmentation "
                "yields its masks"
            )
        return self

    @model_validator(mode="after")
    def _check_output_channels(self) -> Config:
        for name in ("mean", "std"):
            v = getattr(self.output, name)
            if isinstance(v, list) and len(v) != self.channels:
                raise ValueError(
                    f"output.{name}: {len(v)} values {v} for channels: {self.channels}; give one "
                    "value per channel, or a single number"
                )
        return self

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


def _first_message(e: ValidationError) -> str:
    err = e.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    return f"{'.'.join(map(str, err['loc']))}: {msg}" if err["loc"] else msg


def format_errors(e: ValidationError, origin: str) -> str:
    """One line per error: the field path, the message and the offending value."""
    lines = [f"invalid config {origin}:"]
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        if not loc:  # a whole-config check: its message starts with the field path itself
            lines.append(f"  {msg}")
            continue
        shown = (
            "" if isinstance(value, (dict, list)) and len(str(value)) > 80 else f" (got {value!r})"
        )
        lines.append(f"  {loc}: {msg}{shown}")
    return "\n".join(lines)


def _deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a YAML or JSON file into a dict; errors name the file (and line for YAML)."""
    p = Path(path)
    text = read_text(p, "cannot read config file", ConfigError)
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(
            f"config file {p} is not valid {p.suffix.lstrip('.').upper() or 'YAML'}: {e}"
        ) from e
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys, got {type(data).__name__}")
    return data


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | Config,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Validate a config from a YAML/JSON path, a dict or a :class:`Config`.

    ``overrides`` is merged into it first (nested mappings merge key by key). Raises
    :class:`~daliaug.errors.ConfigError` whose message lists every bad field and value.
    """
    if isinstance(source, Config):
        data: Mapping[str, Any] = source.model_dump()
        origin = "(Config object)"
    elif isinstance(source, Mapping):
        data, origin = source, "(dict)"
    else:
        data, origin = read_config_file(source), str(source)
    if overrides:
        data = _deep_merge(data, overrides)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_errors(e, origin)) from None
