"""What an engine computes for one run: the narrow spec its graph reads, never the config.

A :class:`~daliaug.run.Run` makes its :class:`EngineSpec` once (``Run.spec``) from the user's
config and the facts resolved for the run. The engines' graphs (DALI's, TensorFlow's,
OpenCV's), the host feed, the detection targets and the ``tf.data`` element spec read this and
nothing else of the config: which source listed the samples, how they were checked, the
backend asked for or the global batch are not theirs to see. Imports no framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from daliaug.config import Config, Output, default_threads
from daliaug.sources.segmentation import MaskTargets

if TYPE_CHECKING:
    from daliaug.boxes import BoxFormat
    from daliaug.engine_names import Device
    from daliaug.plan import Plan
    from daliaug.transforms.base import Fill


@dataclass(frozen=True)
class EngineSpec:
    """One run's computation: the fused ``plan`` and its warp ``fill``; the output images
    (``image_size``, ``channels``, ``interpolation``, ``fill_edge``, ``output``); the targets
    (``label_mode``, ``masks``: the mask source's settings, ``None`` without masks; the
    detection rules); the order (``shuffle``, ``drop_remainder``, ``seed``, ``batch_size``:
    this shard's); the engine's tuning (``decode_window``, ``hw_decoder_load``,
    ``num_threads``, ``prefetch``: batches made ahead) and where it runs (``device``,
    ``device_id``)."""

    plan: Plan
    fill: Fill
    image_size: tuple[int, int]
    channels: int
    interpolation: Literal["linear", "nearest"]
    fill_edge: Literal["blend", "cut"]
    output: Output
    label_mode: str
    masks: MaskTargets | None
    max_boxes: int
    bounding_box_format: BoxFormat
    min_area: float
    min_visibility: float
    flip_indices: tuple[int, ...] | None
    shuffle: bool
    drop_remainder: bool
    seed: int
    batch_size: int
    decode_window: Literal["auto", "roi", "whole"]
    hw_decoder_load: float
    num_threads: int | None
    prefetch: int
    device: Device
    device_id: int

    @staticmethod
    def of(
        config: Config, device: Device, device_id: int, seed: int, batch_size: int
    ) -> EngineSpec:
        """The spec of ``config`` run on ``device`` (GPU ``device_id``) with ``seed``, in
        batches of ``batch_size``."""
        source = config.source
        flips = config.flip_indices
        return EngineSpec(
            plan=config.plan,
            fill=config.fill,
            image_size=tuple(config.image_size),  # type: ignore[arg-type]
            channels=config.channels,
            interpolation=config.interpolation,
            fill_edge=config.fill_edge,
            output=config.output,
            label_mode=config.label_mode,
            masks=source if isinstance(source, MaskTargets) else None,
            max_boxes=config.max_boxes,
            bounding_box_format=config.bounding_box_format,
            min_area=config.min_area,
            min_visibility=config.min_visibility,
            flip_indices=None if flips is None else tuple(flips),
            shuffle=config.shuffle,
            drop_remainder=config.drop_remainder,
            seed=seed,
            batch_size=batch_size,
            decode_window=config.decode_window,
            hw_decoder_load=config.hw_decoder_load,
            num_threads=config.num_threads,
            prefetch=config.prefetch_depth(device),
            device=device,
            device_id=device_id,
        )

    def dali_threads(self, gpus: int = 1) -> int:
        """DALI's CPU threads in a process running ``gpus`` GPU pipelines side by side
        (:meth:`Config.dali_threads <daliaug.config.Config.dali_threads>`)."""
        return self.num_threads or default_threads(self.device, gpus)
