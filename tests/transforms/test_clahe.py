"""The ``clahe`` pixel stage on the TF engine, from Keras' own
``ContrastLimitedAdaptiveHistogramEqualization`` through ``from_keras``: Keras' pixels on real
photos (to float rounding), at inference too; DALI's ``fn.clahe`` computes other tables (hence
the TF engine, chosen by ``backend: auto``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.engines.select import cpu_placement
from daliaug.errors import BackendWarning, ConfigError
from tests.keras.conftest import photos
from tests.sources.test_sources import seg_config, write_segmentation
from tests.transforms.helpers import from_keras_for, rows_of, run_arrays, run_config


def keras_clahe(**kwargs: Any) -> Any:
    import keras

    return keras.layers.ContrastLimitedAdaptiveHistogramEqualization(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "grid", "clip"),
    [((48, 64), (8, 8), 4.0), ((50, 70), (3, 5), 2.0), ((48, 64), (4, 4), 0.0)],
)
def test_matches_keras(size: tuple[int, int], grid: tuple[int, int], clip: float) -> None:
    """Keras' layer has no random draw: its pixels, to float rounding (uneven tiles padded)."""
    x = photos(*size)
    layer = keras_clahe(clip_limit=clip, tile_grid_size=grid)
    config = from_keras_for(layer, "tf", size, len(x), output={"dtype": "float32"})
    assert config.transforms[-1].tile_grid_size == grid
    ours = np.asarray(run_config(config, "tf", x, rows_of(config, {"clahe": 1.0}, len(x)))[0])
    theirs = np.asarray(layer(x.astype(np.float32)))
    np.testing.assert_allclose(ours, theirs, atol=1e-3)
    assert np.abs(ours - x).mean() > 5  # it does change the photos


def test_keras_applies_it_at_inference_too() -> None:
    x = photos().astype(np.float32)
    layer = keras_clahe()
    np.testing.assert_array_equal(layer(x, training=False), layer(x, training=True))


def test_probability_zero_keeps_the_image() -> None:
    x = photos()
    out = run_arrays("tf", x, [{"type": "clahe", "probability": 0.0}], output={"dtype": "float32"})
    np.testing.assert_array_equal(out, x)


def test_dalis_clahe_is_another_algorithm() -> None:
    """DALI's ``fn.clahe`` per channel (its CPU's ``luma_only=False``) on the same photos,
    grid and clip limit: far from Keras' tables, so DALI does not run ``clahe``."""
    from nvidia.dali import fn, pipeline_def

    x = photos()
    theirs = np.asarray(keras_clahe(clip_limit=4.0)(x.astype(np.float32)))

    @pipeline_def(batch_size=len(x), num_threads=1, device_id=None)
    def dali_clahe() -> Any:
        images = fn.external_source(source=lambda: list(x), batch=True, layout="HWC")
        return fn.clahe(images, tiles_x=8, tiles_y=8, clip_limit=4.0, luma_only=False)

    pipe = dali_clahe()
    pipe.build()
    (out,) = pipe.run()
    dali = np.stack([np.asarray(out[i]) for i in range(len(x))]).astype(np.float32)
    assert np.abs(dali - theirs).mean() > 5


def test_dali_backends_are_refused_and_auto_takes_tf(tmp_path: Path) -> None:
    t = {"type": "clahe"}
    for backend in ("cpu", "gpu"):
        with pytest.raises(
            ConfigError, match=rf"transforms\.0: 'clahe' cannot run on DALI's {backend}"
        ):
            load_config(
                {
                    "source": {"type": "arrays"},
                    "image_size": 8,
                    "backend": backend,
                    "transforms": [t],
                }
            )
    cfg = seg_config(write_segmentation(tmp_path, count=2), backend="auto", transforms=[t])
    with pytest.warns(BackendWarning, match="clahe"):
        assert cpu_placement(cfg) == "tf"


def test_a_grid_larger_than_the_output_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"transforms\.0\.tile_grid_size"):
        load_config(
            {
                "source": {"type": "arrays"},
                "image_size": [6, 40],
                "transforms": [{"type": "clahe", "tile_grid_size": [8, 8]}],
            }
        )


@pytest.mark.slow
def test_after_rescaling_on_keras_value_range() -> None:
    """On ``value_range=(0, 1)`` after ``Rescaling(1/255)``: the same tables (Keras scales the
    values to 0..255 and back)."""
    import keras

    x = photos()
    layers = [keras.layers.Rescaling(1 / 255), keras_clahe(value_range=(0, 1), clip_limit=3.0)]
    config = from_keras_for(layers, "tf", (48, 64), len(x), output={"dtype": "float32"})
    ours = np.asarray(run_config(config, "tf", x, rows_of(config, {"clahe": 1.0}, len(x)))[0])
    theirs = np.asarray(keras.Sequential(layers)(x.astype(np.float32)))
    np.testing.assert_allclose(ours, theirs, atol=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"tile_grid_size": (16, 16)},
            r"'clahe_layer': tile_grid_size: \[16, 16\] tiles do not fit",
        ),
        ({"clip_limit": -1.0}, r"for .* 'clahe_layer':\n  clip_limit: Input should be greater"),
    ],
)
def test_the_layers_bad_arguments_name_it(kwargs: dict, message: str) -> None:
    """Keras takes these; the refusal names the layer, not a transform index."""
    import keras

    from daliaug import from_keras

    layers = [keras.layers.Resizing(8, 8), keras_clahe(name="clahe_layer", **kwargs)]
    with pytest.raises(ConfigError, match=message):
        from_keras(layers, source={"type": "arrays"}, backend="tf")
