"""Run DALI and the TensorFlow backend on the same images with the same explicit parameters,
and report how far apart they are: per transform, for the whole pipeline, for the output
stage (normalization, dtype, layout) and, separately, for the JPEG decoders.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from daliaug.config import Config
from daliaug.device import Device
from daliaug.parity.inputs import ParityInputs
from daliaug.parity.measure import Stats, compared_pixels, differences, draw_rows
from daliaug.parity.report import Kind, Report, Result
from daliaug.parity.run import compared, run_dali, run_tf, source_sizes
from daliaug.plan import Plan
from daliaug.sources import FileSamples


def cases(config: Config) -> Iterator[tuple[str, Kind, Config]]:
    """Each transform alone (with the config's other fields), then the whole pipeline."""
    if len(config.transforms) > 1:
        for i, t in enumerate(config.transforms):
            yield f"{i}: {t.type}", "transform", config.model_copy(update={"transforms": [t]})
    yield "pipeline", "pipeline", config


def prepared(config: Config, n: int, seed: int) -> tuple[Config, np.ndarray]:
    """``config`` as a comparison runs it, and ``n`` rows of parameters drawn from ``seed``."""
    config = compared(config)
    return config, draw_rows(
        Plan.of(config.transforms, config.image_size, config.channels), n, seed
    )


def decoder_runs(config: Config, jpegs: FileSamples) -> Iterator[tuple[Config, np.ndarray]]:
    """Decode-only runs: no transform and the output at the images' own size (an exact copy),
    one per distinct size, with the indices of the images of that size."""
    sizes = source_sizes(jpegs)
    for size in np.unique(sizes, axis=0):
        run = compared(config, transforms=[], image_size=(int(size[0]), int(size[1])))
        yield run, np.flatnonzero((sizes == size).all(axis=1))


def dali_differences(
    config: Config, samples: FileSamples, rows: np.ndarray, reference: np.ndarray, device: Device
) -> np.ndarray:
    """DALI's outputs on ``device`` against ``reference`` outputs, outside the border band."""
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    dali = run_dali(config, samples, rows, device)
    return differences(dali, reference, compared_pixels(plan, rows, source_sizes(samples)))


def _case(config: Config, samples: FileSamples, seed: int, device: Device) -> np.ndarray:
    config, rows = prepared(config, len(samples), seed)
    return dali_differences(config, samples, rows, run_tf(config, samples, rows), device)


def _output_stats(config: Config, samples: FileSamples, seed: int, device: Device) -> Stats:
    """The whole pipeline with the config's own output, mapped back to the 0..255 scale."""
    run, rows = prepared(config, len(samples), seed)
    run = run.model_copy(update={"output": config.output})
    mean, std = config.output.mean_std(config.channels)

    def unnormalized(images: np.ndarray) -> np.ndarray:
        if config.output.layout == "NCHW":
            images = images.transpose(0, 2, 3, 1)
        return images.astype(np.float64) * std + mean

    dali = unnormalized(run_dali(run, samples, rows, device))
    tf_images = unnormalized(run_tf(run, samples, rows))
    plan = Plan.of(config.transforms, config.image_size, config.channels)
    return Stats.of(dali, tf_images, compared_pixels(plan, rows, source_sizes(samples)))


def _decoder_stats(config: Config, jpegs: FileSamples, device: Device) -> Stats:
    """Decode only: DALI against TensorFlow on every JPEG, pooled."""
    pooled = []
    for run, indices in decoder_runs(config, jpegs):
        group = jpegs.subset(indices)
        rows = np.zeros((len(group), 0), np.float32)
        pooled.append(dali_differences(run, group, rows, run_tf(run, group, rows), device))
    return Stats.of_differences(np.concatenate(pooled))


def run_parity(config: Config, inputs: ParityInputs, seed: int, device: Device) -> Report:
    """Compare DALI on ``device`` with the TensorFlow backend on ``inputs`` (needs both).

    On JPEG inputs the decoders are compared alone, and the whole pipeline once more (with
    the decoders' tolerance) to cover decoding only a crop window.
    """
    samples = inputs.lossless
    results = [
        Result(name, kind, Stats.of_differences(_case(case, samples, seed, device)))
        for name, kind, case in cases(config)
    ]
    if config.output != compared(config).output:
        name = f"output ({config.output.dtype}, {config.output.layout})"
        results.append(Result(name, "output", _output_stats(config, samples, seed, device)))
    if inputs.jpeg is not None:
        stats = _decoder_stats(config, inputs.jpeg, device)
        results.append(Result("JPEG decoders", "decoder", stats))
        stats = Stats.of_differences(_case(config, inputs.jpeg, seed, device))
        results.append(Result("pipeline on JPEGs", "decoder", stats))
    return Report(f"DALI-{device.upper()} vs TF", seed, results)
