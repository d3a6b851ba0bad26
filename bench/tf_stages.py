"""Where the TensorFlow backend's CPU time goes on workload (b): its graph cut after each
stage, one thread.

    python -m bench.tf_stages [--quick]

Each stage is a ``tf.data`` pipeline over the same files and plan inputs (decode windows, warp
matrices, colour matrices from the workload's plan, evaluated with NumPy), built from daliaug's
own functions (:mod:`daliaug.engines.tf.image`, :mod:`daliaug.engines.tf.pipeline`): read,
decode the crop window, resample it, then batch and finish (colour, clip, normalize) with the
XLA-compiled function the backend uses. Comparison rows: the finish without XLA (the same ops,
run one by one), and the plain ``decode_and_crop_jpeg`` without the one-pixel margin daliaug
decodes to match DALI's chroma at the window's edges. One private ``tf.data`` thread and one
intra-op thread, so CPU milliseconds per image add up stage by stage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from bench.stages import _feed, medians
from bench.workloads import WORKLOADS, prepare


def _inputs(quick: bool) -> tuple[Any, dict[str, np.ndarray]]:
    """The workload's config and 2,048 samples' file names and plan inputs."""
    data = prepare("b", quick)
    config = WORKLOADS["b"].daliaug_config(data)
    feed, names = _feed(config, data)
    batches = [feed() for _ in range(16)]
    arrays = {name: np.concatenate([b[i] for b in batches]) for i, name in enumerate(names)}
    arrays["path"] = np.array([bytes(row).rstrip(b"\0").decode() for row in arrays["path"]])
    return config, arrays


def _stages(config: Any) -> dict[str, tuple[Callable, Callable | None]]:
    """Per stage: the per-sample function and the per-batch one (or ``None``)."""
    import tensorflow as tf

    from daliaug.engine_spec import EngineSpec
    from daliaug.engines.feed import WarpLayout
    from daliaug.engines.tf.image import decode, finish, resample
    from daliaug.engines.tf.pipeline import finisher

    spec = EngineSpec.of(config, "cpu", 0, 0, config.batch_size)
    layout = WarpLayout.of(config.plan, ("path",), False)

    def read(d: dict) -> tf.Tensor:
        return tf.io.read_file(d["path"])

    def decoded(d: dict) -> tf.Tensor:
        return decode(read(d), {k: d[k] for k in ("crop_start", "crop_shape")}, 3)

    def plain(d: dict) -> tf.Tensor:
        window = tf.cast(tf.concat([d["crop_start"][::-1], d["crop_shape"][::-1]], 0), tf.int32)
        return tf.image.decode_and_crop_jpeg(read(d), window, 3, dct_method="INTEGER_ACCURATE")

    def resampled(d: dict) -> tf.Tensor:
        return resample(decoded(d), tf.reshape(d["matrix"], [2, 3]), spec)

    def size(image_of: Callable) -> Callable:  # variable-sized images: keep only their size
        return lambda d: tf.reduce_sum(tf.shape(image_of(d)))

    def with_warp(d: dict) -> tuple:
        return resampled(d), d["warp"]

    def eager_finish(images: tf.Tensor, flat: tf.Tensor) -> tf.Tensor:
        return finish(images, layout.unpack(flat, tf.reshape, batched=True), spec)

    return {
        "read file": (read, None),
        "(compare) decode_and_crop_jpeg alone": (size(plain), None),
        "decode crop window (1-pixel margin)": (size(decoded), None),
        "+ resample (resize of the window)": (resampled, None),
        "+ batch, finish (XLA: colour, clip, normalize)": (with_warp, finisher(spec, layout)),
        "(compare) finish without XLA": (with_warp, eager_finish),
    }


def profile(quick: bool, repeats: int, seconds: float) -> list[dict[str, Any]]:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    config, arrays = _inputs(quick)
    columns = {k: arrays[k] for k in ("path", "crop_start", "crop_shape", "matrix")}
    columns["warp"] = _warp_vectors(config, arrays)
    options = tf.data.Options()  # synchronous: nothing runs ahead between measurements
    options.threading.private_threadpool_size = 1
    options.autotune.enabled = False
    options.experimental_optimization.inject_prefetch = False
    measures = {}
    for stage, (per_sample, per_batch) in _stages(config).items():
        ds = tf.data.Dataset.from_tensor_slices(columns).repeat().map(per_sample)
        ds = ds.batch(config.batch_size)
        if per_batch is not None:
            ds = ds.map(lambda images, warp, f=per_batch: f(images, warp))
        iterator = iter(ds.with_options(options))
        for _ in range(2):
            next(iterator)
        measures[stage] = iterator
    steps = {stage: iterator.__next__ for stage, iterator in measures.items()}
    return medians(steps, config.batch_size, repeats, seconds, warmup=0)


def _warp_vectors(config: Any, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Each sample's ``warp`` vector as the TF backend's layout packs it."""
    from daliaug.engines.feed import WarpLayout

    layout = WarpLayout.of(config.plan, ("path",), False)
    parts = [arrays[name].reshape(len(arrays["path"]), -1) for name, *_ in layout.slices]
    return np.concatenate(parts, 1).astype(np.float32)


def profile_all(args: argparse.Namespace, log: TextIO) -> dict[str, Any]:
    """Run the profile in a fresh process (TensorFlow's thread settings are per process)."""
    command = [sys.executable, "-m", "bench.tf_stages", *(["--quick"] if args.quick else [])]
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tf_stages", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats, seconds = (1, 0.05) if args.quick else (3, 2.0)
    print(json.dumps({"threads": 1, "workloads": {"b": profile(args.quick, repeats, seconds)}}))


if __name__ == "__main__":
    main()
