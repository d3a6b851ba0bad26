"""``from_torchvision``: a torchvision v2 ``Compose`` compiled into one daliaug config.

The transforms are walked in order (``Compose`` nested or not) through the table of
:mod:`daliaug.torchvision.converters`; ``RandomApply`` of one transform with a probability,
``RandomChoice`` and ``RandomOrder`` of one transform are taken in. A transform that cannot be
represented is a :class:`ConfigError` naming it; one whose draw differs from torchvision's in
distribution only converts with a warning saying how. The batches leave channels first
(``output.layout: NCHW``), normalized as the transforms say.
"""

from __future__ import annotations

import warnings
from typing import Any

from daliaug.config import Config, load_config
from daliaug.errors import ConfigError
from daliaug.torchvision.converters import (
    CONVERTERS,
    REFUSED,
    Unsupported,
    Walk,
    label,
    supported,
)

CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")


def torchvision_class(transform: Any) -> str:
    """The torchvision v2 class ``transform`` is (a subclass of one, or v1's, refused)."""
    cls = type(transform)
    module = getattr(cls, "__module__", "")
    if not module.startswith("torchvision.transforms.v2"):
        if module.startswith("torchvision"):
            why = "a torchvision.transforms (v1) class; from_torchvision takes v2's"
        elif any(b.__module__.startswith("torchvision.transforms.v2") for b in cls.__mro__[1:]):
            why = "a subclass of torchvision's, whose changes daliaug cannot read"
        else:
            why = "not a torchvision v2 transform"
        raise Unsupported(f"{label(transform)}: {why}")
    return cls.__name__


def walk_into(transform: Any, walk: Walk) -> None:
    """Write ``transform`` (a container's transforms in turn) into ``walk``."""
    name = torchvision_class(transform)
    if name not in CONTAINERS:
        convert = CONVERTERS.get(name)
        if convert is None:
            why = REFUSED.get(name) or "daliaug has no equivalent of this transform"
            raise Unsupported(f"{name}: {why}")
        convert(transform, walk)
        return
    inner = list(transform.transforms)
    if name == "Compose":
        for each in inner:
            walk_into(each, walk)
        return
    if len(inner) != 1:
        what = {
            "RandomApply": "applies them all or none, where daliaug draws each transform's own",
            "RandomChoice": "picks one per call, where daliaug applies every transform",
            "RandomOrder": "permutes them per call, where daliaug's order is fixed",
        }[name]
        raise Unsupported(
            f"{name}: it holds {len(inner)} transforms and {what}; give it one transform"
        )
    if name != "RandomApply":
        walk_into(inner[0], walk)
        return
    _random_apply(transform, inner[0], walk)


def _random_apply(transform: Any, inner: Any, walk: Walk) -> None:
    """``RandomApply([t], p)``: ``t``'s one transform with its probability times ``p`` (a
    flip's: it flips one axis)."""
    p = float(transform.p)
    before = len(walk.transforms)
    walk_into(inner, walk)
    added = walk.transforms[before:]
    if p == 1.0 or not added:
        return
    keys = [k for k in ("probability", "horizontal", "vertical") if k in added[-1]]
    if len(added) != 1 or not keys:
        raise Unsupported(
            f"RandomApply: p={p} over {label(inner)}, which daliaug runs as "
            f"{len(added)} transforms without one probability of their own"
        )
    for key in keys:
        added[0][key] = float(added[0][key]) * p


BOX_FORMATS = {"XYXY": "xyxy", "XYWH": "xywh", "CXCYWH": "center_xywh"}
"""torchvision's ``BoundingBoxFormat`` names -> daliaug's ``bounding_box_format``."""


def bounding_box_format_of(value: Any) -> str:
    """daliaug's ``bounding_box_format`` for torchvision's ``BoundingBoxFormat`` (or its
    name)."""
    name = str(getattr(value, "name", value)).upper()
    if name not in BOX_FORMATS:
        raise ConfigError(
            f"box_format: {name} is not one of torchvision's axis-aligned formats daliaug "
            f"moves ({', '.join(BOX_FORMATS)}); rotated boxes are not supported"
        )
    return BOX_FORMATS[name]


def from_torchvision(
    transforms: Any,
    *,
    source: Any,
    batch_size: int = 32,
    box_format: Any = None,
    **config_fields: Any,
) -> Config:
    """The daliaug config that does what a torchvision v2 pipeline does to each image.

    ``transforms``: a ``torchvision.transforms.v2.Compose`` (nested or not) or one transform;
    see the README's "From torchvision". ``config_fields``: any other config fields
    (``seed``, ``shuffle``, ``label_mode``, ``backend``, ``output``...). The images enter at
    their own size; the transforms must end at one size (a crop or a resize to
    ``[height, width]``). ``ToDtype`` and ``Normalize`` become the output normalization; the
    batches are channels first (``output.layout: NCHW``), as torchvision's tensors.
    ``box_format``: for detection (boxes given in memory or by the source, labels with
    them, as torchvision's ``tv_tensors.BoundingBoxes``), torchvision's
    ``BoundingBoxFormat`` (or its name) the boxes come in and leave in; masks follow the
    transforms as a segmentation source's do. A transform daliaug cannot run exactly raises a
    :class:`ConfigError` naming it and the supported ones; one whose draw differs in
    distribution gives a warning saying how.
    """
    if box_format is not None:
        if "bounding_box_format" in config_fields:
            raise ConfigError("bounding_box_format: give box_format or it, not both")
        config_fields["bounding_box_format"] = bounding_box_format_of(box_format)
    for reserved in ("transforms", "image_size"):
        if reserved in config_fields:
            raise ConfigError(f"{reserved}: from_torchvision takes it from the transforms")
    walk = Walk()
    try:
        walk_into(transforms, walk)
    except Unsupported as e:
        raise ConfigError(f"{e}\n  daliaug compiles {', '.join(supported())}") from None
    if walk.size is None:
        raise ConfigError(
            "image_size: the transforms keep each image's own size; end them with a crop or a "
            "Resize to [height, width]"
        )
    for note in walk.notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    output: dict[str, Any] = {"layout": "NCHW", "dtype": "float32" if walk.floating else "uint8"}
    if not walk.identity_frame:
        output.update(mean=(-walk.offset / walk.scale).tolist(), std=(1.0 / walk.scale).tolist())
    given = dict(config_fields.pop("output", None) or {})
    clash = [k for k in ("mean", "std", "rescale", "dtype") if k in given and k in output]
    if clash and not walk.identity_frame:
        raise ConfigError(f"output.{clash[0]}: the transforms' ToDtype/Normalize set it")
    interpolations = set(walk.interpolations.values())
    fields = {
        "image_size": list(walk.size),
        "channels": walk.channels,
        "transforms": walk.transforms,
        "interpolation": interpolations.pop() if interpolations else "linear",
        "output": {**output, **given},
        **walk.fields,
    }
    return load_config({**fields, "source": source, "batch_size": batch_size, **config_fields})
