"""FrameDecoder: arbitrary chunking, size limits, zero-copy views that stay valid."""
import struct

import pytest
from hypothesis import given, settings, strategies as st

from fastkafka.protocol import FrameDecoder, FramingError, frame


def test_frames_across_feeds_and_in_one_feed():
    d = FrameDecoder()
    assert d.feed(b"\x00\x00") == [] and d.wanted() == 2
    assert d.feed(b"\x00\x03ab") == [] and d.wanted() == 1 and d.pending == 6
    got = d.feed(b"c" + frame(b"") + frame(b"xy") + b"\x00")
    assert [bytes(f) for f in got] == [b"abc", b"", b"xy"]
    assert d.pending == 1


def test_returned_views_survive_later_feeds():
    d = FrameDecoder()
    first = d.feed(frame(b"one") + b"\x00\x00\x00\x05tw")
    more = d.feed(b"o..")        # would raise BufferError if the exported buffer were resized
    more += d.feed(frame(b"x" * 10000))
    assert [bytes(f) for f in first + more] == [b"one", b"two..", b"x" * 10000]
    assert all(isinstance(f, memoryview) for f in first + more)


@pytest.mark.parametrize("size", [-1, -(2 ** 31), 1025])
def test_bad_sizes_raise_framing_error(size):
    d = FrameDecoder(max_size=1024)
    with pytest.raises(FramingError):
        d.feed(struct.pack(">i", size) + b"rest")
    assert d.pending == 0        # the bad bytes are dropped; the server closes the connection


def test_max_size_is_inclusive():
    d = FrameDecoder(max_size=4)
    assert [bytes(f) for f in d.feed(frame(b"abcd"))] == [b"abcd"]


@settings(max_examples=150, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=8), data=st.data())
def test_any_chunking_yields_the_same_frames(payloads, data):
    wire = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=10)))
    d, got, prev = FrameDecoder(max_size=300), [], 0
    for cut in cuts + [len(wire)]:
        got += d.feed(wire[prev:cut])
        prev = cut
    assert [bytes(f) for f in got] == payloads and d.pending == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_frames_or_framing_error(blob):
    d = FrameDecoder(max_size=64)
    try:
        frames = d.feed(blob)
    except FramingError:
        return
    assert sum(len(f) + 4 for f in frames) + d.pending == len(blob)
