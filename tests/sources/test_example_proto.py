"""``tf.train.Example``'s features read from protobuf's wire format without TensorFlow
(:mod:`daliaug.sources.example_proto`), against TensorFlow's own serialization and parser, and
bytes written by hand."""

from __future__ import annotations

import contextlib

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from daliaug.sources.example_proto import Malformed, feature_kinds
from daliaug.sources.example_proto import features as read_features

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
    data = example.SerializeToString()
    assert feature_kinds(data) == want
    for key, (kind, values) in read_features(data).items():
        if kind == "bytes_list":
            assert [data[a:b] for a, b in values] == list(parsed[key].bytes_list.value)
        elif kind == "int64_list":
            assert values == list(parsed[key].int64_list.value)


def test_unpacked_integers_and_their_order_are_read() -> None:
    """An ``Int64List`` whose values are not packed (each its own field, as protobuf allows and
    older writers wrote), written by hand: each value, a negative one as ``int64``; a feature
    of a kind no ``Feature`` has is ``empty``."""
    ints = b"\x08\x05" + b"\x08" + b"\xff" * 9 + b"\x01"  # 5, then -1 (ten bytes)
    feature = b"\x1a" + bytes([len(ints)]) + ints  # Feature.int64_list
    entry = b"\x0a\x01y" + b"\x12" + bytes([len(feature)]) + feature
    odd = b"\x0a\x01z\x12\x02\x20\x01"  # field 4, a varint: no kind
    outer = b"\x0a" + bytes([len(entry)]) + entry + b"\x0a" + bytes([len(odd)]) + odd
    example = b"\x0a" + bytes([len(outer)]) + outer
    assert read_features(example) == {"y": ("int64_list", [5, -1]), "z": ("empty", [])}
    parsed = tf.train.Example.FromString(example).features.feature
    assert list(parsed["y"].int64_list.value) == [5, -1]
    wide = b"\x08" + b"\xff" * 9 + b"\x7f"  # ten bytes past 64 bits: protobuf keeps the low 64
    feature = b"\x1a" + bytes([len(wide)]) + wide
    entry = b"\x0a\x01w" + b"\x12" + bytes([len(feature)]) + feature
    outer = b"\x0a" + bytes([len(entry)]) + entry
    example = b"\x0a" + bytes([len(outer)]) + outer
    assert read_features(example) == {"w": ("int64_list", [-1])}
    assert list(tf.train.Example.FromString(example).features.feature["w"].int64_list.value) == [-1]


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
