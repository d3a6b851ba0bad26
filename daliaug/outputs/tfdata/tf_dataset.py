"""The TensorFlow backend's dataset: the epoch streams through the TensorFlow graph, with the
element spec and the number of batches ``model.fit`` expects."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import tensorflow as tf

from daliaug.detection import box_names
from daliaug.engines.feed import EpochFeed
from daliaug.engines.tf.pipeline import RESIZES, array_batches, file_batches, record_batches
from daliaug.engines.tf.records import read_records
from daliaug.engines.tf.traced import plain
from daliaug.outputs.options import DEFAULT_OPTIONS, DatasetOptions
from daliaug.outputs.tfdata.faults import named_faults
from daliaug.outputs.tfdata.streams import (
    counted,
    epoch_length,
    feed_stream,
    in_flight,
    nested,
    signature,
)
from daliaug.run import Run


def tf_dataset(
    run: Run, options: DatasetOptions = DEFAULT_OPTIONS, params: np.ndarray | None = None
) -> tf.data.Dataset:
    """``(images, labels or masks[, weights])`` batches of the run computed with TensorFlow
    ops, one epoch per iteration (see :class:`DatasetOptions`). ``params`` (one row of
    ``plan.param_keys`` per sample) replaces the random draws (column sources only)."""
    with tf.device(options.place or "/cpu:0"):
        return _dataset(run, options, params)


def _dataset(run: Run, options: DatasetOptions, params: Any) -> tf.data.Dataset:
    spec, samples = run.spec, run.samples
    weights = options.weights(samples.num_classes)
    epochs = options.epochs(run)
    clock = options.epoch_clock()
    if params is not None:
        samples.check_params("explicit")
    read = read_records(spec, samples, epochs, RESIZES, partial(counted, clock=clock), weights)
    layout, specs = signature(run, weights is not None)
    feed = None
    if read is not None:
        stream, warp = read
        batches = record_batches(spec, samples.num_classes, warp, layout, stream)
    else:
        feed = EpochFeed(
            spec,
            samples,
            resizes=RESIZES,
            params=params,
            epochs=epochs,
            weights=options.per_sample(samples),
            recent=in_flight(run),
        )
        weight = ("weight",) if weights is not None else ()
        encoded = tuple(n for n in ("encoded", "mask_encoded") if n in samples.columns)
        made = ("index", "warp", *encoded, *box_names(samples), *weight)
        arrays = "image" in samples.columns
        stream = feed_stream(feed, made, clock, check_files=True, rows=not arrays)
        if arrays:
            batches = array_batches(spec, samples, feed.layout, layout, stream)
        else:
            batches = file_batches(spec, samples, feed.layout, layout, stream)
    # bounded, as DALI's queue: batches are large
    ds = nested(_shaped(batches, specs), layout).prefetch(spec.prefetch)
    if spec.num_threads is not None:
        threads = tf.data.Options()
        threads.threading.private_threadpool_size = spec.num_threads
        ds = ds.with_options(threads)
    ds = epoch_length(ds, len(epochs), options.resumes)
    ds.batches_per_epoch = len(epochs)
    ds.epoch_clock = clock
    return named_faults(ds, feed)


def _shaped(batches: tf.data.Dataset, specs: tuple[tf.TensorSpec, ...]) -> tf.data.Dataset:
    """``batches`` with the shapes of ``specs`` (checked as each batch passes), where the graph
    does not already give them."""
    given = [spec.shape for spec in tf.nest.flatten(batches.element_spec)]
    if given == [spec.shape for spec in specs]:
        return batches

    def shaped(*batch: tf.Tensor) -> tuple[tf.Tensor, ...]:
        return tuple(tf.ensure_shape(t, s.shape) for t, s in zip(batch, specs, strict=True))

    return batches.map(plain(shaped))
