"""Run DALI (or the OpenCV engine) and the TensorFlow backend on the same images with the same
explicit parameters, and report how far apart they are: per transform, for the whole pipeline,
for its masks (for segmentation), for the output stage (normalization, dtype, layout) and,
separately, for the JPEG decoders.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from daliaug.config import Config
from daliaug.engine_names import Choice
from daliaug.engines import engine
from daliaug.engines.select import Device
from daliaug.errors import BackendError
from daliaug.parity.inputs import ParityInputs, with_masks
from daliaug.parity.measure import Stats, compared_pixels, differences, seeded_rows
from daliaug.parity.report import Kind, Report, Result
from daliaug.parity.run import compared, outputs, run_tf, tf_outputs
from daliaug.sources import Samples
from daliaug.sources.segmentation import MaskTargets
from daliaug.transforms.base import TF_ONLY_FILLS


def cases(config: Config) -> Iterator[tuple[str, Kind, Config]]:
    """Each transform alone (with the config's other fields), then the whole pipeline."""
    if len(config.transforms) > 1:
        for i, t in enumerate(config.transforms):
            yield f"{i}: {t.type}", "transform", config.model_copy(update={"transforms": [t]})
    yield "pipeline", "pipeline", config


def prepared(config: Config, n: int, seed: int) -> tuple[Config, np.ndarray]:
    """``config`` as a comparison runs it, and ``n`` rows of parameters drawn from ``seed``."""
    config = compared(config)
    return config, seeded_rows(config.plan, n, seed)


def decoder_runs(config: Config, jpegs: Samples) -> Iterator[tuple[Config, np.ndarray]]:
    """Decode-only runs: no transform and the output at the images' own size (an exact copy),
    one per distinct size, with the indices of the images of that size."""
    sizes = jpegs.sizes
    for size in np.unique(sizes, axis=0):
        run = compared(config, transforms=[], image_size=(int(size[0]), int(size[1])))
        yield run, np.flatnonzero((sizes == size).all(axis=1))


def engine_differences(
    config: Config, samples: Samples, rows: np.ndarray, reference: np.ndarray, choice: Choice
) -> np.ndarray:
    """An engine's outputs against ``reference`` outputs, outside the border band."""
    plan = config.plan
    images = outputs(choice.engine, config, samples, rows, choice.device)[0]
    return differences(images, reference, compared_pixels(plan, rows, samples.sizes))


def _case(config: Config, samples: Samples, seed: int, choice: Choice) -> np.ndarray:
    config, rows = prepared(config, len(samples), seed)
    return engine_differences(config, samples, rows, run_tf(config, samples, rows), choice)


def _output_stats(config: Config, samples: Samples, seed: int, choice: Choice) -> Stats:
    """The whole pipeline with the config's own output, mapped back to the 0..255 scale."""
    run, rows = prepared(config, len(samples), seed)
    run = run.model_copy(update={"output": config.output})
    mean, std = config.output.mean_std(config.channels)

    def unnormalized(images: np.ndarray) -> np.ndarray:
        if config.output.layout == "NCHW":
            images = images.transpose(0, 2, 3, 1)
        return images.astype(np.float64) * std + mean

    images = unnormalized(outputs(choice.engine, run, samples, rows, choice.device)[0])
    tf_images = unnormalized(run_tf(run, samples, rows))
    plan = config.plan
    return Stats.of(images, tf_images, compared_pixels(plan, rows, samples.sizes))


def _decoder_stats(config: Config, jpegs: Samples, choice: Choice) -> Stats:
    """Decode only: the engine against TensorFlow on every JPEG, pooled."""
    pooled = []
    for run, indices in decoder_runs(config, jpegs):
        group = jpegs.subset(indices)
        rows = np.zeros((len(group), 0), np.float32)
        pooled.append(engine_differences(run, group, rows, run_tf(run, group, rows), choice))
    return Stats.of_differences(np.concatenate(pooled))


def _mask_stats(config: Config, samples: Samples, seed: int, choice: Choice) -> Stats:
    """The whole pipeline's masks (class indices) from both backends: the share of mask pixels
    whose class differs, outside the border band. The config's segmentation source is pointed
    at synthetic masks of the five classes of ``MASK_PALETTE`` for ``samples``' images."""
    source = config.source
    assert isinstance(source, MaskTargets)
    with tempfile.TemporaryDirectory() as tmp:
        paired = with_masks(samples, Path(tmp), colour=source.colour_coded)
        classes = (
            {"classes": Path(tmp) / "classes.csv"}
            if source.colour_coded
            else {"num_classes": len(paired.class_names), "class_names": None}
        )
        run, rows = prepared(config, len(paired), seed)
        masks_source = source.model_validate(
            {**source.model_dump(), **classes, "mask_output": "index", "mask_dtype": "int32"}
        )
        run = run.model_copy(update={"source": masks_source})
        masks = outputs(choice.engine, run, paired, rows, choice.device)[1]
        tf_masks = tf_outputs(run, paired, rows)[1]
    plan = config.plan
    differ = (masks != tf_masks)[..., None].astype(np.float64)
    mask = compared_pixels(plan, rows, paired.sizes)
    return Stats.of_differences(differ[np.broadcast_to(mask, differ.shape)])


def tf_only(config: Config) -> str:
    """Why DALI cannot run ``config``: its fill, which DALI's warp lacks."""
    return (
        f"fill {config.fill!r} runs on the TensorFlow backend only (DALI's warp has no such border)"
    )


def run_parity(
    config: Config, inputs: ParityInputs, seed: int, device: Device, engine_name: str = "dali"
) -> Report:
    """Compare DALI on ``device`` (or the OpenCV engine, ``engine_name="opencv"``) with the
    TensorFlow backend on ``inputs`` (needs both). What DALI cannot run (a ``reflect`` or
    ``wrap`` fill) is listed as not compared.

    On JPEG inputs the decoders are compared alone, and the whole pipeline once more (with
    the decoders' tolerance) to cover decoding only a crop window. A transform DALI cannot
    run on ``device`` (``elastic`` on the CPU) is a ``BackendError``.
    """
    other = engine(engine_name)
    compared_with = Choice(other.name, other.device(device))
    lacking = other.lacks(config, compared_with.device)
    if lacking:
        raise BackendError(
            f"{', '.join(lacking)}: {other.title} cannot run it on its {device}: no parity"
        )
    samples = inputs.lossless
    results, skipped = [], {}
    for name, kind, case in cases(config):
        if case.fill in TF_ONLY_FILLS:
            skipped[name] = tf_only(case)
        else:
            stats = Stats.of_differences(_case(case, samples, seed, compared_with))
            results.append(Result(name, kind, stats))
    whole = config.fill not in TF_ONLY_FILLS  # DALI runs the whole pipeline
    if whole and config.source.segmentation:
        results.append(Result("masks", "masks", _mask_stats(config, samples, seed, compared_with)))
    if whole and config.output != compared(config).output:
        name = f"output ({config.output.dtype}, {config.output.layout})"
        results.append(Result(name, "output", _output_stats(config, samples, seed, compared_with)))
    if inputs.jpeg is not None:
        stats = _decoder_stats(config, inputs.jpeg, compared_with)
        results.append(Result("JPEG decoders", "decoder", stats))
    if whole and inputs.jpeg is not None:
        stats = Stats.of_differences(_case(config, inputs.jpeg, seed, compared_with))
        results.append(Result("pipeline on JPEGs", "decoder", stats))
    return Report(f"{other.label(compared_with.device)} vs TF", seed, results, skipped)
