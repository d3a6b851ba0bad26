"""``tf.train.Example``'s feature kinds read from protobuf's wire format without TensorFlow
(:mod:`daliaug.sources.example_proto`), against TensorFlow's own serialization and parser."""

from __future__ import annotations

import contextlib

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from daliaug.sources.example_proto import Malformed, feature_kinds

VALUES = st.one_of(
    st.lists(st.binary(max_size=40), max_size=3).map(
        lambda v: tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
    ),
    st.lists(st.floats(width=32, allow_nan=False), max_size=3).map(
        lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v))
    ),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3).map(
        lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    ),
    st.just(tf.train.Feature()),
)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(features=st.dictionaries(st.text(max_size=12), VALUES, max_size=5))
def test_the_kinds_are_tensorflows(features: dict[str, tf.train.Feature]) -> None:
    """Any ``Example`` TensorFlow writes: the same names, each of the kind TensorFlow reads."""
    example = tf.train.Example(features=tf.train.Features(feature=features))
    parsed = tf.train.Example.FromString(example.SerializeToString()).features.feature
    want = {key: parsed[key].WhichOneof("kind") or "empty" for key in parsed}
    assert feature_kinds(example.SerializeToString()) == want


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.binary(max_size=64))
def test_other_bytes_are_named_malformed_or_read(data: bytes) -> None:
    """Any bytes: read, or :class:`Malformed`, never another error."""
    with contextlib.suppress(Malformed):
        feature_kinds(data)


def test_a_cut_record_is_malformed() -> None:
    feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x" * 30]))
    example = tf.train.Example(features=tf.train.Features(feature={"image": feature}))
    with pytest.raises(Malformed, match="past the message's end"):
        feature_kinds(example.SerializeToString()[:-5])
