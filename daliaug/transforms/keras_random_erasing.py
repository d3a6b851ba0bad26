"""Keras' ``RandomErasing``: one box per sample, each side a random fraction of the image's,
filled with a value or with clipped normal noise."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from daliaug.algebra import Math, Random, mul
from daliaug.fields import bounded
from daliaug.kernels import Kernels, Noise
from daliaug.transforms.base import Params, PixelTransform, Probability, ordered
from daliaug.transforms.keras_cutmix import pixel_span

Level = Annotated[float, Field(ge=0.0, le=255.0)]
NOISE_LIMIT = 1e5
"""The largest noise mean (in magnitude) and standard deviation, on the 0..255 scale."""


class KerasRandomErasing(PixelTransform):
    """When ``erase ~ Bernoulli(probability)`` is 1, a box of the output image is filled: its
    width ``sqrt(sw) * W`` and height ``sqrt(sh) * H`` with ``sw, sh ~ U(scale)``
    independently (real-valued), its corner ``u * (side - length)`` with ``u ~ U[0, 1)`` per
    axis, holding the pixels ``i`` with ``start <= i < start + length`` on both axes; ``value``:
    a number (every channel), one number per channel, or ``"normal"``: per pixel and channel
    ``clip(mean + std * n, 0, 255)`` with ``n ~ N(0, 1)`` and ``(mean, std)`` = ``noise``.
    Keras' ``RandomErasing``, which applies with probability ``p ~ U(factor)`` (here a
    Bernoulli of its mean) and fills by default with ``clip(n * high, low, high)`` of its
    ``value_range`` ``[low, high]`` (``noise`` ``[0, 255]`` for ``[0, 255]``). The noise is
    drawn in the engine's graph, not on the host: DALI's ``random.normal`` (seeded by the
    pipeline's seed) and TensorFlow's stateless normal (seeded by ``noise_seed``, drawn per
    sample, the batch's first one used), so the two engines erase the same boxes with
    different noise. ``random_erasing`` is the torchvision form.

    Example: ``{"type": "keras_random_erasing", "probability": 0.5, "value": "normal"}``."""

    type: Literal["keras_random_erasing"] = "keras_random_erasing"
    probability: Probability = 0.5
    scale: Annotated[
        tuple[float, float], AfterValidator(ordered), bounded(0.0, 1.0, "side fractions")
    ] = (0.02, 0.33)
    value: Level | tuple[Level, ...] | Literal["normal"] = "normal"
    noise: tuple[
        Annotated[float, Field(ge=-NOISE_LIMIT, le=NOISE_LIMIT)],
        Annotated[float, Field(ge=0.0, le=NOISE_LIMIT)],
    ] = (0.0, 255.0)

    params: ClassVar[tuple[str, ...]] = ("erase", "width", "height", "x", "y", "noise_seed")
    stage_params: ClassVar[tuple[str, ...] | None] = ("y0", "x0", "h", "w", "noise_seed")

    def draw(self, rng: Random) -> Params:
        return {
            "erase": rng.bernoulli(self.probability),
            "width": rng.uniform(*self.scale),
            "height": rng.uniform(*self.scale),
            "x": rng.uniform(0.0, 1.0),
            "y": rng.uniform(0.0, 1.0),
            "noise_seed": rng.uniform(0.0, 1.0),
        }

    def output_problems(self, size: tuple[int, int], channels: int) -> list[str]:
        if isinstance(self.value, tuple) and len(self.value) not in (1, channels):
            return [f"value: {len(self.value)} values for {channels} channels"]
        return []

    def stage(self, p: Params, size: tuple[int, int], m: Math) -> Params:
        """The box in output pixels (``h``, ``w`` 0 when not erasing)."""
        y0, h = pixel_span(m.sqrt(p["height"]), p["y"], size[0], m)
        x0, w = pixel_span(m.sqrt(p["width"]), p["x"], size[1], m)
        erase = p["erase"]
        return {
            "y0": y0,
            "x0": x0,
            "h": mul(h, erase),
            "w": mul(w, erase),
            "noise_seed": p["noise_seed"],
        }

    def pixels(self, images: Any, p: Params, ops: Kernels) -> Any:
        box = (p["y0"], p["x0"], p["h"], p["w"])
        if self.value == "normal":
            return ops.erase_noise(images, *box, Noise(*self.noise, p["noise_seed"]))
        fill = list(self.value) if isinstance(self.value, tuple) else [self.value]
        return ops.erase(images, *box, fill)
