"""keras-io's MixUp example on 28x28 arrays: its own ``tf.data`` pipeline against daliaug's
default path (``make_dataset`` with ``backend: auto``) on the same arrays.

    python -m bench.keras_io_mixup [--repeats 5] [--seconds 4] [--out bench/results]

The data: 20,000 procedural 28x28 grey images (Fashion-MNIST's shape; nothing downloaded), as
keras-io holds them: ``float32`` divided by 255, one-hot labels of 10 classes, batch 64.
keras-io's pipeline (``examples/vision/mixup.py``): two ``from_tensor_slices(...).shuffle(6400)
.batch(64)`` datasets zipped, per batch a Beta(0.2, 0.2) draw from two Gamma draws, one ``map``
mixing images and labels, ``prefetch``. daliaug's: the arrays source, ``mixup`` (alpha 0.2),
``label_mode: categorical``, ``output.rescale`` 1/255, fed the same arrays. Each measurement is
a process of its own (one tool, one repeat: warm-up batches, then ``--seconds`` of batches);
the tools alternate, repeat by repeat, and the medians are reported (``keras-io-mixup-*.md``).
"""

from __future__ import annotations

from collections.abc import Iterator
from statistics import median
from typing import Any

import numpy as np

from bench import machine

COUNT, SIDE, CLASSES, BATCH, ALPHA = 20_000, 28, 10, 64, 0.2
TOOLS = ("keras-io tf.data MixUp", "daliaug default (make_dataset, backend: auto)")


def arrays() -> tuple[np.ndarray, np.ndarray]:
    """keras-io's arrays: float32 images / 255 ``(N, 28, 28, 1)`` and one-hot labels."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, COUNT)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    images = (yy * (y[:, None, None] + 1) + xx * 7) % 256  # a class-dependent pattern
    noisy = images + rng.integers(0, 32, images.shape)
    x = (np.clip(noisy, 0, 255).astype(np.uint8)[..., None]).astype("float32") / 255.0
    return x, np.eye(CLASSES, dtype="float32")[y]


def keras_io(x: np.ndarray, y: np.ndarray) -> Any:
    """keras-io's MixUp pipeline, as its example writes it."""
    import tensorflow as tf

    def one() -> Any:
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(BATCH * 100).batch(BATCH)

    def beta(size: Any) -> Any:
        g1 = tf.random.gamma(shape=[size], alpha=ALPHA)
        g2 = tf.random.gamma(shape=[size], alpha=ALPHA)
        return g1 / (g1 + g2)

    def mix_up(a: Any, b: Any) -> Any:
        (images_one, labels_one), (images_two, labels_two) = a, b
        size = tf.shape(images_one)[0]
        lam = beta(size)
        x_l, y_l = tf.reshape(lam, (size, 1, 1, 1)), tf.reshape(lam, (size, 1))
        images = images_one * x_l + images_two * (1 - x_l)
        labels = labels_one * y_l + labels_two * (1 - y_l)
        return images, labels

    zipped = tf.data.Dataset.zip((one(), one()))
    return zipped.map(mix_up, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def daliaug_default(x: np.ndarray, y: np.ndarray) -> Any:
    """daliaug's default path on the same arrays."""
    import daliaug

    config = {
        "source": {"type": "arrays"},
        "image_size": SIDE,
        "channels": 1,
        "batch_size": BATCH,
        "label_mode": "categorical",
        "transforms": [{"type": "mixup", "alpha": ALPHA}],
        "output": {"rescale": 1 / 255},
        "seed": 0,
    }
    return daliaug.make_dataset(config, x=x, y=y)


def batches(dataset: Any) -> Iterator[int]:
    """Batch sizes, epoch after epoch."""
    while True:
        for images, _ in dataset:
            yield int(images.shape[0])


def measure(tool: str, seconds: float, warmup: int = 20) -> dict[str, Any]:
    """One repeat of ``tool``: ``warmup`` batches untimed, then ``seconds`` of batches."""
    x, y = arrays()
    dataset = (keras_io if tool == TOOLS[0] else daliaug_default)(x, y)
    return machine.timed(tool, batches(dataset), seconds, warmup)


def report(samples: list[dict[str, Any]], described: dict[str, Any]) -> str:
    """The medians as a Markdown table, with each repeat's rate."""
    lines = [
        f"# keras-io MixUp on 28x28 arrays ({described['date']})",
        "",
        f"{described['cpu']}, {described['cores_usable']} cores usable, commit "
        f"{described['commit']}; {COUNT:,} float32 images / 255, one-hot labels, batch {BATCH}, "
        "repeats interleaved, each in a process of its own (`python -m bench.keras_io_mixup`).",
        "",
        "| tool | images/s (median) | each repeat |",
        "| --- | ---: | --- |",
    ]
    for tool in TOOLS:
        rates = [s["images_per_s"] for s in samples if s["tool"] == tool]
        shown = ", ".join(f"{r:,.0f}" for r in rates)
        lines.append(f"| {tool} | {median(rates):,.0f} | {shown} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    machine.interleaved_main("bench.keras_io_mixup", __doc__, TOOLS, measure, report, (5, 4.0))


if __name__ == "__main__":
    main()
