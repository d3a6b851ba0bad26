"""``aug_mix`` against torchvision's ``AugMix`` definition: its magnitude tables written as
torchvision writes them (in torch), its mix (``m x + sum_k w_k chain_k``, computed in torch on
``uint8`` images as torchvision computes it) with pinned chains on real photos on both engines,
its draws (depth 1..3, ops, bins, signs, Dirichlet and Beta weights), and the engines against
each other with drawn parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.transforms.aug_mix import ALL_OPS, AUG_MIX_OPS, BINS, aug_mix_magnitudes
from tests.helpers import run_of, write_image_dir
from tests.transforms.helpers import photo_crops, photos, run_arrays
from tests.transforms.test_rand_augment import engine_difference


def _torchvision_table(op: str, width: int) -> torch.Tensor:
    """torchvision's ``AugMix._AUGMENTATION_SPACE`` entry of ``op`` for ``BINS`` bins."""
    tables = {
        "shear_x": lambda: torch.linspace(0.0, 0.3, BINS),
        "shear_y": lambda: torch.linspace(0.0, 0.3, BINS),
        "translate_x": lambda: torch.linspace(0.0, width / 3.0, BINS),
        "translate_y": lambda: torch.linspace(0.0, width / 3.0, BINS),
        "rotate": lambda: torch.linspace(0.0, 30.0, BINS),
        "posterize": lambda: 4 - (torch.arange(BINS) / ((BINS - 1) / 4)).round().int(),
        "solarize": lambda: 255.0 * torch.linspace(1.0, 0.0, BINS),
    }
    if op in tables:
        return tables[op]().double()
    if op in ("brightness", "color", "contrast", "sharpness"):
        return torch.linspace(0.0, 0.9, BINS).double()
    return torch.zeros(BINS, dtype=torch.float64)


@pytest.mark.parametrize("op", ALL_OPS)
def test_tables_are_torchvisions(op: str) -> None:
    ours = np.array(aug_mix_magnitudes(op))
    if op.startswith("translate"):
        ours = ours * 64.0  # daliaug's translations are fractions of the side
    np.testing.assert_allclose(ours, _torchvision_table(op, 64).numpy(), atol=1e-4)


CHAINS = [("solarize", 198.0), ("posterize", 3.0), ("brightness", 0.3)]
"""One op per chain at a value of its table; torchvision's results of these are exact on
``uint8`` but for brightness, which truncates."""
WEIGHTS = np.array([0.5, 0.2, 0.3])
ORIGINAL = 0.4


def _torchvision_mix(images: np.ndarray) -> np.ndarray:
    """torchvision's ``AugMix`` mix of :data:`CHAINS` on ``uint8`` images, in torch."""
    x = torch.from_numpy(images).permute(0, 3, 1, 2)
    chains = [
        torch.where(x >= 198, 255 - x, x),  # F.solarize
        x & ~(2 ** (8 - 3) - 1),  # F.posterize
        (1.3 * x.float()).clamp(0, 255).to(torch.uint8),  # F.adjust_brightness (_blend)
    ]
    mix = ORIGINAL * x.float()
    for w, chain in zip(WEIGHTS, chains, strict=True):
        mix = mix + (1 - ORIGINAL) * w * chain.float()
    return mix.to(torch.uint8).permute(0, 2, 3, 1).numpy().astype(np.float32)


@pytest.mark.slow
def test_pinned_chains_match_torchvisions_mix(engine: str) -> None:
    images = photos()
    transform = {"type": "aug_mix", "chain_depth": 2}
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": list(images.shape[1:3]),
            "label_mode": "none",
            "transforms": [transform],
        }
    )
    params = {k: 0.0 for k in config.plan.param_keys}
    for k, (op, value) in enumerate(CHAINS):
        params[f"0.c{k}_0_{op}"] = 1.0
        params[f"0.c{k}_0_{op}_mag"] = value
        params[f"0.c{k}_mix"] = WEIGHTS[k]
    params["0.original"] = ORIGINAL
    ours = run_arrays(engine, images, [transform], params)
    theirs = _torchvision_mix(images)
    # torchvision truncates to uint8 (brightness, then the mix): within one level below
    diff = ours - theirs
    assert diff.min() >= -1e-3 and diff.max() < 2.0, (diff.min(), diff.max())
    assert np.abs(diff).mean() < 0.7


def _draws(fields: dict, n: int) -> dict[str, np.ndarray]:
    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [8, 8],
            "label_mode": "none",
            "transforms": [{"type": "aug_mix", **fields}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(2), n)
    return {k.split(".", 1)[1]: rows[:, i] for i, k in enumerate(config.plan.param_keys)}


@pytest.mark.parametrize("all_ops", [True, False])
def test_draws_follow_torchvision(all_ops: bool) -> None:
    """Depth uniform in 1..3, each op uniform over the ops in use, its bin uniform below
    ``severity``, signed ops negative half the time; Dirichlet weights and a Beta."""
    n = 20000
    drawn = _draws({"all_ops": all_ops, "severity": 4}, n)
    ops = ALL_OPS if all_ops else AUG_MIX_OPS
    slots = [np.stack([drawn[f"c2_{j}_{op}"] for op in ops], 1) for j in range(3)]
    depth = sum(s.sum(1) for s in slots)
    assert set(np.unique(depth)) == {1.0, 2.0, 3.0}
    assert np.allclose([(depth == d).mean() for d in (1, 2, 3)], 1 / 3, atol=0.01)
    assert np.allclose(slots[0].mean(0), 1 / len(ops), atol=0.01)
    chosen = slots[0][:, ops.index("rotate")] == 1
    angles = drawn["c2_0_rotate_mag"][chosen]
    table = aug_mix_magnitudes("rotate")[:4]
    np.testing.assert_allclose(np.unique(np.abs(angles)), table, rtol=1e-6)
    assert abs((angles[angles != 0] < 0).mean() - 0.5) < 0.05
    bits = drawn["c2_0_posterize_mag"]
    assert set(np.unique(bits)) == {4.0, 3.0}  # bins 0, 1 -> 4 bits; bins 2, 3 -> 3 bits
    weights = np.stack([drawn[f"c{k}_mix"] for k in range(3)], 1)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-5)
    assert np.allclose(weights.mean(0), 1 / 3, atol=0.01)
    assert abs(drawn["original"].mean() - 0.5) < 0.01


@pytest.mark.slow
def test_engines_agree_on_drawn_chains(tmp_path: Path) -> None:
    """DALI on the CPU and the TF engine on 24 photos with drawn parameters: one chain each
    (the graphs, a third of three chains', are most of the time), as many chains as eight
    images of three, every operation drawn; the mix of several chains on both engines is
    ``test_pinned_chains_match_torchvisions_mix``'s."""
    root = write_image_dir(tmp_path, {"a": photo_crops(8) * 3})
    diff = engine_difference(root, {"type": "aug_mix", "fill": 30, "mixture_width": 1}, 5, 24)
    # quantizing ops (posterize, equalize) turn float rounding differences into whole steps
    assert (diff > 0.05).mean() < 2e-3, (diff > 0.05).mean()


WIDTH = {"aug_mix": "mixture_width", "keras_aug_mix": "num_chains"}
"""Each chain-mixing transform's field for its number of chains."""


@pytest.mark.slow
@pytest.mark.parametrize("transform", ["aug_mix", "keras_aug_mix"])
def test_tf_engine_sample_by_sample_equals_the_whole_batch(
    transform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TF engine computes the chains one sample at a time, each running only the operations
    it drew (``each_sample``); the same drawn parameters on the whole batch (every operation
    for every sample, the drawn one kept) give the same images: no parameter of another sample
    is read. One chain (every chain runs the same code; its graph, traced and compiled twice,
    is most of the time) on sixteen samples whose draws pick every operation and every chain
    length."""
    from daliaug.engines.tf import pixels
    from tests.helpers import config_for, run_backend

    root = write_image_dir(tmp_path, {"a": photo_crops(8) * 2})
    stage = {"type": transform, WIDTH[transform]: 1}
    config = config_for(root, transforms=[stage], backend="tf", batch_size=16)
    rows = draw_rows(config.plan, np.random.default_rng(8), 16)
    chain = config.transforms[-1].chain
    keys = [k.split(".", 1)[1] for k in config.plan.param_keys]
    flags = np.stack(
        [[rows[:, keys.index(f"c0_{j}_{op}")] for op in chain.operations] for j in range(3)]
    )
    assert flags.sum(axis=(0, 2)).min() > 0, "an operation no sample drew"
    assert set(flags.sum(axis=(0, 1))) >= {1.0, 2.0, 3.0}, "a chain length no sample drew"
    by_sample = run_backend(config, rows)
    monkeypatch.setattr(pixels.KERNELS, "each_sample", lambda op, images: op(images))
    whole = run_backend(config, rows)
    assert not np.array_equal(by_sample[0], by_sample[1])
    np.testing.assert_allclose(by_sample, whole, atol=0.02)


@pytest.mark.parametrize("transform", ["aug_mix", "keras_aug_mix"])
def test_gpu_graph_keeps_dalis_device_rules(transform: str, demo_dir: Path) -> None:
    """Its GPU graph walked without a GPU (``engines/dali/check.py``): the chains' resampling,
    colour pass and conditionals take their arguments where DALI's GPU operators read them."""
    from functools import partial

    from daliaug.engines.dali import pipeline
    from daliaug.engines.dali.check import graph_problems
    from daliaug.prepare import prepare_samples

    config = load_config(
        {
            "source": {"type": "directory", "path": str(demo_dir)},
            "image_size": 64,
            "transforms": [{"type": transform}],
        }
    )
    samples = prepare_samples(config)
    for gpu_inputs in (True, False):
        define = partial(pipeline.named_pipeline, run_of(config, samples, "gpu"), False, gpu_inputs)
        assert not graph_problems(define), gpu_inputs


@pytest.mark.parametrize("kind", ["aug_mix", "keras_aug_mix"])
def test_auto_runs_augmix_on_the_tf_engine_without_a_gpu(kind: str) -> None:
    """The TF engine computes AugMix's chains sample by sample, each running only the
    operations it drew: about half DALI's CPU time on a CPU host (bench/README)."""
    from daliaug.engines.select import cpu_placement

    cfg = load_config(
        {
            "source": {"type": "directory", "path": "data"},
            "image_size": 32,
            "transforms": [{"type": kind}],
        }
    )
    assert cpu_placement(cfg) == "tf"
