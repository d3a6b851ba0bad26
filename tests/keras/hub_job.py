"""A small KerasHub ``RetinaNetObjectDetector`` (a ``ResNetBackbone`` from its constructor, no
downloaded weights) trained on daliaug's ``tf.data`` output on one Keras backend, run by
tests/keras/test_keras_hub.py in a fresh process (Keras picks its backend when first imported).

``python -m tests.keras.hub_job SPEC_JSON``: SPEC has ``root`` (a detection set written by
``write_detection_dataset``), ``device`` (DALI's: ``cpu`` or ``gpu``), ``epochs`` and ``out``
(an ``.npz`` of the first batch's boxes after ``fit`` and of a dataset started at the epoch
after it, and a ``.json`` of the losses per epoch and the error KerasHub's ``fit`` gave on the
backend's own output). The backend is ``KERAS_BACKEND``'s.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from daliaug.tools.demo_data import CLASS_NAMES

SIZE = 64


def config(root: Path, backend: str = "cpu") -> dict[str, Any]:
    """The detection set at ``root`` as KerasHub's detectors take it: ``yxyx`` boxes (their
    default format), images scaled to 0..1, computed by DALI on ``backend``."""
    return {
        "source": {
            "type": "coco",
            "annotations": str(root / "annotations.json"),
            "images": str(root / "images"),
        },
        "image_size": SIZE,
        "batch_size": 8,
        "bounding_box_format": "yxyx",
        "max_boxes": 4,
        "backend": backend,
        "seed": 3,
        "transforms": [{"type": "flip"}, {"type": "normalize", "rescale": 1 / 255}],
    }


def retina_net() -> Any:
    """A seeded ``RetinaNetObjectDetector`` small enough to train on a CPU in seconds."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(1)
    encoder = keras_hub.models.ResNetBackbone(
        input_conv_filters=[64],
        input_conv_kernel_sizes=[3],
        stackwise_num_filters=[64, 32, 32],
        stackwise_num_blocks=[1, 1, 1],
        stackwise_num_strides=[1, 2, 2],
        block_type="basic_block",
        image_shape=(SIZE, SIZE, 3),
    )
    backbone = keras_hub.models.RetinaNetBackbone(
        image_encoder=encoder, min_level=3, max_level=4, use_p5=False, image_shape=(SIZE, SIZE, 3)
    )
    model = keras_hub.models.RetinaNetObjectDetector(
        backbone=backbone,
        num_classes=len(CLASS_NAMES),
        bounding_box_format="yxyx",
        pre_logits_num_conv_layers=1,
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


def main(spec: dict) -> None:
    import keras

    import daliaug
    from daliaug.keras import EpochSync

    warnings.simplefilter("ignore")
    root = Path(spec["root"])
    report: dict[str, Any] = {"backend": keras.backend.backend(), "refused": ""}
    model = retina_net()
    train = daliaug.make_dataset(config(root, spec["device"]), framework="tensorflow")
    report["engine"] = str(daliaug.describe(train))
    # Keras' JAX and PyTorch trainers read a batch to build the model before the first epoch:
    # EpochSync makes each epoch of fit read the data epoch of its number all the same
    sync = [EpochSync(train)]
    history = model.fit(train, epochs=spec["epochs"], verbose=0, callbacks=sync)
    report["loss"] = [float(v) for v in history.history["loss"]]
    if report["backend"] != "tensorflow":  # the backend's own batches: refused, naming the fix
        try:
            model.fit(daliaug.make_dataset(config(root)), epochs=1, verbose=0)
        except daliaug.ConfigError as error:
            report["refused"] = str(error)
    # KerasHub's .map and .prefetch keep the epochs: the next pass is epoch ``epochs``
    _, targets = next(iter(train))
    resumed = daliaug.make_dataset(
        config(root, spec["device"]), framework="tensorflow", initial_epoch=spec["epochs"]
    )
    _, expected = next(iter(resumed))
    out = Path(spec["out"])
    np.savez(out, boxes=np.asarray(targets["boxes"]), resumed=np.asarray(expected["boxes"]))
    out.with_suffix(".json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
