"""The OpenCV engine's batches as a ``tf.data`` dataset: each epoch's NumPy batches
(:class:`~daliaug.outputs.cv_loader.CvLoader`) read into the graph by the streams' Python calls
(:func:`~daliaug.outputs.tfdata.streams.counted`, one per batch; the engine's batch arrays are
aligned so that TensorFlow takes them without a copy), with the element spec and the number of
batches ``model.fit`` expects.

``tf.data``'s autotuning is off: the dataset has nothing to tune (one call per batch, a fixed
prefetch), and its model thread held each finished iterator for up to seconds when it was
deleted (``model.fit`` deletes one per epoch; measured 1-5 s on this project's 2-core VM, where a
detection epoch of 240 images takes 3 s; ``bench/README.md``)."""

from __future__ import annotations

from collections.abc import Iterator

import tensorflow as tf

from daliaug.outputs.cv_loader import CvLoader
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.tfdata.faults import named_faults
from daliaug.outputs.tfdata.streams import counted, epoch_length, nested, signature
from daliaug.run import Run


def cv_dataset(run: Run, options: DatasetOptions) -> tf.data.Dataset:
    """``(images, targets[, weights])`` batches of the run computed by the OpenCV engine, one
    epoch per iteration as ``options.clock`` numbers them."""
    clock = options.epoch_clock()
    loader = CvLoader.over(run, options=options)
    layout, specs = signature(run, options.weighs)

    def epoch_batches(epoch: int, first: int) -> Iterator:
        loader.epoch, loader.first = epoch, first
        return iter(loader)

    batches = nested(counted(epoch_batches, specs, clock), layout)
    untuned = tf.data.Options()
    untuned.autotune.enabled = False
    ds = batches.prefetch(run.spec.prefetch).with_options(untuned)
    ds = epoch_length(ds, len(loader), options.resumes)
    ds.batches_per_epoch = len(loader)
    ds.epoch_clock = clock
    return named_faults(ds, loader.feed)
