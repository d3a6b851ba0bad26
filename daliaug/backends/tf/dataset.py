"""The TensorFlow backend's dataset: the epoch streams through the TensorFlow graph, with the
element spec and the number of batches ``model.fit`` expects."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from daliaug.backends.feed import EpochFeed, WarpLayout
from daliaug.backends.streams import element_spec, feed_stream, record_stream
from daliaug.backends.tf.pipeline import RESIZES, array_batches, file_batches, record_batches
from daliaug.config import Config
from daliaug.epoch import Epochs
from daliaug.sources.base import Samples
from daliaug.sources.tfrecord import RecordSamples


def tf_dataset(
    config: Config,
    samples: Samples | RecordSamples,
    *,
    params: np.ndarray | None = None,
    initial_epoch: int = 0,
) -> tf.data.Dataset:
    """``(images, labels or masks)`` batches of ``samples`` computed with TensorFlow ops, one
    epoch per iteration (the n-th is epoch ``initial_epoch + n``). ``params`` (one row of
    ``plan.param_keys`` per sample) replaces the random draws (column sources only)."""
    if isinstance(samples, RecordSamples):
        if params is not None:
            raise ValueError("explicit params need a column source, not TFRecords")
        layout = WarpLayout.of(config.plan, ("record",), RESIZES)
        epochs = Epochs.of(config, len(samples))
        stream = record_stream(config, samples, epochs, layout, initial_epoch)
        batches = record_batches(config, samples.num_classes, layout, stream)
    else:
        feed = EpochFeed(config, samples, resizes=RESIZES, params=params)
        epochs = feed.epochs
        if "image" in samples.columns:
            stream = feed_stream(feed, ("image", "label", "warp"), initial_epoch)
            batches = array_batches(config, samples.num_classes, feed.layout, stream)
        else:
            stream = feed_stream(feed, ("index", "warp"), initial_epoch)
            batches = file_batches(config, samples, feed.layout, stream)
    specs = element_spec(config, samples.num_classes)
    shaped = batches.map(
        lambda images, targets: (
            tf.ensure_shape(images, specs[0].shape),
            tf.ensure_shape(targets, specs[1].shape),
        )
    )
    return shaped.prefetch(tf.data.AUTOTUNE).apply(
        tf.data.experimental.assert_cardinality(len(epochs))
    )
