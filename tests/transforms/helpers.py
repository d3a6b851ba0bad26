"""Helpers shared by the transform tests: reference resampling with SciPy and the
geometry of 64x64 warps."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from daliaug.algebra import Affine
from daliaug.parity.measure import inside_source
from tests.helpers import ENGINE_BACKENDS, sample_photos


def inner(a: np.ndarray, border: int = 1) -> np.ndarray:
    return a[border:-border, border:-border]


def reference_warp(
    img: np.ndarray, forward: np.ndarray, out_hw: tuple[int, int], mode: str = "constant"
) -> np.ndarray:
    """Bilinear resampling with SciPy for a 2x3 source-to-destination map in pixel-corner
    coordinates (pixel centres at +0.5), the convention daliaug documents."""
    full = np.vstack([forward, [0, 0, 1]])
    inv = np.linalg.inv(full)
    # index coords (row, col) = corner coords (y, x) - 0.5
    m = np.array([[inv[1, 1], inv[1, 0]], [inv[0, 1], inv[0, 0]]])
    centre = np.array([0.5, 0.5])
    offset = m @ centre + np.array([inv[1, 2], inv[0, 2]]) - centre
    return np.stack(
        [
            ndimage.affine_transform(
                img[..., c].astype(np.float64), m, offset, out_hw, order=1, mode=mode
            )
            for c in range(img.shape[-1])
        ],
        axis=-1,
    )


def inside(forward: np.ndarray, margin: float = 1.0) -> np.ndarray:
    """Output pixels of a 64x64 warp whose source point lies ``margin`` pixels inside."""
    return inside_source(Affine(*forward.ravel()), (64, 64), (64, 64), margin)


def about_centre(linear: np.ndarray, c: float = 32.0) -> np.ndarray:
    t = np.array([[1, 0, c], [0, 1, c], [0, 0, 1]])
    l3 = np.eye(3)
    l3[:2, :2] = linear
    return (t @ l3 @ np.linalg.inv(t))[:2]


def photos() -> np.ndarray:
    """Six 48x64 RGB uint8 crops of the two sample photos (:func:`tests.helpers.sample_photos`)."""
    corners = [(40, 60), (200, 300), (300, 500)]
    return np.stack([p[y : y + 48, x : x + 64] for p in sample_photos() for y, x in corners])


def run_arrays(
    engine: str,
    images: np.ndarray,
    transforms: list[dict],
    params: dict[str, float | np.ndarray] | None = None,
    **fields: Any,
) -> np.ndarray:
    """``images`` (uint8, N x H x W x C) through ``transforms`` at their own size on ``engine``
    (its name, on the CPU), float32 on 0..255; ``params`` (by parameter key, a
    number or one value per image) replaces the draws."""
    from daliaug.config import load_config
    from daliaug.outputs.bridges import engine_batches as batches
    from daliaug.sources.arrays import array_samples

    n, h, w, c = images.shape
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [h, w],
            "channels": c,
            "batch_size": n,
            "shuffle": False,
            "seed": 3,
            "label_mode": "none",
            "backend": ENGINE_BACKENDS[engine],
            "transforms": transforms,
            **fields,
        }
    )
    rows = None
    if params is not None:
        keys = config.plan.param_keys
        rows = np.stack([np.broadcast_to(params[k], (n,)) for k in keys], 1).astype(np.float32)
    samples = array_samples(images, np.zeros(n, np.int32))
    out = np.concatenate([b[0] for b in batches(engine, config, samples, "cpu", params=rows)])
    return out.astype(np.float32)


def photo_crops(count: int, size: int = 64) -> list[np.ndarray]:
    """``count`` ``size`` x ``size`` crops of the two sample photos (lossless PNG when
    written)."""
    sources = sample_photos()
    out = []
    for i in range(count):
        img = sources[i % len(sources)]
        y, x = 60 + 37 * i, 120 + 53 * i
        out.append(np.ascontiguousarray(img[y : y + size, x : x + size]))
    return out


def pin_keras_draws(monkeypatch: Any, **queues: list[np.ndarray]) -> None:
    """Keras' TensorFlow random functions (``uniform``, ``beta``, ``shuffle``, ``normal``, as
    its layers call them through their backend) return the given arrays, in order, instead of
    drawing: a layer then runs its own code on pinned draws."""
    import keras.src.backend.tensorflow.random as keras_random
    import tensorflow as tf

    def pinned(name: str) -> Any:
        def draw(*args: Any, **kwargs: Any) -> Any:
            value = np.asarray(queues[name].pop(0))
            dtype = "int32" if name == "shuffle" else kwargs.get("dtype") or "float32"
            return tf.constant(value, dtype=dtype)

        return draw

    for name in queues:
        monkeypatch.setattr(keras_random, name, pinned(name))


def from_keras_for(layers: Any, engine: str, size: tuple[int, int], n: int, **fields: Any) -> Any:
    """``daliaug.from_keras(layers)`` (a layer alone, a list or a model) for ``n`` arrays of
    ``size`` on ``engine`` (its name, on the CPU: :data:`tests.helpers.ENGINE_BACKENDS`), one batch,
    in order."""
    import keras

    import daliaug

    fields = {"label_mode": "none", **fields}
    backend = ENGINE_BACKENDS[engine]
    return daliaug.from_keras(
        layers if isinstance(layers, list | keras.Model) else [layers],
        source={"type": "arrays"},
        image_size=size,
        batch_size=n,
        shuffle=False,
        backend=backend,
        seed=0,
        **fields,
    )


def rows_of(config: Any, values: dict[str, Any], n: int) -> np.ndarray:
    """Parameter rows for ``n`` samples from ``values`` by parameter name (without the
    transform's index), in the plan's order."""
    keys = config.plan.param_keys
    columns = [np.broadcast_to(values[k.split(".", 1)[1]], (n,)) for k in keys]
    return np.stack(columns, 1).astype(np.float32)


def run_config(
    config: Any, engine: str, x: np.ndarray, rows: np.ndarray, labels: Any = None
) -> Any:
    """One batch of ``config`` on ``x`` (and ``labels``) with parameter ``rows``."""
    from daliaug.outputs.bridges import engine_batches as batches
    from daliaug.sources.arrays import array_samples

    return next(iter(batches(engine, config, array_samples(x, labels), "cpu", params=rows)))
