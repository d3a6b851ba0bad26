"""``apply_transform`` on one image: the plan evaluated with NumPy for Keras' explicit
parameters, the image computed by the TensorFlow engine's :func:`apply_plan`, in float32 and
unrounded, as Keras leaves it (and as the pipelines do); a brightness change saturates to
0..255, as PIL's (in Keras) and the pipelines' colour pass do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from daliaug.algebra import Canvas, Math
from daliaug.config import Config
from daliaug.engine_spec import EngineSpec
from daliaug.transforms.keras_affine import KerasAffine

NUMPY = Math.of(np)


def apply_transform(config: Config, image: np.ndarray, parameters: Mapping[str, Any]) -> np.ndarray:
    """Keras' ``apply_transform`` of the float32 HWC ``image`` under ``config``, whose
    transforms are the generator's ``keras_affine``, then ``channel_shift`` and ``brightness``
    where ``parameters`` (Keras' names; missing geometry as Keras defaults it) give
    ``channel_shift_intensity`` and ``brightness``."""
    h, w = image.shape[:2]
    affine = config.transforms[0]
    assert isinstance(affine, KerasAffine)
    values = {f"0.{k}": v for k, v in affine.from_keras(parameters, (h, w)).items()}
    kinds = {t.type: i for i, t in enumerate(config.transforms)}
    if "channel_shift" in kinds:
        values[f"{kinds['channel_shift']}.intensity"] = float(parameters["channel_shift_intensity"])
    if "brightness" in kinds:
        values[f"{kinds['brightness']}.factor"] = float(parameters["brightness"])
    inputs = config.plan.warp_inputs(
        {k: np.float32(v) for k, v in values.items()},
        Canvas(float(h), float(w)),
        NUMPY,
        fuse_roi=False,
        masks=False,
    )
    from daliaug.engines.tf import apply_plan  # imports TensorFlow

    out = apply_plan(image, inputs, EngineSpec.of(config, "cpu", config.device_id, 0, 1))
    if "brightness" in kinds:  # saturated to 0..255, as PIL's brightness and the colour pass
        out = np.clip(out, 0.0, 255.0)
    return out
