"""Fixtures for the ImageDataGenerator drop-in: Keras' own class beside daliaug's, real-looking
images in memory and in class folders."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daliaug.parity.inputs import parity_image
from tests.helpers import sample_photos, write_image_dir


def keras_generator(**kwargs: Any) -> Any:
    """Keras' own ``ImageDataGenerator`` (its warnings silenced)."""
    from keras.src.legacy.preprocessing.image import ImageDataGenerator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ImageDataGenerator(**kwargs)


def daliaug_generator(**kwargs: Any) -> Any:
    """daliaug's drop-in (its warnings silenced)."""
    from daliaug.keras import ImageDataGenerator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ImageDataGenerator(**kwargs)


def images(n: int, h: int = 24, w: int = 24, seed: int = 0) -> np.ndarray:
    """``n`` real-looking uint8 RGB images."""
    return np.stack([parity_image(h, w, seed + i) for i in range(n)])


@pytest.fixture(scope="session")
def class_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three class folders of 24x24 PNGs (5, 4 and 3 of them, one in a sub-folder)."""
    root = tmp_path_factory.mktemp("classes")
    counts = {"cat": 5, "dog": 4, "eel": 3}
    for k, (name, count) in enumerate(counts.items()):
        write_image_dir(root, {name: list(images(count, seed=10 * k))})
    nested = root / "dog" / "more"
    nested.mkdir()
    (root / "dog" / "0003.png").rename(nested / "0000.png")
    return root


def on_edge(params: dict, shape: tuple[int, int], tolerance: float = 2e-3) -> np.ndarray:
    """Pixels whose source point under Keras' ``params`` lies within ``tolerance`` pixels of
    the outermost pixel centres: there SciPy's ``constant`` mode gives the fill or the image
    as float64 rounding falls (daliaug samples the image within 0.001 pixels)."""
    return inside(params, shape, 0.5 - tolerance) & ~inside(params, shape, 0.5 + tolerance)


def inside(params: dict, shape: tuple[int, int], margin: float = 1.0) -> np.ndarray:
    """Pixels whose source point lies ``margin`` pixels inside a ``shape`` image under Keras'
    ``params`` (where fills and border handling cannot matter)."""
    from daliaug.algebra import Canvas
    from daliaug.engines.feed import NUMPY
    from daliaug.parity.measure import inside_source
    from daliaug.plan import Plan
    from daliaug.transforms.keras_affine import KerasAffine

    affine = KerasAffine(width_shift_range=1.0, height_shift_range=1.0)  # pixels
    row = {f"0.{k}": v for k, v in affine.from_keras(params, shape).items()}
    geometry = Plan.of([affine], shape).geometry(row, Canvas(*map(float, shape)), NUMPY.math)
    return inside_source(geometry.forward, shape, shape, margin)


def photos(h: int = 48, w: int = 64) -> np.ndarray:
    """Four real photos as ``(4, h, w, 3)`` uint8: the two sample photos
    (:func:`tests.helpers.sample_photos`), whole and their left halves, resized (bilinear) to
    ``h x w``."""
    from PIL import Image

    out = []
    for image in sample_photos():
        for part in (image, image[:, : image.shape[1] // 2]):
            small = Image.fromarray(part).resize((w, h), Image.Resampling.BILINEAR)
            out.append(np.asarray(small))
    return np.stack(out)


IMAGE_MODULE = "keras.src.layers.preprocessing.image_preprocessing."
OTHER_IMAGE_LAYERS = ("Rescaling", "Normalization", "Pipeline")
"""Image preprocessing layers of ``keras.layers`` outside its image_preprocessing package: the
value layers and the container Keras recommends for augmentation."""


def keras_image_layers() -> list[str]:
    """Every image preprocessing layer class the installed ``keras.layers`` exports."""
    import keras

    names = [
        name
        for name, cls in vars(keras.layers).items()
        if inspect.isclass(cls) and cls.__module__.startswith(IMAGE_MODULE)
    ]
    return sorted({*names, *OTHER_IMAGE_LAYERS})
