"""Channel shift: ``ImageDataGenerator``'s ``channel_shift_range``."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from daliaug.algebra import Random, Scalar
from daliaug.fields import bounded
from daliaug.transforms.base import OffsetTransform, Params, SymmetricRange

IntensityRange = Annotated[SymmetricRange, bounded(-255.0, 255.0, "intensities")]
"""On the 0..255 scale: a larger shift clips every pixel to the image's extremes anyway."""


class ChannelShift(OffsetTransform):
    """Add ``intensity ~ U(intensity)`` to every channel, then clip to the image's own minimum
    and maximum over all channels (as Keras' ``apply_channel_shift``). A single number ``a``
    means ``[-a, a]``. It acts on the warp's result, before the colour transforms, so it must
    come before them in the list.
    """

    type: Literal["channel_shift"] = "channel_shift"
    intensity: IntensityRange

    params: ClassVar[tuple[str, ...]] = ("intensity",)

    def draw(self, rng: Random) -> Params:
        return {"intensity": rng.uniform(*self.intensity)}

    def offset(self, p: Params) -> Scalar:
        return p["intensity"]
