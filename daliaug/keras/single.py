"""``apply_transform`` on one image: the generator's plan evaluated with NumPy, the image
resampled with the TensorFlow backend's projective transform, in float32 and unrounded, as
Keras leaves it (and as the pipelines do); a brightness change saturates to 0..255, as PIL's
(in Keras) and the pipelines' colour pass do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.engines.tf.image import recolour, shift_within_range, transform
from daliaug.plan import Plan
from daliaug.transforms.keras_affine import KerasAffine

if TYPE_CHECKING:
    from daliaug.keras.generator import ImageDataGenerator


def apply_transform(
    generator: ImageDataGenerator, x: np.ndarray, parameters: Mapping[str, Any]
) -> np.ndarray:
    """Keras' ``apply_transform``: the geometry of ``parameters`` (Keras' names, missing ones
    as Keras defaults them), then ``channel_shift_intensity`` and ``brightness`` when given,
    on the image ``x`` (in the generator's data format)."""
    image = np.asarray(x, np.float32)
    if generator.data_format == "channels_first":
        image = image.transpose(1, 2, 0)
    h, w, c = image.shape
    transforms = generator.transforms()[:1]
    shift = parameters.get("channel_shift_intensity")
    brightness = parameters.get("brightness")
    if shift is not None:
        transforms.append({"type": "channel_shift", "intensity": abs(float(shift))})
    if brightness is not None:
        transforms.append({"type": "brightness", "factor": [float(brightness)] * 2})
    config = generator.config((h, w), c if c in (1, 3) else 3, backend="tf", transforms=transforms)
    affine = config.transforms[0]
    assert isinstance(affine, KerasAffine)
    values = {f"0.{k}": v for k, v in affine.from_keras(parameters, (h, w)).items()}
    if shift is not None:
        values["1.intensity"] = float(shift)
    if brightness is not None:
        values[f"{len(transforms) - 1}.factor"] = float(brightness)
    plan = Plan.of(config.transforms, (h, w), c, config.fill)
    inputs = plan.warp_inputs(
        {k: np.float32(v) for k, v in values.items()},
        Canvas(float(h), float(w)),
        NUMPY.math,
        fuse_roi=False,
        masks=False,
    )
    matrix = np.asarray(inputs["matrix"], np.float32).reshape(1, 2, 3)
    nearest = generator.interpolation_order == 0
    out = transform(image[np.newaxis], matrix, (h, w), config.fill, nearest)
    if "offset" in inputs:
        out = shift_within_range(out, tf.constant([[inputs["offset"][0]]], tf.float32))
    if "colour" in inputs:
        colour = np.asarray(inputs["colour"], np.float32).reshape(1, c, c + 1)
        out = recolour(out, tf.constant(colour), c)
    if brightness is not None:  # saturated to 0..255, as PIL's brightness and the colour pass
        out = tf.clip_by_value(out, 0.0, 255.0)
    out = out[0].numpy()
    return out.transpose(2, 0, 1) if generator.data_format == "channels_first" else out
