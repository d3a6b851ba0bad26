"""In random mode every sampler draws from the documented distributions: the epochs' parameter
stream (what make_dataset feeds both backends), the same seen through the DALI loader, and
DALI's in-graph draws (used with DALI's own TFRecord reader). Checked over many
samples with fresh seeds (printed on failure) at a false-alarm rate of about 1e-6 per check."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from daliaug.algebra import Canvas
from daliaug.engines.feed import NUMPY
from daliaug.epoch import Epochs, resolve_seed
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.plan import Plan
from daliaug.sources.base import Samples
from tests.helpers import config_for

N = 4000
TRANSFORMS = [
    {"type": "random_resized_crop", "scale": [0.2, 0.9], "ratio": [0.5, 2.0]},
    {"type": "flip", "horizontal": 0.3, "vertical": 0.7},
    {"type": "rotation", "angle": [-10, 30]},
    {"type": "zoom", "factor": [0.8, 1.5], "keep_aspect": False},
    {"type": "shift", "x": 0.1, "y": [0.0, 0.2]},
    {"type": "shear", "angle": 15},
    {"type": "brightness", "factor": 0.4},
    {"type": "contrast", "factor": [0.5, 1.5]},
    {"type": "saturation", "factor": 0.3},
    {"type": "hue", "degrees": 20},
    {"type": "invert", "probability": 0.2},
    {"type": "grayscale", "probability": 0.6},
    {"type": "color_degeneration", "factor": 0.4},
]
UNIFORM = {
    "0.area": (0.2, 0.9),
    "0.log_ratio": (math.log(0.5), math.log(2.0)),
    "0.u": (0, 1),
    "0.v": (0, 1),
    "2.angle": (-10, 30),
    "3.zoom_x": (0.8, 1.5),
    "3.zoom_y": (0.8, 1.5),
    "4.dx": (-0.1, 0.1),
    "4.dy": (0.0, 0.2),
    "5.angle": (-15, 15),
    "6.factor": (0.6, 1.4),
    "7.factor": (0.5, 1.5),
    "8.factor": (0.7, 1.3),
    "9.degrees": (-20, 20),
    "12.factor": (-0.4, 0.4),
}
BERNOULLI = {"1.flip_x": 0.3, "1.flip_y": 0.7, "10.invert": 0.2, "11.grey": 0.6}


def in_graph_rows(plan: Plan, seed: int) -> np.ndarray:
    """``N`` parameter rows drawn by DALI's random operators inside a pipeline."""
    from nvidia.dali import pipeline_def

    from daliaug.engines.dali.math import DaliRandom, as_tensor_arg

    @pipeline_def(batch_size=1000, num_threads=1, device_id=None, seed=seed)
    def draws():
        drawn = plan.draw(DaliRandom())
        return as_tensor_arg([drawn[k] for k in plan.param_keys], (-1,))

    pipe = draws()
    pipe.build()
    return np.concatenate([np.asarray(pipe.run()[0].as_array()) for _ in range(N // 1000)])


@pytest.fixture(scope="module", params=["epochs", "loader", "dali-graph"])
def draws(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict[str, np.ndarray]]:
    """``N`` parameter rows from one sampler, by key, and a label naming sampler and seed."""
    root = tmp_path_factory.mktemp("tiny")
    (root / "a").mkdir()
    Image.fromarray(np.full((8, 8, 3), 90, np.uint8)).save(root / "a" / "0.png")
    seed = resolve_seed(None)
    config = config_for(
        root,
        image_size=8,
        batch_size=1000,
        seed=seed,
        transforms=TRANSFORMS,
        output={"dtype": "uint8"},
    )
    plan = config.plan
    if request.param == "loader":
        files = [str(root / "a" / "0.png")] * N
        samples = Samples.of_files(
            {"path": files}, ["a"], np.full((N, 2), 8, np.int32), label=np.zeros(N, np.int32)
        )
        loader = DaliLoader(config, samples=samples, return_params=True)
        rows = np.concatenate([batch[2] for batch in loader])
    elif request.param == "epochs":
        epochs = Epochs.of(config, N)
        rows = np.concatenate(list(epochs.parameters(plan, epoch=3)))
    else:
        rows = in_graph_rows(plan, seed)
    assert rows.shape == (N, len(plan.param_keys))
    return f"{request.param} draws, seed {seed}", dict(zip(plan.param_keys, rows.T, strict=True))


def test_flip_rates(draws: tuple[str, dict[str, np.ndarray]]) -> None:
    label, by_key = draws
    for key, p in BERNOULLI.items():
        values = by_key[key]
        assert set(np.unique(values)) <= {0.0, 1.0}, label
        assert abs(values.mean() - p) <= 5 * math.sqrt(p * (1 - p) / N), f"{label}: {key}"


def test_uniform_ranges_means_and_shapes(draws: tuple[str, dict[str, np.ndarray]]) -> None:
    """Inside the range and reaching both ends, centred, and uniform (Kolmogorov-Smirnov)."""
    label, by_key = draws
    for key, (low, high) in UNIFORM.items():
        values, width = by_key[key].astype(np.float64), high - low
        slack = 1e-6 * max(1.0, abs(low), abs(high))  # float32 storage
        where = f"{label}: {key} in [{values.min()}, {values.max()}]"
        assert low - slack <= values.min() <= low + 14 * width / N, where  # P(miss) ~ e^-14
        assert high - 14 * width / N <= values.max() <= high + slack, where
        assert abs(values.mean() - (low + high) / 2) <= 5 * width / math.sqrt(12 * N), where
        assert stats.kstest(values, "uniform", args=(low, width)).pvalue > 1e-6, where


def test_angle_mean_and_spread(draws: tuple[str, dict[str, np.ndarray]]) -> None:
    label, by_key = draws
    angles = by_key["2.angle"]
    assert abs(angles.mean() - 10) <= 5 * 40 / math.sqrt(12 * N), label
    assert abs(angles.std() - 40 / math.sqrt(12)) <= 0.05 * 40 / math.sqrt(12), label


def test_crop_area_range(draws: tuple[str, dict[str, np.ndarray]]) -> None:
    """The crop windows the parameters give on a 200x300 image cover ``scale`` of its area, up
    to rounding to whole pixels and clipping of extreme aspect ratios."""
    label, by_key = draws
    plan = Plan.of(config_for(Path("."), transforms=TRANSFORMS[:1]).transforms, (64, 64))
    params = {k: by_key[k].astype(np.float64) for k in plan.param_keys}
    box = plan.geometry(params, Canvas(h=200.0, w=300.0), NUMPY.math).roi
    assert box is not None
    area = box.w * box.h / (200 * 300)
    assert area.min() >= 0.2 * 0.95 and area.max() <= 0.9 * 1.02, label
    assert (box.x >= 0).all() and (box.x + box.w <= 300).all() and (box.y + box.h <= 200).all()
